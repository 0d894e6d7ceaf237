package boltstore

import (
	"context"
	"strconv"

	bolt "go.etcd.io/bbolt"

	"petstore/store"
)

func (db *DB) InventoryItem(ctx context.Context, petID int64) (store.InventoryItem, error) {
	return inventoryTable.read(ctx, db, petID)
}

func (db *DB) SetStock(ctx context.Context, petID int64, qty int, cond store.Condition) (store.InventoryItem, error) {
	if err := store.CheckStock(qty); err != nil {
		return store.InventoryItem{}, err
	}
	return writeValue(ctx, db, func(tx *bolt.Tx) (store.InventoryItem, error) {
		it, err := inventoryTable.get(tx, petID)
		if err != nil {
			return it, err
		}
		if err := cond.Check("the inventory entry of pet "+strconv.FormatInt(petID, 10), it.Version()); err != nil {
			return it, err
		}
		it.Quantity = qty
		if err := putInventory(tx.Bucket(bktInventory), &it); err != nil {
			return it, err
		}
		return it, db.emit(tx, store.EventInventory, &it)
	})
}

func (db *DB) ListInventory(ctx context.Context, f store.InventoryFilter) ([]store.InventoryItem, int64, error) {
	if f.Status != "" && !f.Status.Valid() {
		return nil, 0, store.InvalidStatus(f.Status)
	}
	if f.Status == "" {
		return inventoryTable.page(ctx, db, nil, nil, f.Page)
	}
	// An entry has its pet's status: the pets' index is the inventory's.
	return inventoryTable.page(ctx, db, bktPetsByStatus, statusPrefix(f.Status), f.Page)
}

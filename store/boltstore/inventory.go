package boltstore

import (
	"context"

	bolt "go.etcd.io/bbolt"

	"petstore/store"
)

// InventoryItem returns the stock of a pet.
func (db *DB) InventoryItem(ctx context.Context, petID int64) (store.InventoryItem, error) {
	var it store.InventoryItem
	err := db.read(ctx, func(tx *bolt.Tx) error {
		var err error
		it, err = getInventory(tx, petID)
		return err
	})
	return it, err
}

// SetStock sets the stock of a pet to qty (0..MaxStock).
func (db *DB) SetStock(ctx context.Context, petID int64, qty int) (store.InventoryItem, error) {
	if qty < 0 || qty > store.MaxStock {
		return store.InventoryItem{}, store.Errorf(store.EINVALID, "quantity must be between 0 and %d, got %d", store.MaxStock, qty)
	}
	var it store.InventoryItem
	err := db.write(ctx, func(tx *bolt.Tx) error {
		var err error
		if it, err = getInventory(tx, petID); err != nil {
			return err
		}
		it.Quantity = qty
		return putInventory(tx.Bucket(bktInventory), &it)
	})
	if err != nil {
		return store.InventoryItem{}, err
	}
	return it, nil
}

// ListInventory returns one page of inventory entries in pet id order,
// filtered by status, and the After of the next page (0 when this is the last
// one).
func (db *DB) ListInventory(ctx context.Context, f store.InventoryFilter) ([]store.InventoryItem, int64, error) {
	if f.Status != "" && !f.Status.Valid() {
		return nil, 0, store.InvalidStatus(f.Status)
	}
	items := make([]store.InventoryItem, 0, f.Size())
	var next int64
	err := db.read(ctx, func(tx *bolt.Tx) error {
		var err error
		if f.Status == "" {
			next, err = walkPage(tx.Bucket(bktInventory), nil, f.Page, func(id int64, v []byte) error {
				it, err := decodeInventory(id, v)
				items = append(items, it)
				return err
			})
			return err
		}
		// An entry exists for exactly each pet and has its pet's status, so
		// the pets' status index is the inventory's too.
		next, err = walkPage(tx.Bucket(bktPetsByStatus), statusPrefix(f.Status), f.Page, func(id int64, _ []byte) error {
			it, err := getInventory(tx, id)
			items = append(items, it)
			return corrupt(err)
		})
		return err
	})
	if err != nil {
		return nil, 0, err
	}
	return items, next, nil
}

func getInventory(tx *bolt.Tx, petID int64) (store.InventoryItem, error) {
	k := idKey(petID)
	v := tx.Bucket(bktInventory).Get(k[:])
	if v == nil {
		return store.InventoryItem{}, petNotFound(petID)
	}
	return decodeInventory(petID, v)
}

// setInventoryStatus keeps a pet's inventory entry in its pet's status.
func setInventoryStatus(tx *bolt.Tx, petID int64, s store.PetStatus) error {
	it, err := getInventory(tx, petID)
	if err != nil {
		return err
	}
	it.Status = s
	return putInventory(tx.Bucket(bktInventory), &it)
}

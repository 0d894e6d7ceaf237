package store

import (
	"context"

	bolt "go.etcd.io/bbolt"
)

// InventoryItem returns the stock of a pet.
func (db *DB) InventoryItem(ctx context.Context, petID int64) (InventoryItem, error) {
	var it InventoryItem
	err := db.read(ctx, func(tx *bolt.Tx) error {
		var err error
		it, err = getInventory(tx, petID)
		return err
	})
	return it, err
}

// SetStock sets the stock of a pet to qty (0..MaxStock).
func (db *DB) SetStock(ctx context.Context, petID int64, qty int) (InventoryItem, error) {
	if qty < 0 || qty > MaxStock {
		return InventoryItem{}, Errorf(EINVALID, "quantity must be between 0 and %d, got %d", MaxStock, qty)
	}
	var it InventoryItem
	err := db.write(ctx, func(tx *bolt.Tx) error {
		var err error
		if it, err = getInventory(tx, petID); err != nil {
			return err
		}
		it.Quantity = qty
		return putInventory(tx.Bucket(bktInventory), &it)
	})
	if err != nil {
		return InventoryItem{}, err
	}
	return it, nil
}

// ListInventory returns one page of inventory entries in pet id order,
// filtered by status, and the After of the next page (0 when this is the last
// one).
func (db *DB) ListInventory(ctx context.Context, f InventoryFilter) ([]InventoryItem, int64, error) {
	if f.Status != "" && !f.Status.Valid() {
		return nil, 0, invalidStatus(f.Status)
	}
	items := make([]InventoryItem, 0, f.limit())
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

func getInventory(tx *bolt.Tx, petID int64) (InventoryItem, error) {
	k := idKey(petID)
	v := tx.Bucket(bktInventory).Get(k[:])
	if v == nil {
		return InventoryItem{}, petNotFound(petID)
	}
	return decodeInventory(petID, v)
}

// setInventoryStatus keeps a pet's inventory entry in its pet's status.
func setInventoryStatus(tx *bolt.Tx, petID int64, s PetStatus) error {
	it, err := getInventory(tx, petID)
	if err != nil {
		return err
	}
	it.Status = s
	return putInventory(tx.Bucket(bktInventory), &it)
}

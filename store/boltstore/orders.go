package boltstore

import (
	"context"
	"slices"

	bolt "go.etcd.io/bbolt"

	"petstore/store"
)

// PlaceOrder takes the stock and stores the order in one transaction, so
// that concurrent orders never oversell.
func (db *DB) PlaceOrder(ctx context.Context, o *store.Order, key *store.IdempotentWrite) error {
	return create(ctx, db, o, *o, key, func(tx *bolt.Tx, placed *store.Order) error {
		pet, err := petTable.get(tx, placed.PetID)
		if err != nil {
			if store.ErrorCode(err) == store.ENOTFOUND {
				return store.OrderedPetMissing(placed.PetID)
			}
			return err
		}
		stock, err := inventoryTable.get(tx, pet.ID)
		if err != nil {
			return corrupt(err)
		}
		if err := store.CheckOrderable(pet.ID, pet.Status, stock.Quantity, placed.Quantity); err != nil {
			return err
		}
		// Checks done; from here on only writes.
		stock.Quantity -= placed.Quantity
		if err := putInventory(tx.Bucket(bktInventory), &stock); err != nil {
			return err
		}
		if err := db.emit(tx, store.EventInventory, &stock); err != nil {
			return err
		}
		if err := orderTable.insert(tx, placed); err != nil {
			return err
		}
		return db.emit(tx, store.EventOrderPlaced, placed)
	}, store.NormalizeOrder)
}

func (db *DB) Order(ctx context.Context, id int64) (store.Order, error) {
	return orderTable.read(ctx, db, id)
}

func (db *DB) UpdateOrder(ctx context.Context, id int64, u store.OrderUpdate, cond store.Condition) (store.Order, error) {
	return writeValue(ctx, db, func(tx *bolt.Tx) (store.Order, error) {
		old, version, err := orderTable.getAt(tx, cond, id)
		if err != nil {
			return old, err
		}
		o := old
		o.Version = version + 1
		if u.ShipDate != nil {
			d := *u.ShipDate
			o.ShipDate = &d
		}
		if u.Complete != nil {
			o.Complete = *u.Complete
		}
		if err := orderTable.replace(tx, &old, &o); err != nil {
			return o, err
		}
		return o, db.emit(tx, store.OrderUpdateEvent(&old, &o), &o)
	})
}

// CancelOrder deletes an order that is not complete and gives its quantity
// back to its pet's stock, if the pet still exists, up to MaxStock.
func (db *DB) CancelOrder(ctx context.Context, id int64, cond store.Condition) error {
	return db.write(ctx, func(tx *bolt.Tx) error {
		o, _, err := orderTable.getAt(tx, cond, id)
		if err != nil {
			return err
		}
		if o.Complete {
			return store.OrderComplete(id)
		}
		if stock, err := inventoryTable.get(tx, o.PetID); err == nil {
			stock.Quantity = min(stock.Quantity+o.Quantity, store.MaxStock)
			if err := putInventory(tx.Bucket(bktInventory), &stock); err != nil {
				return err
			}
			if err := db.emit(tx, store.EventInventory, &stock); err != nil {
				return err
			}
		} else if store.ErrorCode(err) != store.ENOTFOUND {
			return err
		}
		if err := orderTable.remove(tx, id, &o); err != nil {
			return err
		}
		return db.emit(tx, store.EventOrderCancelled, store.DeletedData(id))
	})
}

func (db *DB) ListOrders(ctx context.Context, f store.OrderFilter) ([]store.Order, int64, error) {
	var index, prefix []byte
	switch {
	case f.PetID != 0 && f.Complete != nil:
		index, prefix = bktOrdersByPetComplete, slices.Concat(itob(f.PetID), completeByte(*f.Complete))
	case f.PetID != 0:
		index, prefix = bktOrdersByPet, itob(f.PetID)
	case f.Complete != nil:
		index, prefix = bktOrdersByComplete, completeByte(*f.Complete)
	}
	return orderTable.page(ctx, db, index, prefix, f.Page)
}

// orderIndexEntries lists o's index keys, as petIndexEntries does.
func orderIndexEntries(o *store.Order) [3]indexEntry {
	var done byte
	if o.Complete {
		done = 1
	}
	k := make([]byte, 0, 42)
	k = appendID(appendID(k, o.PetID), o.ID)
	byPet := len(k)
	k = appendID(append(k, done), o.ID)
	byComplete := len(k)
	k = appendID(append(appendID(k, o.PetID), done), o.ID)
	return [3]indexEntry{
		{bktOrdersByPet, k[:byPet]},
		{bktOrdersByComplete, k[byPet:byComplete]},
		{bktOrdersByPetComplete, k[byComplete:]},
	}
}

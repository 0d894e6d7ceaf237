package boltstore

import (
	"context"

	bolt "go.etcd.io/bbolt"

	"petstore/store"
)

// PlaceOrder takes o.Quantity units (default 1) of pet o.PetID from its stock
// and stores the order, in one transaction, so that concurrent orders never
// oversell. It sets o.ID and o.Quantity.
func (db *DB) PlaceOrder(ctx context.Context, o *store.Order) error {
	in, err := store.NormalizeOrder(*o)
	if err != nil {
		return err
	}
	var placed store.Order
	err = db.write(ctx, func(tx *bolt.Tx) error {
		placed = in
		pet, err := getPet(tx, in.PetID)
		if err != nil {
			if store.ErrorCode(err) == store.ENOTFOUND {
				return store.Errorf(store.EUNPROCESSABLE, "pet %d does not exist", in.PetID)
			}
			return err
		}
		if pet.Status == store.StatusSold {
			return store.Errorf(store.ECONFLICT, "pet %d is sold", pet.ID)
		}
		stock, err := getInventory(tx, pet.ID)
		if err != nil {
			return corrupt(err)
		}
		if stock.Quantity < in.Quantity {
			return store.Errorf(store.EINSUFFICIENTSTOCK, "pet %d has %d in stock, the order asks for %d", pet.ID, stock.Quantity, in.Quantity)
		}
		// Checks done; from here on only writes.
		stock.Quantity -= in.Quantity
		if err := putInventory(tx.Bucket(bktInventory), &stock); err != nil {
			return err
		}
		b := tx.Bucket(bktOrders)
		if placed.ID, err = nextID(b); err != nil {
			return err
		}
		if err := putOrder(b, &placed); err != nil {
			return err
		}
		return indexOrder(tx, &placed)
	})
	if err != nil {
		return err
	}
	*o = placed
	return nil
}

// Order returns the order with the given id.
func (db *DB) Order(ctx context.Context, id int64) (store.Order, error) {
	var o store.Order
	err := db.read(ctx, func(tx *bolt.Tx) error {
		var err error
		o, err = getOrder(tx, id)
		return err
	})
	return o, err
}

// UpdateOrder changes the ship date and completion of an order; nil fields of
// u are left as they are.
func (db *DB) UpdateOrder(ctx context.Context, id int64, u store.OrderUpdate) (store.Order, error) {
	var o store.Order
	err := db.write(ctx, func(tx *bolt.Tx) error {
		old, err := getOrder(tx, id)
		if err != nil {
			return err
		}
		o = old
		if u.ShipDate != nil {
			d := *u.ShipDate
			o.ShipDate = &d
		}
		if u.Complete != nil {
			o.Complete = *u.Complete
		}
		if err := unindexOrder(tx, &old); err != nil {
			return err
		}
		if err := putOrder(tx.Bucket(bktOrders), &o); err != nil {
			return err
		}
		return indexOrder(tx, &o)
	})
	if err != nil {
		return store.Order{}, err
	}
	return o, nil
}

// CancelOrder deletes an order that is not complete and gives its quantity
// back to its pet's stock, if the pet still exists. The stock stays within
// MaxStock: a stock set high since the order was placed is not pushed past it.
func (db *DB) CancelOrder(ctx context.Context, id int64) error {
	return db.write(ctx, func(tx *bolt.Tx) error {
		o, err := getOrder(tx, id)
		if err != nil {
			return err
		}
		if o.Complete {
			return store.Errorf(store.ECONFLICT, "order %d is complete and cannot be cancelled", id)
		}
		if stock, err := getInventory(tx, o.PetID); err == nil {
			stock.Quantity = min(stock.Quantity+o.Quantity, store.MaxStock)
			if err := putInventory(tx.Bucket(bktInventory), &stock); err != nil {
				return err
			}
		} else if store.ErrorCode(err) != store.ENOTFOUND {
			return err
		}
		if err := unindexOrder(tx, &o); err != nil {
			return err
		}
		return tx.Bucket(bktOrders).Delete(itob(id))
	})
}

// ListOrders returns one page of orders in id order, filtered by pet and
// completion, and the After of the next page (0 when this is the last one).
func (db *DB) ListOrders(ctx context.Context, f store.OrderFilter) ([]store.Order, int64, error) {
	orders := make([]store.Order, 0, f.Size())
	var next int64
	err := db.read(ctx, func(tx *bolt.Tx) error {
		var idx *bolt.Bucket
		var prefix []byte
		switch {
		case f.PetID != 0 && f.Complete != nil:
			idx, prefix = tx.Bucket(bktOrdersByPetComplete), cat(itob(f.PetID), completeByte(*f.Complete))
		case f.PetID != 0:
			idx, prefix = tx.Bucket(bktOrdersByPet), itob(f.PetID)
		case f.Complete != nil:
			idx, prefix = tx.Bucket(bktOrdersByComplete), completeByte(*f.Complete)
		}
		var err error
		if idx == nil {
			next, err = walkPage(tx.Bucket(bktOrders), nil, f.Page, func(id int64, v []byte) error {
				var o store.Order
				err := decodeJSON(id, v, &o)
				orders = append(orders, o)
				return err
			})
			return err
		}
		next, err = walkPage(idx, prefix, f.Page, func(id int64, _ []byte) error {
			o, err := getOrder(tx, id)
			orders = append(orders, o)
			return corrupt(err)
		})
		return err
	})
	if err != nil {
		return nil, 0, err
	}
	return orders, next, nil
}

func getOrder(tx *bolt.Tx, id int64) (store.Order, error) {
	var o store.Order
	ok, err := getJSON(tx.Bucket(bktOrders), id, &o)
	if err == nil && !ok {
		err = store.Errorf(store.ENOTFOUND, "order %d not found", id)
	}
	return o, err
}

// orderIndexEntries lists the index keys that o has (see keys.go), built in
// one allocation: bbolt's Put and Delete let their key escape.
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

func indexOrder(tx *bolt.Tx, o *store.Order) error {
	return putIndexEntries(tx, orderIndexEntries(o))
}

func unindexOrder(tx *bolt.Tx, o *store.Order) error {
	return deleteIndexEntries(tx, orderIndexEntries(o))
}

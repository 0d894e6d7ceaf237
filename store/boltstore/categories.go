package boltstore

import (
	"context"

	bolt "go.etcd.io/bbolt"

	"petstore/store"
)

// CreateCategory stores a new category and sets c.ID.
func (db *DB) CreateCategory(ctx context.Context, c *store.Category) error {
	var created store.Category
	err := db.write(ctx, func(tx *bolt.Tx) error {
		created = *c
		b := tx.Bucket(bktCategories)
		id, err := nextID(b)
		if err != nil {
			return err
		}
		created.ID = id
		return putJSON(b, id, &created)
	})
	if err != nil {
		return err
	}
	*c = created
	return nil
}

// Category returns the category with the given id.
func (db *DB) Category(ctx context.Context, id int64) (store.Category, error) {
	var c store.Category
	err := db.read(ctx, func(tx *bolt.Tx) error {
		var err error
		c, err = getCategory(tx, id)
		return err
	})
	return c, err
}

// ReplaceCategory replaces every field of the category c.ID with those of c.
func (db *DB) ReplaceCategory(ctx context.Context, c *store.Category) error {
	in := *c
	return db.write(ctx, func(tx *bolt.Tx) error {
		if _, err := getCategory(tx, in.ID); err != nil {
			return err
		}
		return putJSON(tx.Bucket(bktCategories), in.ID, &in)
	})
}

// DeleteCategory deletes a category that no pet belongs to.
func (db *DB) DeleteCategory(ctx context.Context, id int64) error {
	return db.write(ctx, func(tx *bolt.Tx) error {
		if _, err := getCategory(tx, id); err != nil {
			return err
		}
		if n := countPrefix(tx.Bucket(bktPetsByCategory), itob(id)); n > 0 {
			return store.Errorf(store.ECONFLICT, "category %d still has %d %s", id, n, plural(n, "pet", "pets"))
		}
		return tx.Bucket(bktCategories).Delete(itob(id))
	})
}

// ListCategories returns one page of categories in id order and the After of
// the next page (0 when this is the last one).
func (db *DB) ListCategories(ctx context.Context, p store.Page) ([]store.Category, int64, error) {
	cats := make([]store.Category, 0, p.Size())
	var next int64
	err := db.read(ctx, func(tx *bolt.Tx) error {
		var err error
		next, err = walkPage(tx.Bucket(bktCategories), nil, p, func(id int64, v []byte) error {
			var c store.Category
			err := decodeJSON(id, v, &c)
			cats = append(cats, c)
			return err
		})
		return err
	})
	if err != nil {
		return nil, 0, err
	}
	return cats, next, nil
}

func getCategory(tx *bolt.Tx, id int64) (store.Category, error) {
	var c store.Category
	ok, err := getJSON(tx.Bucket(bktCategories), id, &c)
	if err == nil && !ok {
		err = store.Errorf(store.ENOTFOUND, "category %d not found", id)
	}
	return c, err
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

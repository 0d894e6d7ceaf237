package boltstore

import (
	"context"

	bolt "go.etcd.io/bbolt"

	"petstore/store"
)

func (db *DB) CreateCategory(ctx context.Context, c *store.Category, key *store.IdempotentWrite) error {
	return create(ctx, db, c, *c, key, func(tx *bolt.Tx, created *store.Category) error {
		if err := categoryTable.insert(tx, created); err != nil {
			return err
		}
		return db.emit(tx, store.EventCategoryCreated, created)
	})
}

func (db *DB) Category(ctx context.Context, id int64) (store.Category, error) {
	return categoryTable.read(ctx, db, id)
}

func (db *DB) ReplaceCategory(ctx context.Context, c *store.Category, cond store.Condition) error {
	in := *c
	err := db.write(ctx, func(tx *bolt.Tx) error {
		_, version, err := categoryTable.getAt(tx, cond, in.ID)
		if err != nil {
			return err
		}
		in.Version = version + 1
		if err := categoryTable.putWhole(tx, &in); err != nil {
			return err
		}
		return db.emit(tx, store.EventCategoryUpdated, &in)
	})
	if err == nil {
		*c = in
	}
	return err
}

func (db *DB) DeleteCategory(ctx context.Context, id int64, cond store.Condition) error {
	return db.write(ctx, func(tx *bolt.Tx) error {
		c, _, err := categoryTable.getAt(tx, cond, id)
		if err != nil {
			return err
		}
		if n := countPrefix(tx.Bucket(bktPetsByCategory), itob(id)); n > 0 {
			return store.CategoryInUse(id, n)
		}
		if err := categoryTable.remove(tx, id, &c); err != nil {
			return err
		}
		return db.emit(tx, store.EventCategoryDeleted, store.DeletedData(id))
	})
}

func (db *DB) ListCategories(ctx context.Context, p store.Page) ([]store.Category, int64, error) {
	return categoryTable.page(ctx, db, nil, nil, p)
}

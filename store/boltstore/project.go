package boltstore

import (
	"context"
	"encoding/json"

	bolt "go.etcd.io/bbolt"

	"petstore/store"
)

var metaProject = []byte("project")

func (db *DB) Project(ctx context.Context) (store.Project, error) {
	return readValue(ctx, db, getProject)
}

func (db *DB) UpdateProject(ctx context.Context, fn func(*store.Project) error) (store.Project, error) {
	return writeValue(ctx, db, func(tx *bolt.Tx) (store.Project, error) {
		p, err := getProject(tx)
		if err != nil {
			return p, err
		}
		if err := fn(&p); err != nil {
			return p, refusal{err}
		}
		if err := store.ValidateProject(&p); err != nil {
			return p, err
		}
		return p, putMetaJSON(tx, metaProject, &p)
	})
}

func (db *DB) RecordDeploy(ctx context.Context, d store.Deploy) (store.Deploy, error) {
	if d.At.IsZero() {
		d.At = db.timestamp()
	}
	return writeValue(ctx, db, func(tx *bolt.Tx) (store.Deploy, error) {
		p, err := getProject(tx)
		if err != nil {
			return d, err
		}
		rec := d
		// The meta bucket's sequence numbers deploys and nothing else.
		if rec.ID, err = nextID(tx.Bucket(bktMeta)); err != nil {
			return rec, err
		}
		p.AddDeploy(rec)
		return rec, putMetaJSON(tx, metaProject, &p)
	})
}

func getProject(tx *bolt.Tx) (store.Project, error) {
	return store.UnmarshalProject(tx.Bucket(bktMeta).Get(metaProject))
}

func putMetaJSON(tx *bolt.Tx, key []byte, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return tx.Bucket(bktMeta).Put(key, data)
}

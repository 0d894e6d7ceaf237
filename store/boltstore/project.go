package boltstore

import (
	"context"
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"petstore/store"
)

var metaProject = []byte("project")

// Project returns the project's settings.
func (db *DB) Project(ctx context.Context) (store.Project, error) {
	var p store.Project
	err := db.read(ctx, func(tx *bolt.Tx) error {
		var err error
		p, err = getProject(tx)
		return err
	})
	return p, err
}

// UpdateProject applies fn to the project's settings and saves them, in one
// transaction. fn may run more than once, each time on a fresh copy; an error
// from it is returned as it is, and nothing is saved.
func (db *DB) UpdateProject(ctx context.Context, fn func(*store.Project) error) (store.Project, error) {
	return writeRefusable(ctx, db, func(tx *bolt.Tx) (store.Project, error, error) {
		p, err := getProject(tx)
		if err != nil {
			return p, nil, err
		}
		if refused := fn(&p); refused != nil {
			return p, refused, nil
		}
		if err := store.ValidateProject(&p); err != nil {
			return p, nil, err
		}
		return p, nil, putProject(tx, &p)
	})
}

// RecordDeploy adds a deploy to the project with a new id (and the current
// time when d.At is zero), keeping the newest MaxDeploys.
func (db *DB) RecordDeploy(ctx context.Context, d store.Deploy) (store.Deploy, error) {
	if d.At.IsZero() {
		d.At = db.timestamp()
	}
	var rec store.Deploy
	err := db.write(ctx, func(tx *bolt.Tx) error {
		p, err := getProject(tx)
		if err != nil {
			return err
		}
		rec = d
		// The meta bucket's sequence numbers deploys and nothing else.
		if rec.ID, err = nextID(tx.Bucket(bktMeta)); err != nil {
			return err
		}
		p.AddDeploy(rec)
		return putProject(tx, &p)
	})
	if err != nil {
		return store.Deploy{}, err
	}
	return rec, nil
}

func getProject(tx *bolt.Tx) (store.Project, error) {
	data := tx.Bucket(bktMeta).Get(metaProject)
	if data == nil {
		return store.DefaultProject(), nil
	}
	var p store.Project
	if err := json.Unmarshal(data, &p); err != nil {
		return store.Project{}, fmt.Errorf("decode project: %w", err)
	}
	if p.Deploys == nil {
		p.Deploys = []store.Deploy{}
	}
	return p, nil
}

func putProject(tx *bolt.Tx, p *store.Project) error {
	data, err := json.Marshal(p)
	if err != nil {
		return err
	}
	return tx.Bucket(bktMeta).Put(metaProject, data)
}

package boltstore

import (
	"context"

	bolt "go.etcd.io/bbolt"

	"petstore/store"
)

// Domains and settings (in the meta bucket) are few: lists load them whole.
var metaSettings = []byte("settings")

func (db *DB) AddDomain(ctx context.Context, d *store.Domain, key *store.IdempotentWrite) error {
	if d.AddedAt.IsZero() {
		d.AddedAt = db.timestamp()
	}
	return db.keyedWrite(ctx, key, func(tx *bolt.Tx) error {
		b := tx.Bucket(bktDomains)
		if b.Get([]byte(d.Name)) != nil {
			return store.DomainAttached(d.Name)
		}
		if err := putDomain(b, d); err != nil {
			return err
		}
		return db.emitDomain(tx, nil, d)
	}, func() (any, any) { return d, nil })
}

func (db *DB) Domain(ctx context.Context, name string) (store.Domain, error) {
	return readValue(ctx, db, func(tx *bolt.Tx) (store.Domain, error) { return getDomain(tx.Bucket(bktDomains), name) })
}

func (db *DB) Domains(ctx context.Context) ([]store.Domain, error) {
	return readValue(ctx, db, allDomains)
}

func (db *DB) DomainsPage(ctx context.Context, limit int, after *store.DomainCursor) ([]store.Domain, *store.DomainCursor, error) {
	return store.DomainsPageOf(ctx, db.Domains, limit, after)
}

func (db *DB) UpdateDomain(ctx context.Context, name string, fn func(*store.Domain) error) (store.Domain, error) {
	return writeValue(ctx, db, func(tx *bolt.Tx) (store.Domain, error) {
		b := tx.Bucket(bktDomains)
		d, err := getDomain(b, name)
		if err != nil {
			return d, err
		}
		old, err := getDomain(b, name) // a copy that fn cannot reach
		if err != nil {
			return d, err
		}
		if err := fn(&d); err != nil {
			return d, refusal{err}
		}
		d.Name = name
		if err := putDomain(b, &d); err != nil {
			return d, err
		}
		return d, db.emitDomain(tx, &old, &d)
	})
}

func (db *DB) RemoveDomain(ctx context.Context, name string) error {
	return db.write(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bktDomains)
		if b.Get([]byte(name)) == nil {
			return store.DomainNotAttached(name)
		}
		if err := b.Delete([]byte(name)); err != nil {
			return err
		}
		s, err := getSettings(tx)
		if err != nil {
			return err
		}
		if err := db.emit(tx, store.EventDomainRemoved, store.DomainRemovedData(name)); err != nil {
			return err
		}
		s.Forget(name)
		return putMetaJSON(tx, metaSettings, &s)
	})
}

func (db *DB) Settings(ctx context.Context) (store.Settings, error) {
	return readValue(ctx, db, getSettings)
}

// UpdateSettings applies fn to the settings and saves them in one
// transaction, so that fn's checks against the attached domains hold.
func (db *DB) UpdateSettings(ctx context.Context, fn func(s *store.Settings, attached map[string]store.Domain) error) (store.Settings, error) {
	return writeValue(ctx, db, func(tx *bolt.Tx) (store.Settings, error) {
		s, err := getSettings(tx)
		if err != nil {
			return s, err
		}
		all, err := allDomains(tx)
		if err != nil {
			return s, err
		}
		if err := fn(&s, store.ByName(all)); err != nil {
			return s, refusal{err}
		}
		return s, putMetaJSON(tx, metaSettings, &s)
	})
}

func getDomain(b *bolt.Bucket, name string) (store.Domain, error) {
	data := b.Get([]byte(name))
	if data == nil {
		return store.Domain{}, store.DomainNotAttached(name)
	}
	return store.UnmarshalDomain(name, data)
}

func allDomains(tx *bolt.Tx) ([]store.Domain, error) {
	out := []store.Domain{}
	err := tx.Bucket(bktDomains).ForEach(func(k, v []byte) error {
		d, err := store.UnmarshalDomain(string(k), v)
		out = append(out, d)
		return err
	})
	store.SortDomains(out)
	return out, err
}

func putDomain(b *bolt.Bucket, d *store.Domain) error {
	data, err := store.MarshalDomain(d)
	if err != nil {
		return err
	}
	return b.Put([]byte(d.Name), data)
}

func getSettings(tx *bolt.Tx) (store.Settings, error) {
	return store.UnmarshalSettings(tx.Bucket(bktMeta).Get(metaSettings))
}

package postgres

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"

	"github.com/jackc/pgx/v5"

	"petstore/store"
)

func (db *DB) EnsureAdminToken(ctx context.Context, given string) (string, error) {
	token, hash := store.AdminTokenOrNew(given)
	var created bool
	err := db.changeTx(ctx, credentialsChange, func(tx pgx.Tx) error {
		sql := `INSERT INTO meta (key, value) VALUES ('admin_token_sha256', $1) ON CONFLICT (key) DO NOTHING`
		if given != "" {
			sql = `INSERT INTO meta (key, value) VALUES ('admin_token_sha256', $1) ON CONFLICT (key) DO UPDATE SET value = excluded.value`
		}
		tag, err := tx.Exec(ctx, sql, hash[:])
		created = err == nil && tag.RowsAffected() == 1
		return err
	})
	if err == nil && given != "" && !db.CheckAdminToken(given) {
		// Stored, but the catch-up after the write failed: the token is
		// refused until one succeeds, so start-up must not count on it yet.
		if err = db.catchUp(ctx); err != nil {
			err = store.ErrorWithCause(err, store.EUNAVAILABLE, "the admin token is stored, but reading it back failed")
		}
	}
	if err != nil || given != "" || !created {
		return "", err
	}
	return token, nil
}

func (db *DB) CheckAdminToken(token string) bool {
	hash := sha256.Sum256([]byte(token))
	db.cache.mu.RLock()
	want := db.cache.adminHash
	db.cache.mu.RUnlock()
	return want != nil && token != "" && subtle.ConstantTimeCompare(want, hash[:]) == 1
}

func (db *DB) CreateAPIKey(ctx context.Context, name string, key *store.IdempotentWrite) (store.APIKey, string, error) {
	k, secret := store.NewAPIKey(name, db.timestamp())
	err := db.changeTx(ctx, credentialsChange, func(tx pgx.Tx) error {
		return db.keyed(ctx, tx, key, func() error {
			if err := tx.QueryRow(ctx, `INSERT INTO api_keys (name, prefix, sha256, created_at) VALUES ($1, $2, $3, $4) RETURNING id`,
				k.Name, k.Prefix, k.SHA256, k.CreatedAt).Scan(&k.ID); err != nil {
				return err
			}
			return emit(tx, store.EventAPIKeyCreated, &k.APIKey)
		}, func() (any, any) { return &k.APIKey, secret })
	})
	if err != nil {
		return store.APIKey{}, "", err
	}
	db.keys.forget()
	db.marks.Acked(store.ResAPIKeys, k.ID)
	return k.APIKey, secret, nil
}

func (db *DB) APIKeys(ctx context.Context, p store.Page) ([]store.APIKey, int64, error) {
	return pageOf(ctx, db.pool, p, func(k *store.APIKey) int64 { return k.ID }, func(r pgx.Row) (store.APIKey, error) {
		var k store.APIKey
		err := r.Scan(&k.ID, &k.Name, &k.Prefix, &k.CreatedAt)
		k.CreatedAt = k.CreatedAt.UTC()
		return k, err
	}, `SELECT id, name, prefix, created_at FROM api_keys WHERE id > $1 ORDER BY id LIMIT $2`)
}

func (db *DB) RevokeAPIKey(ctx context.Context, id int64) error {
	r := store.Revocation{KeyID: id, RevokedAt: db.now().UTC()}
	err := db.changeTx(ctx, credentialsChange, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `DELETE FROM api_keys WHERE id = $1 RETURNING sha256`, id).Scan(&r.SHA256); err != nil {
			return notFound(err, store.NotFound("api key", id))
		}
		// Where the other instances read it.
		if _, err := tx.Exec(ctx, `INSERT INTO revocations (sha256, key_id, revoked_at) VALUES ($1, $2, $3)
			ON CONFLICT (sha256) DO UPDATE SET key_id = $2, revoked_at = $3, pardoned_at = NULL`, r.SHA256, id, r.RevokedAt); err != nil {
			return err
		}
		return emit(tx, store.EventAPIKeyRevoked, store.DeletedData(id))
	})
	if err != nil {
		return err
	}
	db.marks.Revoke(r)
	if err := db.marks.Save(db.pool.name); err != nil {
		db.log.Warn("the revocation is made, but this instance cannot keep it outside the database: a restore of an older dump would need the other instances to revoke the key again", "key", id, "err", err)
	}
	return nil
}

// meta reads a singleton of the meta table with unmarshal (nil for one
// never saved). lock takes its row, creating it first, so that
// read-modify-write transactions on it queue.
func meta[T any](ctx context.Context, q querier, key string, lock bool, unmarshal func([]byte) (T, error)) (v T, err error) {
	sql := `SELECT value FROM meta WHERE key = $1`
	if lock {
		if _, err := q.Exec(ctx, `INSERT INTO meta (key, value) VALUES ($1, 'null') ON CONFLICT (key) DO NOTHING`, key); err != nil {
			return v, err
		}
		sql += ` FOR UPDATE`
	}
	var data []byte
	if err := q.QueryRow(ctx, sql, key).Scan(&data); err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return v, err
	}
	return unmarshal(data)
}

func updateMeta[T any](ctx context.Context, db *DB, key string, unmarshal func([]byte) (T, error), change func(pgx.Tx, *T) error) (T, error) {
	var v T
	err := db.changeTx(ctx, otherChange, func(tx pgx.Tx) error {
		var err error
		if v, err = meta(ctx, tx, key, true, unmarshal); err != nil {
			return err
		}
		if err := change(tx, &v); err != nil {
			return err
		}
		return putMetaJSON(ctx, tx, key, &v)
	})
	if err != nil {
		return *new(T), err
	}
	return v, nil
}

func putMetaJSON(ctx context.Context, tx pgx.Tx, key string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value`, key, data)
	return err
}

func (db *DB) Project(ctx context.Context) (store.Project, error) {
	return meta(ctx, db.pool, "project", false, store.UnmarshalProject)
}

func (db *DB) UpdateProject(ctx context.Context, fn func(*store.Project) error) (store.Project, error) {
	return updateMeta(ctx, db, "project", store.UnmarshalProject, func(_ pgx.Tx, p *store.Project) error {
		if err := fn(p); err != nil {
			return err
		}
		return store.ValidateProject(p)
	})
}

func (db *DB) RecordDeploy(ctx context.Context, d store.Deploy) (store.Deploy, error) {
	if d.At.IsZero() {
		d.At = db.timestamp()
	}
	_, err := updateMeta(ctx, db, "project", store.UnmarshalProject, func(tx pgx.Tx, p *store.Project) error {
		if err := tx.QueryRow(ctx, `SELECT nextval('deploy_ids')`).Scan(&d.ID); err != nil {
			return err
		}
		p.AddDeploy(d)
		return nil
	})
	if err != nil {
		return store.Deploy{}, err
	}
	return d, nil
}

func (db *DB) AddDomain(ctx context.Context, d *store.Domain, key *store.IdempotentWrite) error {
	if d.AddedAt.IsZero() {
		d.AddedAt = db.timestamp()
	}
	data, err := store.MarshalDomain(d)
	if err != nil {
		return err
	}
	return db.changeTx(ctx, otherChange, func(tx pgx.Tx) error {
		return db.keyed(ctx, tx, key, func() error {
			tag, err := tx.Exec(ctx, `INSERT INTO domains (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING`, d.Name, data)
			if err == nil && tag.RowsAffected() == 0 {
				err = store.DomainAttached(d.Name)
			}
			if err != nil {
				return err
			}
			return emitDomain(tx, nil, d)
		}, func() (any, any) { return d, nil })
	})
}

func (db *DB) Domain(ctx context.Context, name string) (store.Domain, error) {
	var data []byte
	if err := db.pool.QueryRow(ctx, `SELECT value FROM domains WHERE name = $1`, name).Scan(&data); err != nil {
		return store.Domain{}, notFound(err, store.DomainNotAttached(name))
	}
	return store.UnmarshalDomain(name, data)
}

func (db *DB) Domains(ctx context.Context) ([]store.Domain, error) {
	return domains(ctx, db.pool, false)
}

func domains(ctx context.Context, q querier, lock bool) ([]store.Domain, error) {
	sql := `SELECT name, value FROM domains`
	if lock {
		sql += ` FOR SHARE`
	}
	out, err := queryRows(ctx, q, func(r pgx.CollectableRow) (store.Domain, error) {
		var name string
		var data []byte
		if err := r.Scan(&name, &data); err != nil {
			return store.Domain{}, err
		}
		return store.UnmarshalDomain(name, data)
	}, sql)
	store.SortDomains(out)
	return out, err
}

func (db *DB) DomainsPage(ctx context.Context, limit int, after *store.DomainCursor) ([]store.Domain, *store.DomainCursor, error) {
	return store.DomainsPageOf(ctx, db.Domains, limit, after)
}

func (db *DB) UpdateDomain(ctx context.Context, name string, fn func(*store.Domain) error) (store.Domain, error) {
	var d store.Domain
	err := db.changeTx(ctx, otherChange, func(tx pgx.Tx) error {
		var data []byte
		if err := tx.QueryRow(ctx, `SELECT value FROM domains WHERE name = $1 FOR UPDATE`, name).Scan(&data); err != nil {
			return notFound(err, store.DomainNotAttached(name))
		}
		var err error
		if d, err = store.UnmarshalDomain(name, data); err != nil {
			return err
		}
		old, err := store.UnmarshalDomain(name, data)
		if err != nil {
			return err
		}
		if err := fn(&d); err != nil {
			return err
		}
		d.Name = name
		if data, err = store.MarshalDomain(&d); err != nil {
			return err
		}
		if _, err = tx.Exec(ctx, `UPDATE domains SET value = $2 WHERE name = $1`, name, data); err != nil {
			return err
		}
		return emitDomain(tx, &old, &d)
	})
	if err != nil {
		return store.Domain{}, err
	}
	return d, nil
}

func (db *DB) RemoveDomain(ctx context.Context, name string) error {
	_, err := updateMeta(ctx, db, "settings", store.UnmarshalSettings, func(tx pgx.Tx, s *store.Settings) error {
		tag, err := tx.Exec(ctx, `DELETE FROM domains WHERE name = $1`, name)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return store.DomainNotAttached(name)
		}
		if err := emit(tx, store.EventDomainRemoved, store.DomainRemovedData(name)); err != nil {
			return err
		}
		s.Forget(name)
		return nil
	})
	return err
}

func (db *DB) Settings(ctx context.Context) (store.Settings, error) {
	return meta(ctx, db.pool, "settings", false, store.UnmarshalSettings)
}

func (db *DB) UpdateSettings(ctx context.Context, fn func(s *store.Settings, attached map[string]store.Domain) error) (store.Settings, error) {
	return updateMeta(ctx, db, "settings", store.UnmarshalSettings, func(tx pgx.Tx, s *store.Settings) error {
		list, err := domains(ctx, tx, true)
		if err != nil {
			return err
		}
		return fn(s, store.ByName(list))
	})
}

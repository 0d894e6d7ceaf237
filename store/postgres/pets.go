package postgres

import (
	"context"
	"strconv"

	"github.com/jackc/pgx/v5"

	"petstore/store"
)

// Row locks keep the rules: a pet's row is locked before its inventory
// entry, and a category's before its pets are counted, in every
// transaction, so that concurrent writers queue instead of deadlocking.

func scanPet(r pgx.Row) (store.Pet, error) {
	var p store.Pet
	err := r.Scan(&p.ID, &p.Name, &p.CategoryID, &p.Status)
	return p, err
}

func petID(p *store.Pet) int64 { return p.ID }

// lockCategory locks a category's row, so that it cannot be deleted while a
// pet is added to it, or says that it does not exist.
func lockCategory(ctx context.Context, tx pgx.Tx, id int64) error {
	err := tx.QueryRow(ctx, `SELECT id FROM categories WHERE id = $1 FOR SHARE`, id).Scan(&id)
	return notFound(err, store.CategoryMissing(id))
}

// CreatePet adds a pet in an existing category, with an inventory entry of
// quantity 0.
func (db *DB) CreatePet(ctx context.Context, p *store.Pet) error {
	in, err := store.NormalizePet(*p)
	if err != nil {
		return err
	}
	err = db.tx(ctx, func(tx pgx.Tx) error {
		if err := lockCategory(ctx, tx, in.CategoryID); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `INSERT INTO pets (name, category_id, status) VALUES ($1, $2, $3) RETURNING id`,
			in.Name, in.CategoryID, in.Status).Scan(&in.ID); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO inventory (pet_id, quantity, status) VALUES ($1, 0, $2)`, in.ID, in.Status)
		return err
	})
	if err != nil {
		return err
	}
	in.Version = 1
	*p = in
	return nil
}

// Pet returns one pet, with its version.
func (db *DB) Pet(ctx context.Context, id int64) (store.Pet, error) {
	var p store.Pet
	err := db.pool.QueryRow(ctx, `SELECT id, name, category_id, status, version FROM pets WHERE id = $1`, id).
		Scan(&p.ID, &p.Name, &p.CategoryID, &p.Status, &p.Version)
	return p, notFound(err, store.NotFound("pet", id))
}

// PetJSON returns one pet in its API form, and its version.
func (db *DB) PetJSON(ctx context.Context, id int64) ([]byte, int64, error) {
	p, err := db.Pet(ctx, id)
	if err != nil {
		return nil, 0, err
	}
	return p.AppendJSON(nil), p.Version, nil
}

// ReplacePet replaces a pet; its inventory entry takes the new status.
func (db *DB) ReplacePet(ctx context.Context, p *store.Pet) error {
	in, err := store.NormalizePet(*p)
	if err != nil {
		return err
	}
	err = db.tx(ctx, func(tx pgx.Tx) error {
		var oldCategory, version int64
		if err := tx.QueryRow(ctx, `SELECT category_id, version FROM pets WHERE id = $1 FOR UPDATE`, in.ID).Scan(&oldCategory, &version); err != nil {
			return notFound(err, store.NotFound("pet", in.ID))
		}
		if err := store.CheckVersion(ctx, "pet "+strconv.FormatInt(in.ID, 10), version); err != nil {
			return err
		}
		if in.CategoryID != oldCategory {
			if err := lockCategory(ctx, tx, in.CategoryID); err != nil {
				return err
			}
		}
		if err := tx.QueryRow(ctx, `UPDATE pets SET name = $2, category_id = $3, status = $4, version = version + 1 WHERE id = $1 RETURNING version`,
			in.ID, in.Name, in.CategoryID, in.Status).Scan(&in.Version); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE inventory SET status = $2 WHERE pet_id = $1`, in.ID, in.Status)
		return err
	})
	if err != nil {
		return err
	}
	*p = in
	return nil
}

// DeletePet removes a pet and its inventory entry.
func (db *DB) DeletePet(ctx context.Context, id int64) error {
	return db.tx(ctx, func(tx pgx.Tx) error {
		var version int64
		if err := tx.QueryRow(ctx, `SELECT version FROM pets WHERE id = $1 FOR UPDATE`, id).Scan(&version); err != nil {
			return notFound(err, store.NotFound("pet", id))
		}
		if err := store.CheckVersion(ctx, "pet "+strconv.FormatInt(id, 10), version); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM inventory WHERE pet_id = $1`, id); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM pets WHERE id = $1`, id)
		return err
	})
}

// ListPets returns one page of pets, filtered by status and category.
func (db *DB) ListPets(ctx context.Context, f store.PetFilter) ([]store.Pet, int64, error) {
	if f.Status != "" && !f.Status.Valid() {
		return nil, 0, store.InvalidStatus(f.Status)
	}
	const cols = `SELECT id, name, category_id, status FROM pets WHERE id > $1`
	const order = ` ORDER BY id LIMIT $2`
	switch {
	case f.Status != "" && f.CategoryID != 0:
		return pageOf(ctx, db.pool, f.Page, petID, scanPet, cols+` AND category_id = $3 AND status = $4`+order, f.CategoryID, f.Status)
	case f.Status != "":
		return pageOf(ctx, db.pool, f.Page, petID, scanPet, cols+` AND status = $3`+order, f.Status)
	case f.CategoryID != 0:
		return pageOf(ctx, db.pool, f.Page, petID, scanPet, cols+` AND category_id = $3`+order, f.CategoryID)
	}
	return pageOf(ctx, db.pool, f.Page, petID, scanPet, cols+order)
}

// ImportPets adds n pets of the given status (empty means available) in one
// category, named "pet 1" to "pet n" in creation order, each with an
// inventory entry of quantity 0 (a bulk load for benchmarks and tests).
func (db *DB) ImportPets(ctx context.Context, categoryID int64, n int, status store.PetStatus) error {
	in, err := store.PetImportTemplate(categoryID, n, status)
	if err != nil {
		return err
	}
	return db.tx(ctx, func(tx pgx.Tx) error {
		if err := lockCategory(ctx, tx, categoryID); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `WITH created AS (
				INSERT INTO pets (name, category_id, status)
				SELECT 'pet ' || g, $1, $2 FROM generate_series(1, $3) AS g ORDER BY g
				RETURNING id, status)
			INSERT INTO inventory (pet_id, quantity, status) SELECT id, 0, status FROM created`, categoryID, in.Status, n)
		return err
	})
}

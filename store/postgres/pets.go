package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"petstore/store"
)

// Each write is one statement with its event; foreign keys keep the rules.
// Every statement locks rows in one order (a pet's before its inventory
// entry), so that concurrent writers queue instead of deadlocking.

func scanPet(r pgx.Row) (store.Pet, error) {
	var p store.Pet
	err := r.Scan(&p.ID, &p.Name, &p.CategoryID, &p.Status)
	return p, err
}

// createPetSQL adds a pet, its inventory entry of quantity 0 and its
// event. An id not above $7, the highest this instance knows was given
// out, is a sequence that went back (a restore): the division by zero
// refuses it, and the create is retried once the sequence is raised.
var createPetSQL = `WITH pet AS (
		INSERT INTO pets (name, category_id, status) VALUES ($1, $2, $3) RETURNING id, status),
	stock AS (
		INSERT INTO inventory (pet_id, quantity, status) SELECT id, 0, status FROM pet RETURNING pet_id),
	event AS (
		INSERT INTO events (type, created_at, data) SELECT $4, $5, ` + dataWithID("pet.id", "$6") + ` FROM pet)
	SELECT pet_id / (pet_id > $7)::int FROM stock`

// createPetsSQL adds a round of pets (group.go), as createPetSQL adds one.
// Each id is drawn before the rows are written, so that the answer pairs
// ids with pets. A pet whose category is not there is left out; a category
// deleted after that check fails the whole statement with 23503.
var createPetsSQL = `WITH input AS MATERIALIZED (
		SELECT nextval(pg_get_serial_sequence('pets', 'id')) AS id, i.name, i.category_id, i.status, i.data, i.n
		FROM unnest($1::text[], $2::bigint[], $3::text[], $4::bytea[]) WITH ORDINALITY AS i(name, category_id, status, data, n)
		WHERE EXISTS (SELECT FROM categories c WHERE c.id = i.category_id)),
	pet AS (
		INSERT INTO pets (id, name, category_id, status) SELECT id, name, category_id, status FROM input),
	stock AS (
		INSERT INTO inventory (pet_id, quantity, status) SELECT id, 0, status FROM input),
	event AS (
		INSERT INTO events (type, created_at, data) SELECT $5, $6, ` + dataWithID("id", "data") + ` FROM input ORDER BY n)
	SELECT n, id / (id > $7)::int FROM input`

// withEvent returns v as normalize makes it, and its event of type typ.
func withEvent[T any](v T, normalize func(T) (T, error), typ string) (T, store.PendingEvent, error) {
	v, err := normalize(v)
	if err != nil {
		return v, store.PendingEvent{}, err
	}
	e, err := store.NewEvent(typ, &v)
	return v, e, err
}

// CreatePet adds a pet with an inventory entry of quantity 0, in rounds
// (group.go).
func (db *DB) CreatePet(ctx context.Context, p *store.Pet, key *store.IdempotentWrite) error {
	return db.petCreates.create(ctx, db, p, key)
}

func setPetID(p *store.Pet, id int64) { p.ID, p.Version = id, 1 }

func (db *DB) createPet(ctx context.Context, q querier, p newRecord[store.Pet]) (int64, error) {
	var id int64
	err := q.QueryRow(ctx, createPetSQL, p.rec.Name, p.rec.CategoryID, p.rec.Status,
		store.EventPetCreated, db.now(), p.data, db.marks.Mark(store.ResPets)).Scan(&id)
	if violates(err, foreignKey) {
		return 0, store.CategoryMissing(p.rec.CategoryID)
	}
	return id, err
}

func (db *DB) petsTogether(round []newRecord[store.Pet]) (string, []any) {
	names, categories, statuses, data := make([]string, len(round)), make([]int64, len(round)), make([]string, len(round)), make([][]byte, len(round))
	for i, p := range round {
		names[i], categories[i], statuses[i], data[i] = p.rec.Name, p.rec.CategoryID, string(p.rec.Status), p.data
	}
	return createPetsSQL, []any{names, categories, statuses, data, store.EventPetCreated, db.now(), db.marks.Mark(store.ResPets)}
}

func (db *DB) Pet(ctx context.Context, id int64) (store.Pet, error) {
	var p store.Pet
	err := db.pool.QueryRow(ctx, `SELECT id, name, category_id, status, version FROM pets WHERE id = $1`, id).
		Scan(&p.ID, &p.Name, &p.CategoryID, &p.Status, &p.Version)
	return p, notFound(err, store.NotFound("pet", id))
}

func (db *DB) PetJSON(ctx context.Context, id int64) ([]byte, int64, error) {
	p, err := db.Pet(ctx, id)
	if err != nil {
		return nil, 0, err
	}
	return p.AppendJSON(nil), p.Version, nil
}

// replacePetSQL replaces a pet, gives its inventory entry the new status,
// and records its event.
const replacePetSQL = `WITH pet AS (
		UPDATE pets SET name = $2, category_id = $3, status = $4, version = ` + nextVersion + ` WHERE id = $1 RETURNING id, status, version),
	stock AS (
		UPDATE inventory SET status = pet.status FROM pet WHERE inventory.pet_id = pet.id RETURNING inventory.pet_id, pet.version),
	event AS (
		INSERT INTO events (type, created_at, data) SELECT $5, $6, $7 FROM pet)
	SELECT pet_id, version FROM stock`

func (db *DB) ReplacePet(ctx context.Context, p *store.Pet, cond store.Condition) error {
	in, e, err := withEvent(*p, store.NormalizePet, store.EventPetUpdated)
	if err != nil {
		return err
	}
	args := []any{in.ID, in.Name, in.CategoryID, in.Status, e.Type, db.now(), []byte(e.Data)}
	err = db.conditional(ctx, cond, "pets", "pet", in.ID, func(q querier) error {
		err := q.QueryRow(ctx, replacePetSQL, args...).Scan(&in.ID, &in.Version)
		switch {
		case violates(err, foreignKey):
			return store.CategoryMissing(in.CategoryID)
		case err != nil:
			return notFound(err, store.NotFound("pet", in.ID))
		}
		return nil
	})
	if err != nil {
		return err
	}
	*p = in
	return nil
}

// deletePetSQL removes a pet; its inventory entry goes with it (ON DELETE
// CASCADE). Its orders stay, as on bbolt.
var deletePetSQL = deleteSQL("pets")

// deleteSQL removes the row of id $1 from table and records its event; it
// counts the rows removed.
func deleteSQL(table string) string {
	return `WITH gone AS (
		DELETE FROM ` + table + ` WHERE id = $1 RETURNING id),
	event AS (
		INSERT INTO events (type, created_at, data) SELECT $2, $3, $4 FROM gone)
	SELECT count(*) FROM gone`
}

func (db *DB) DeletePet(ctx context.Context, id int64, cond store.Condition) error {
	args := []any{id, store.EventPetDeleted, db.now(), []byte(store.DeletedData(id))}
	return db.conditional(ctx, cond, "pets", "pet", id, func(q querier) error {
		var n int
		err := q.QueryRow(ctx, deletePetSQL, args...).Scan(&n)
		if err == nil && n == 0 {
			err = store.NotFound("pet", id)
		}
		return err
	})
}

func (db *DB) ListPets(ctx context.Context, f store.PetFilter) ([]store.Pet, int64, error) {
	if f.Status != "" && !f.Status.Valid() {
		return nil, 0, store.InvalidStatus(f.Status)
	}
	cond, args := where(filter{"category_id", f.CategoryID, f.CategoryID != 0}, filter{"status", f.Status, f.Status != ""})
	return pageOf(ctx, db.pool, f.Page, func(p *store.Pet) int64 { return p.ID }, scanPet,
		`SELECT id, name, category_id, status FROM pets WHERE id > $1`+cond+` ORDER BY id LIMIT $2`, args...)
}

// ImportPets adds n pets named "pet 1" to "pet n" (a bulk load for
// benchmarks and tests).
func (db *DB) ImportPets(ctx context.Context, categoryID int64, n int, status store.PetStatus) error {
	in, err := store.PetImportTemplate(categoryID, n, status)
	if err != nil {
		return err
	}
	return db.tx(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `WITH created AS (
				INSERT INTO pets (name, category_id, status)
				SELECT 'pet ' || g, $1, $2 FROM generate_series(1, $3) AS g ORDER BY g
				RETURNING id, status)
			INSERT INTO inventory (pet_id, quantity, status) SELECT id, 0, status FROM created`, categoryID, in.Status, n)
		if violates(err, foreignKey) {
			return store.CategoryMissing(categoryID)
		}
		return err
	})
}

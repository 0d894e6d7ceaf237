package postgres

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"petstore/store"
)

func scanCategory(r pgx.Row) (store.Category, error) {
	var c store.Category
	err := r.Scan(&c.ID, &c.Name, &c.Description)
	return c, err
}

// createCategorySQL adds a category and records its event; $6 refuses an
// id that went back, as createPetSQL does.
var createCategorySQL = `WITH category AS (
		INSERT INTO categories (name, description) VALUES ($1, $2) RETURNING id, version),
	event AS (
		INSERT INTO events (type, created_at, data) SELECT $3, $4, ` + dataWithID("category.id", "$5") + ` FROM category)
	SELECT id / (id > $6)::int, version FROM category`

const replaceCategorySQL = `WITH category AS (
		UPDATE categories SET name = $2, description = $3, version = ` + nextVersion + ` WHERE id = $1 RETURNING version),
	event AS (
		INSERT INTO events (type, created_at, data) SELECT $4, $5, $6 FROM category)
	SELECT version FROM category`

func (db *DB) CreateCategory(ctx context.Context, c *store.Category, key *store.IdempotentWrite) error {
	e, err := store.NewEvent(store.EventCategoryCreated, &store.Category{Name: c.Name, Description: c.Description})
	if err != nil {
		return err
	}
	in := *c
	insert := func(q querier) error {
		return q.QueryRow(ctx, createCategorySQL, in.Name, in.Description, e.Type, db.now(), afterID(e.Data), db.marks.Mark(store.ResCategories)).Scan(&in.ID, &in.Version)
	}
	err = db.idempotent(ctx, key, &in, insert)
	if violates(err, wentBackCode) && db.catchUp(ctx) == nil {
		// The database went back in time: the catch-up raised the sequence.
		err = db.idempotent(ctx, key, &in, insert)
	}
	err = wentBackError(err)
	if err != nil {
		return err
	}
	db.marks.Acked(store.ResCategories, in.ID)
	*c = in
	return nil
}

func (db *DB) Category(ctx context.Context, id int64) (store.Category, error) {
	var c store.Category
	err := db.pool.QueryRow(ctx, `SELECT id, name, description, version FROM categories WHERE id = $1`, id).
		Scan(&c.ID, &c.Name, &c.Description, &c.Version)
	return c, notFound(err, store.NotFound("category", id))
}

func (db *DB) ReplaceCategory(ctx context.Context, c *store.Category, cond store.Condition) error {
	e, err := store.NewEvent(store.EventCategoryUpdated, c)
	if err != nil {
		return err
	}
	args := []any{c.ID, c.Name, c.Description, e.Type, db.now(), []byte(e.Data)}
	return db.conditional(ctx, cond, "categories", "category", c.ID, func(q querier) error {
		err := q.QueryRow(ctx, replaceCategorySQL, args...).Scan(&c.Version)
		return notFound(err, store.NotFound("category", c.ID))
	})
}

// deleteCategorySQL removes a category; the pets' foreign key refuses it
// while it has pets (23503), also pets being added at that moment.
var deleteCategorySQL = deleteSQL("categories")

func (db *DB) DeleteCategory(ctx context.Context, id int64, cond store.Condition) error {
	del := func(q querier) error {
		var removed int
		err := q.QueryRow(ctx, deleteCategorySQL, id, store.EventCategoryDeleted, db.now(), []byte(store.DeletedData(id))).Scan(&removed)
		switch {
		case violates(err, foreignKey):
			// Refused: a second query, for the message, only then.
			var n int
			if err := db.pool.QueryRow(ctx, `SELECT count(*) FROM pets WHERE category_id = $1`, id).Scan(&n); err != nil {
				return err
			}
			return store.CategoryInUse(id, max(n, 1))
		case err == nil && removed == 0:
			return store.NotFound("category", id)
		}
		return err
	}
	return db.conditional(ctx, cond, "categories", "category", id, del)
}

// conditional runs write on the pool, or, with a condition, in a
// transaction that first locks the row of id in table and checks its
// version.
func (db *DB) conditional(ctx context.Context, cond store.Condition, table, what string, id int64, write func(q querier) error) error {
	if cond.IsZero() {
		return write(db.pool)
	}
	return db.tx(ctx, func(tx pgx.Tx) error {
		var version int64
		if err := tx.QueryRow(ctx, `SELECT version FROM `+table+` WHERE id = $1 FOR UPDATE`, id).Scan(&version); err != nil {
			return notFound(err, store.NotFound(what, id))
		}
		if err := cond.Check(what+" "+strconv.FormatInt(id, 10), version); err != nil {
			return err
		}
		return write(tx)
	})
}

func (db *DB) ListCategories(ctx context.Context, p store.Page) ([]store.Category, int64, error) {
	return pageOf(ctx, db.pool, p, func(c *store.Category) int64 { return c.ID }, scanCategory,
		`SELECT id, name, description FROM categories WHERE id > $1 ORDER BY id LIMIT $2`)
}

func scanItem(r pgx.Row) (store.InventoryItem, error) {
	var it store.InventoryItem
	err := r.Scan(&it.PetID, &it.Quantity, &it.Status)
	return it, err
}

func (db *DB) InventoryItem(ctx context.Context, petID int64) (store.InventoryItem, error) {
	it, err := scanItem(db.pool.QueryRow(ctx, `SELECT pet_id, quantity, status FROM inventory WHERE pet_id = $1`, petID))
	return it, notFound(err, store.NotFound("pet", petID))
}

var setStockSQL = `WITH stock AS (
		UPDATE inventory SET quantity = $2 WHERE pet_id = $1 RETURNING pet_id, quantity, status),
	event AS (
		INSERT INTO events (type, created_at, data) SELECT $3, $4, ` + inventoryData("stock") + ` FROM stock)
	SELECT pet_id, quantity, status FROM stock`

func (db *DB) SetStock(ctx context.Context, petID int64, qty int, cond store.Condition) (store.InventoryItem, error) {
	if err := store.CheckStock(qty); err != nil {
		return store.InventoryItem{}, err
	}
	set := func(q querier) (store.InventoryItem, error) {
		it, err := scanItem(q.QueryRow(ctx, setStockSQL, petID, qty, store.EventInventory, db.now()))
		return it, notFound(err, store.NotFound("pet", petID))
	}
	if cond.IsZero() {
		return set(db.pool)
	}
	var it store.InventoryItem
	err := db.tx(ctx, func(tx pgx.Tx) error {
		cur, err := scanItem(tx.QueryRow(ctx, `SELECT pet_id, quantity, status FROM inventory WHERE pet_id = $1 FOR UPDATE`, petID))
		if err != nil {
			return notFound(err, store.NotFound("pet", petID))
		}
		if err := cond.Check("the inventory entry of pet "+strconv.FormatInt(petID, 10), cur.Version()); err != nil {
			return err
		}
		it, err = set(tx)
		return err
	})
	return it, err
}

func (db *DB) ListInventory(ctx context.Context, f store.InventoryFilter) ([]store.InventoryItem, int64, error) {
	if f.Status != "" && !f.Status.Valid() {
		return nil, 0, store.InvalidStatus(f.Status)
	}
	cond, args := where(filter{"status", f.Status, f.Status != ""})
	return pageOf(ctx, db.pool, f.Page, func(it *store.InventoryItem) int64 { return it.PetID }, scanItem,
		`SELECT pet_id, quantity, status FROM inventory WHERE pet_id > $1`+cond+` ORDER BY pet_id LIMIT $2`, args...)
}

func scanOrder(r pgx.Row) (store.Order, error) {
	var o store.Order
	err := r.Scan(&o.ID, &o.PetID, &o.Quantity, &o.ShipDate, &o.Complete)
	o.ShipDate = inUTC(o.ShipDate)
	return o, err
}

// placeOrderSQL takes the stock and records the order and the events of
// both: the inventory row's lock, held from the check to the update, keeps
// concurrent orders from overselling. No row: the pet is missing, sold, or
// short of stock, which orderRefusal tells apart.
var placeOrderSQL = `WITH taken AS (
		UPDATE inventory SET quantity = quantity - $2
		WHERE pet_id = $1 AND status <> 'sold' AND quantity >= $2
		RETURNING pet_id, quantity, status),
	placed AS (
		INSERT INTO orders (pet_id, quantity, ship_date, complete)
		SELECT pet_id, $2, $3, $4 FROM taken RETURNING id, version),
	event AS (
		INSERT INTO events (type, created_at, data)
		SELECT e.type, $5, e.data FROM taken, placed, LATERAL (VALUES
			(1, $6::text, ` + inventoryData("taken") + `),
			(2, $7::text, ` + dataWithID("placed.id", "$8") + `)) AS e (n, type, data)
		ORDER BY e.n)
	SELECT id / (id > $9)::int, version FROM placed`

// placeOrdersSQL places a round of orders (group.go), as placeOrderSQL
// places one. The inventory rows are locked in the order of their ids, as
// every statement that locks several does. Each pet's orders are taken in
// the round's order while its stock lasts: one that does not fit is left
// out, with every later order of that pet (each is then placed alone).
var placeOrdersSQL = `WITH input AS (
		SELECT * FROM unnest($1::bigint[], $2::int[], $3::timestamptz[], $4::bool[], $5::bytea[])
			WITH ORDINALITY AS i (pet_id, quantity, ship_date, complete, data, n)),
	stock AS MATERIALIZED (
		SELECT pet_id, quantity, status FROM inventory
		WHERE pet_id IN (SELECT pet_id FROM input) AND status <> 'sold'
		ORDER BY pet_id FOR UPDATE),
	accepted AS MATERIALIZED (
		SELECT nextval(pg_get_serial_sequence('orders', 'id')) AS id, r.* FROM (
			SELECT i.*, s.status, s.quantity - sum(i.quantity) OVER (PARTITION BY i.pet_id ORDER BY i.n) AS remaining
			FROM input i JOIN stock s USING (pet_id)) AS r
		WHERE r.remaining >= 0),
	taken AS (
		UPDATE inventory SET quantity = inventory.quantity - t.total
		FROM (SELECT pet_id, sum(quantity) AS total FROM accepted GROUP BY pet_id) AS t
		WHERE inventory.pet_id = t.pet_id),
	placed AS (
		INSERT INTO orders (id, pet_id, quantity, ship_date, complete)
		SELECT id, pet_id, quantity, ship_date, complete FROM accepted),
	event AS (
		INSERT INTO events (type, created_at, data)
		SELECT e.type, $6, e.data FROM accepted AS a,
			LATERAL (SELECT a.pet_id, a.remaining AS quantity, a.status) AS left_after,
			LATERAL (VALUES
				(1, $7::text, ` + inventoryData("left_after") + `),
				(2, $8::text, ` + dataWithID("a.id", "a.data") + `)) AS e (k, type, data)
		ORDER BY a.n, e.k)
	SELECT n, id / (id > $9)::int FROM accepted`

// PlaceOrder takes the stock and records the order, in rounds (group.go).
func (db *DB) PlaceOrder(ctx context.Context, o *store.Order, key *store.IdempotentWrite) error {
	return db.orderCreates.create(ctx, db, o, key)
}

func setOrderID(o *store.Order, id int64) { o.ID, o.Version = id, 1 }

func (db *DB) placeOrder(ctx context.Context, q querier, o newRecord[store.Order]) (id int64, err error) {
	in := *o.rec
	for attempt := 1; ; attempt++ {
		var version int64
		err = q.QueryRow(ctx, placeOrderSQL, in.PetID, in.Quantity, in.ShipDate, in.Complete,
			db.now(), store.EventInventory, store.EventOrderPlaced, o.data, db.marks.Mark(store.ResOrders)).Scan(&id, &version)
		if !errors.Is(err, pgx.ErrNoRows) {
			return id, err
		}
		// Refused: a second query, for the reason, only then.
		if err = orderRefusal(ctx, q, in); err != nil || attempt == 3 {
			return 0, err
		}
		// The stock came back between the two: try again.
	}
}

func (db *DB) ordersTogether(round []newRecord[store.Order]) (string, []any) {
	pets, quantities, ships, completes, data := make([]int64, len(round)), make([]int32, len(round)),
		make([]pgtype.Timestamptz, len(round)), make([]bool, len(round)), make([][]byte, len(round))
	for i, r := range round {
		o := r.rec
		pets[i], quantities[i], completes[i], data[i] = o.PetID, int32(o.Quantity), o.Complete, r.data
		if o.ShipDate != nil {
			ships[i] = pgtype.Timestamptz{Time: *o.ShipDate, Valid: true}
		}
	}
	return placeOrdersSQL, []any{pets, quantities, ships, completes, data, db.now(), store.EventInventory, store.EventOrderPlaced, db.marks.Mark(store.ResOrders)}
}

// orderRefusal says why an order was refused, or nil.
func orderRefusal(ctx context.Context, q querier, in store.Order) error {
	var status store.PetStatus
	var stock int
	err := q.QueryRow(ctx, `SELECT status, quantity FROM inventory WHERE pet_id = $1`, in.PetID).Scan(&status, &stock)
	if err != nil {
		return notFound(err, store.OrderedPetMissing(in.PetID))
	}
	return store.CheckOrderable(in.PetID, status, stock, in.Quantity)
}

func (db *DB) Order(ctx context.Context, id int64) (store.Order, error) {
	o, err := scanVersionedOrder(db.pool.QueryRow(ctx, `SELECT id, pet_id, quantity, ship_date, complete, version FROM orders WHERE id = $1`, id))
	return o, notFound(err, store.NotFound("order", id))
}

func scanVersionedOrder(r pgx.Row) (store.Order, error) {
	var o store.Order
	err := r.Scan(&o.ID, &o.PetID, &o.Quantity, &o.ShipDate, &o.Complete, &o.Version)
	o.ShipDate = inUTC(o.ShipDate)
	return o, err
}

func (db *DB) UpdateOrder(ctx context.Context, id int64, u store.OrderUpdate, cond store.Condition) (store.Order, error) {
	const update = `UPDATE orders SET ship_date = COALESCE($2, ship_date), complete = COALESCE($3, complete), version = ` + nextVersion + `
		WHERE id = $1 RETURNING id, pet_id, quantity, ship_date, complete, version`
	// The event's type depends on the completion before the write.
	var o store.Order
	err := db.tx(ctx, func(tx pgx.Tx) error {
		var version int64
		var wasComplete bool
		if err := tx.QueryRow(ctx, `SELECT version, complete FROM orders WHERE id = $1 FOR UPDATE`, id).Scan(&version, &wasComplete); err != nil {
			return notFound(err, store.NotFound("order", id))
		}
		if err := cond.Check("order "+strconv.FormatInt(id, 10), version); err != nil {
			return err
		}
		var err error
		if o, err = scanVersionedOrder(tx.QueryRow(ctx, update, id, u.ShipDate, u.Complete)); err != nil {
			return err
		}
		return emit(tx, store.OrderUpdateEvent(&store.Order{Complete: wasComplete}, &o), &o)
	})
	if err != nil {
		return store.Order{}, err
	}
	return o, nil
}

// cancelOrderSQL removes an incomplete order, returns its stock (up to the
// maximum) and records the events of both; it counts the orders removed.
var cancelOrderSQL = `WITH cancelled AS (
		DELETE FROM orders WHERE id = $1 AND NOT complete RETURNING pet_id, quantity),
	returned AS (
		UPDATE inventory SET quantity = LEAST(inventory.quantity + cancelled.quantity, $2)
		FROM cancelled WHERE inventory.pet_id = cancelled.pet_id
		RETURNING inventory.pet_id, inventory.quantity, inventory.status),
	event AS (
		INSERT INTO events (type, created_at, data)
		SELECT e.type, $3, e.data FROM (
			SELECT 1, $4::text, ` + inventoryData("returned") + ` FROM returned
			UNION ALL
			SELECT 2, $5::text, $6::bytea FROM cancelled) AS e (n, type, data)
		ORDER BY e.n)
	SELECT count(*) FROM cancelled`

func (db *DB) CancelOrder(ctx context.Context, id int64, cond store.Condition) error {
	cancel := func(q querier) error {
		for attempt := 1; ; attempt++ {
			var n int
			if err := q.QueryRow(ctx, cancelOrderSQL, id, store.MaxStock,
				db.now(), store.EventInventory, store.EventOrderCancelled, []byte(store.DeletedData(id))).Scan(&n); err != nil || n == 1 {
				return err
			}
			// Refused: a second query, for the reason, only then.
			var complete bool
			if err := q.QueryRow(ctx, `SELECT complete FROM orders WHERE id = $1`, id).Scan(&complete); err != nil {
				return notFound(err, store.NotFound("order", id))
			}
			if complete || attempt == 3 {
				return store.OrderComplete(id)
			}
			// Completion was undone between the two: try again.
		}
	}
	return db.conditional(ctx, cond, "orders", "order", id, cancel)
}

func (db *DB) ListOrders(ctx context.Context, f store.OrderFilter) ([]store.Order, int64, error) {
	cond, args := where(filter{"pet_id", f.PetID, f.PetID != 0}, filter{"complete", f.Complete, f.Complete != nil})
	return pageOf(ctx, db.pool, f.Page, func(o *store.Order) int64 { return o.ID }, scanOrder,
		`SELECT id, pet_id, quantity, ship_date, complete FROM orders WHERE id > $1`+cond+` ORDER BY id LIMIT $2`, args...)
}

// inUTC is t in UTC: pgx reads a TIMESTAMPTZ in the local zone.
func inUTC(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

package postgres

import (
	"context"
	"strconv"

	"github.com/jackc/pgx/v5"

	"petstore/store"
)

func scanCategory(r pgx.Row) (store.Category, error) {
	var c store.Category
	err := r.Scan(&c.ID, &c.Name, &c.Description)
	return c, err
}

// CreateCategory adds a category.
func (db *DB) CreateCategory(ctx context.Context, c *store.Category) error {
	return db.pool.QueryRow(ctx, `INSERT INTO categories (name, description) VALUES ($1, $2) RETURNING id, version`,
		c.Name, c.Description).Scan(&c.ID, &c.Version)
}

// Category returns one category, with its version.
func (db *DB) Category(ctx context.Context, id int64) (store.Category, error) {
	var c store.Category
	err := db.pool.QueryRow(ctx, `SELECT id, name, description, version FROM categories WHERE id = $1`, id).
		Scan(&c.ID, &c.Name, &c.Description, &c.Version)
	return c, notFound(err, store.NotFound("category", id))
}

// ReplaceCategory replaces a category's name and description, and sets
// c.Version to its new version. Without an If-Match condition it is one
// statement.
func (db *DB) ReplaceCategory(ctx context.Context, c *store.Category) error {
	const update = `UPDATE categories SET name = $2, description = $3, version = version + 1 WHERE id = $1 RETURNING version`
	if !store.HasVersionCondition(ctx) {
		err := db.pool.QueryRow(ctx, update, c.ID, c.Name, c.Description).Scan(&c.Version)
		return notFound(err, store.NotFound("category", c.ID))
	}
	return db.tx(ctx, func(tx pgx.Tx) error {
		var version int64
		if err := tx.QueryRow(ctx, `SELECT version FROM categories WHERE id = $1 FOR UPDATE`, c.ID).Scan(&version); err != nil {
			return notFound(err, store.NotFound("category", c.ID))
		}
		if err := store.CheckVersion(ctx, "category "+strconv.FormatInt(c.ID, 10), version); err != nil {
			return err
		}
		return tx.QueryRow(ctx, update, c.ID, c.Name, c.Description).Scan(&c.Version)
	})
}

// DeleteCategory removes a category that has no pets.
func (db *DB) DeleteCategory(ctx context.Context, id int64) error {
	return db.tx(ctx, func(tx pgx.Tx) error {
		// The exclusive lock waits for pets being added to it (they hold a
		// share lock), so the count below is final.
		var version int64
		if err := tx.QueryRow(ctx, `SELECT version FROM categories WHERE id = $1 FOR UPDATE`, id).Scan(&version); err != nil {
			return notFound(err, store.NotFound("category", id))
		}
		if err := store.CheckVersion(ctx, "category "+strconv.FormatInt(id, 10), version); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM pets WHERE category_id = $1`, id).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return store.CategoryInUse(id, n)
		}
		_, err := tx.Exec(ctx, `DELETE FROM categories WHERE id = $1`, id)
		return err
	})
}

// ListCategories returns one page of categories.
func (db *DB) ListCategories(ctx context.Context, p store.Page) ([]store.Category, int64, error) {
	return pageOf(ctx, db.pool, p, func(c *store.Category) int64 { return c.ID }, scanCategory,
		`SELECT id, name, description FROM categories WHERE id > $1 ORDER BY id LIMIT $2`)
}

func scanItem(r pgx.Row) (store.InventoryItem, error) {
	var it store.InventoryItem
	err := r.Scan(&it.PetID, &it.Quantity, &it.Status)
	return it, err
}

// InventoryItem returns the stock of one pet.
func (db *DB) InventoryItem(ctx context.Context, petID int64) (store.InventoryItem, error) {
	it, err := scanItem(db.pool.QueryRow(ctx, `SELECT pet_id, quantity, status FROM inventory WHERE pet_id = $1`, petID))
	return it, notFound(err, store.NotFound("pet", petID))
}

// SetStock sets the stock of one pet.
func (db *DB) SetStock(ctx context.Context, petID int64, qty int) (store.InventoryItem, error) {
	if err := store.CheckStock(qty); err != nil {
		return store.InventoryItem{}, err
	}
	it, err := scanItem(db.pool.QueryRow(ctx, `UPDATE inventory SET quantity = $2 WHERE pet_id = $1 RETURNING pet_id, quantity, status`, petID, qty))
	return it, notFound(err, store.NotFound("pet", petID))
}

// ListInventory returns one page of inventory entries, by pet id.
func (db *DB) ListInventory(ctx context.Context, f store.InventoryFilter) ([]store.InventoryItem, int64, error) {
	if f.Status != "" && !f.Status.Valid() {
		return nil, 0, store.InvalidStatus(f.Status)
	}
	id := func(it *store.InventoryItem) int64 { return it.PetID }
	const cols = `SELECT pet_id, quantity, status FROM inventory WHERE pet_id > $1`
	const order = ` ORDER BY pet_id LIMIT $2`
	if f.Status != "" {
		return pageOf(ctx, db.pool, f.Page, id, scanItem, cols+` AND status = $3`+order, f.Status)
	}
	return pageOf(ctx, db.pool, f.Page, id, scanItem, cols+order)
}

// scanOrder reads an order, its ship date in UTC as the store's other times
// are: pgx reads a TIMESTAMPTZ in the local zone.
func scanOrder(r pgx.Row) (store.Order, error) {
	var o store.Order
	err := r.Scan(&o.ID, &o.PetID, &o.Quantity, &o.ShipDate, &o.Complete)
	if o.ShipDate != nil {
		d := o.ShipDate.UTC()
		o.ShipDate = &d
	}
	return o, err
}

// PlaceOrder takes the stock and records the order in one transaction: the
// inventory row is locked from the check to the update, so concurrent
// orders, from any instance, never oversell.
func (db *DB) PlaceOrder(ctx context.Context, o *store.Order) error {
	in, err := store.NormalizeOrder(*o)
	if err != nil {
		return err
	}
	err = db.tx(ctx, func(tx pgx.Tx) error {
		var status store.PetStatus
		var stock int
		err := tx.QueryRow(ctx, `SELECT p.status, i.quantity FROM pets p JOIN inventory i ON i.pet_id = p.id
			WHERE p.id = $1 FOR UPDATE OF p, i`, in.PetID).Scan(&status, &stock)
		if err != nil {
			return notFound(err, store.OrderedPetMissing(in.PetID))
		}
		if err := store.CheckOrderable(in.PetID, status, stock, in.Quantity); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE inventory SET quantity = quantity - $2 WHERE pet_id = $1`, in.PetID, in.Quantity); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `INSERT INTO orders (pet_id, quantity, ship_date, complete) VALUES ($1, $2, $3, $4) RETURNING id, version`,
			in.PetID, in.Quantity, in.ShipDate, in.Complete).Scan(&in.ID, &in.Version)
	})
	if err != nil {
		return err
	}
	*o = in
	return nil
}

// Order returns one order, with its version.
func (db *DB) Order(ctx context.Context, id int64) (store.Order, error) {
	o, err := scanVersionedOrder(db.pool.QueryRow(ctx, `SELECT id, pet_id, quantity, ship_date, complete, version FROM orders WHERE id = $1`, id))
	return o, notFound(err, store.NotFound("order", id))
}

// scanVersionedOrder is scanOrder with the version after the columns.
func scanVersionedOrder(r pgx.Row) (store.Order, error) {
	var o store.Order
	err := r.Scan(&o.ID, &o.PetID, &o.Quantity, &o.ShipDate, &o.Complete, &o.Version)
	if o.ShipDate != nil {
		d := o.ShipDate.UTC()
		o.ShipDate = &d
	}
	return o, err
}

// UpdateOrder changes an order's ship date or completion. Without an
// If-Match condition it is one statement.
func (db *DB) UpdateOrder(ctx context.Context, id int64, u store.OrderUpdate) (store.Order, error) {
	const update = `UPDATE orders SET ship_date = COALESCE($2, ship_date), complete = COALESCE($3, complete), version = version + 1
		WHERE id = $1 RETURNING id, pet_id, quantity, ship_date, complete, version`
	if !store.HasVersionCondition(ctx) {
		o, err := scanVersionedOrder(db.pool.QueryRow(ctx, update, id, u.ShipDate, u.Complete))
		return o, notFound(err, store.NotFound("order", id))
	}
	var o store.Order
	err := db.tx(ctx, func(tx pgx.Tx) error {
		var version int64
		if err := tx.QueryRow(ctx, `SELECT version FROM orders WHERE id = $1 FOR UPDATE`, id).Scan(&version); err != nil {
			return notFound(err, store.NotFound("order", id))
		}
		if err := store.CheckVersion(ctx, "order "+strconv.FormatInt(id, 10), version); err != nil {
			return err
		}
		var err error
		o, err = scanVersionedOrder(tx.QueryRow(ctx, update, id, u.ShipDate, u.Complete))
		return err
	})
	return o, err
}

// CancelOrder removes an incomplete order and returns its stock.
func (db *DB) CancelOrder(ctx context.Context, id int64) error {
	return db.tx(ctx, func(tx pgx.Tx) error {
		var petID, version int64
		var qty int
		var complete bool
		err := tx.QueryRow(ctx, `SELECT pet_id, quantity, complete, version FROM orders WHERE id = $1 FOR UPDATE`, id).Scan(&petID, &qty, &complete, &version)
		if err != nil {
			return notFound(err, store.NotFound("order", id))
		}
		if err := store.CheckVersion(ctx, "order "+strconv.FormatInt(id, 10), version); err != nil {
			return err
		}
		if complete {
			return store.OrderComplete(id)
		}
		if _, err := tx.Exec(ctx, `UPDATE inventory SET quantity = LEAST(quantity + $2, $3) WHERE pet_id = $1`, petID, qty, store.MaxStock); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM orders WHERE id = $1`, id)
		return err
	})
}

// ListOrders returns one page of orders, filtered by pet and completion.
func (db *DB) ListOrders(ctx context.Context, f store.OrderFilter) ([]store.Order, int64, error) {
	id := func(o *store.Order) int64 { return o.ID }
	const cols = `SELECT id, pet_id, quantity, ship_date, complete FROM orders WHERE id > $1`
	const order = ` ORDER BY id LIMIT $2`
	switch {
	case f.PetID != 0 && f.Complete != nil:
		return pageOf(ctx, db.pool, f.Page, id, scanOrder, cols+` AND pet_id = $3 AND complete = $4`+order, f.PetID, *f.Complete)
	case f.PetID != 0:
		return pageOf(ctx, db.pool, f.Page, id, scanOrder, cols+` AND pet_id = $3`+order, f.PetID)
	case f.Complete != nil:
		return pageOf(ctx, db.pool, f.Page, id, scanOrder, cols+` AND complete = $3`+order, *f.Complete)
	}
	return pageOf(ctx, db.pool, f.Page, id, scanOrder, cols+order)
}

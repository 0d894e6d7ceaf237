package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"petstore/domains/domaintest"
	"petstore/handlers"
	"petstore/store"
	"petstore/store/boltstore"
	"petstore/store/postgres"
	"petstore/store/postgres/pgtest"
)

// shareSeen notes the pool share (store.PoolShareOf) of the contexts a
// store's PetJSON is called with.
type shareSeen struct {
	mu     sync.Mutex
	shares []string
}

func (s *shareSeen) note(ctx context.Context) {
	s.mu.Lock()
	s.shares = append(s.shares, store.PoolShareOf(ctx))
	s.mu.Unlock()
}

// boltSeen and pgSeen are the real stores, noting the pool share their
// reads of a pet get.
type boltSeen struct {
	*boltstore.DB
	seen *shareSeen
}

func (b boltSeen) PetJSON(ctx context.Context, id int64) ([]byte, int64, error) {
	b.seen.note(ctx)
	return b.DB.PetJSON(ctx, id)
}

type pgSeen struct {
	*postgres.DB
	seen *shareSeen
}

func (p pgSeen) PetJSON(ctx context.Context, id int64) ([]byte, int64, error) {
	p.seen.note(ctx)
	return p.DB.PetJSON(ctx, id)
}

// TestPoolShareOnlyForPooledStores: the requests of a resource count
// against its share of PostgreSQL's pool, and on a file, which has no
// pool, their context carries no share (it was one more allocation on
// every request, issue 34).
func TestPoolShareOnlyForPooledStores(t *testing.T) {
	serve := func(t *testing.T, db store.Store, set func(*handlers.Config)) {
		t.Helper()
		ts := serveStore(t, db, set)
		_, pet := ts.addRex(0)
		ts.do(http.MethodGet, fmt.Sprintf("/pets/%d", pet.ID), "").wantStatus(http.StatusOK)
	}
	t.Run("bbolt", func(t *testing.T) {
		db := boltSeen{domaintest.OpenStore(t), &shareSeen{}}
		if _, err := db.EnsureAdminToken(context.Background(), domaintest.AdminToken); err != nil {
			t.Fatal(err)
		}
		serve(t, db, func(c *handlers.Config) { c.File = db })
		if want := []string{""}; fmt.Sprint(db.seen.shares) != fmt.Sprint(want) {
			t.Errorf("pool shares of GET /pets/{id} on a file: %q, want %q", db.seen.shares, want)
		}
	})
	t.Run("postgres", func(t *testing.T) {
		pg, err := postgres.Open(context.Background(), pgtest.URL(t), store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { pg.Close() })
		db := pgSeen{pg, &shareSeen{}}
		if _, err := db.EnsureAdminToken(context.Background(), domaintest.AdminToken); err != nil {
			t.Fatal(err)
		}
		serve(t, db, func(c *handlers.Config) { c.Shared = db })
		if want := []string{"/pets"}; fmt.Sprint(db.seen.shares) != fmt.Sprint(want) {
			t.Errorf("pool shares of GET /pets/{id} on PostgreSQL: %q, want %q", db.seen.shares, want)
		}
	})
}

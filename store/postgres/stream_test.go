package postgres_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"petstore/domains/domaintest"
	"petstore/store"
	"petstore/store/boltstore"
	"petstore/store/postgres"
	"petstore/store/postgres/pgtest"
)

// slowSink takes a stream as a slow target would: at Totals (the
// transaction idle between two statements) and at the first pet (its
// statement under way, or idle once its rows are all sent), it waits until
// the stream's session has stayed so for longer than the session's
// timeouts, or is gone (the server ended it).
type slowSink struct {
	t       *testing.T
	watch   *pgtest.Session
	outlive time.Duration
	pets    int
	waited  []string
}

func (s *slowSink) wait(query string) {
	s.t.Helper()
	ctx := context.Background()
	var why string
	domaintest.WaitFor(s.t, 60*time.Second, 20*time.Millisecond, func() error {
		n, err := s.watch.Int64s(ctx, fmt.Sprintf(`SELECT (clock_timestamp() - state_change > interval '%d milliseconds')::int * 2 + (state = 'active')::int FROM pg_stat_activity
			WHERE pid <> pg_backend_pid() AND datname = current_database() AND state IN ('active', 'idle in transaction') AND query LIKE '%s%%'`,
			s.outlive.Milliseconds(), query))
		switch {
		case err != nil:
			return err
		case len(n) == 0:
			why = "its session was ended"
		case n[0] == 2:
			why = "outlived idle"
		case n[0] == 3:
			why = "outlived running"
		default:
			return fmt.Errorf("the stream's session is in %q for less than %v", query, s.outlive)
		}
		return nil
	})
	s.waited = append(s.waited, why)
}

func (s *slowSink) Totals(store.Totals) error {
	s.wait("SELECT (SELECT count(*) FROM categories)")
	return nil
}

func (s *slowSink) Record(r any) error {
	if _, ok := r.(*store.Pet); ok {
		if s.pets++; s.pets == 1 {
			s.wait("SELECT id, name, category_id")
		}
	}
	return nil
}

func (s *slowSink) Rest(store.Rest) error { return nil }

// TestStreamOutlivesTheStatementTimeout streams a database through a
// session whose statement and idle-in-transaction timeouts are short, to a
// target slower than both: the stream ends with every pet, since a move
// must not be cut by the timeouts meant for requests.
func TestStreamOutlivesTheStatementTimeout(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	filled, err := postgres.Open(ctx, url, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer filled.Close()
	dogs := store.Category{Name: "dogs"}
	if err := filled.CreateCategory(ctx, &dogs, nil); err != nil {
		t.Fatal(err)
	}
	// More bytes than the sockets' buffers hold: the pets' statement is
	// still under way while the sink waits.
	const pets = 200
	for range pets {
		if err := filled.CreatePet(ctx, &store.Pet{Name: strings.Repeat("Rex ", 25_000), CategoryID: dogs.ID}, nil); err != nil {
			t.Fatal(err)
		}
	}
	short := postgres.Timeouts{Statement: 100 * time.Millisecond, Transaction: 150 * time.Millisecond}
	db, err := postgres.Connect(ctx, url, store.Options{}, postgres.Config{Timeouts: short})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	sink := &slowSink{t: t, watch: pgtest.Connect(t, url), outlive: 3 * short.Transaction}
	if err := db.Stream(ctx, sink); err != nil {
		t.Fatalf("the stream (its waits: %q): %v", sink.waited, err)
	}
	if sink.pets != pets || len(sink.waited) != 2 || sink.waited[0] != "outlived idle" || sink.waited[1] != "outlived running" {
		t.Errorf("the stream gave %d pets, its session %q; want %d, outlived idle and then running", sink.pets, sink.waited, pets)
	}
}

// A database whose schema a newer version migrated (a rolling upgrade, or
// a dump of a newer version's database) may hold tables this version does
// not know: the way back to a file would leave them behind without a
// word. It is refused, saying so, and nothing is copied.
func TestStreamRefusesANewerSchema(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	db, err := postgres.Open(ctx, url, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = pgtest.Connect(t, url).Exec(ctx, `CREATE TABLE subscriptions (id BIGINT PRIMARY KEY, plan TEXT NOT NULL);
		INSERT INTO subscriptions VALUES (1, 'pro'); INSERT INTO schema_migrations (version) VALUES (1000)`)
	if err != nil {
		t.Fatal(err)
	}
	file, err := boltstore.Open(filepath.Join(t.TempDir(), "petstore.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	err = file.Import(ctx, db)
	if err == nil || !strings.Contains(err.Error(), "schema is at version 1000") || !strings.Contains(err.Error(), "nothing was copied") {
		t.Fatalf("the way back from a newer version's schema: %v; want a refusal saying so", err)
	}
}

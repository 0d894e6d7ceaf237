package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"petstore/domains/domaintest"
	"petstore/store"
	"petstore/store/postgres"
	"petstore/store/postgres/pgtest"
)

// A dump restored under two running instances, after one of them revoked
// a key and both gave out pet ids: the key is refused by both (the
// restore brought its row back), no pet id acknowledged before the
// restore is given to another pet after it, even by creates that run
// during and right after the restore, and one store.restored event says
// what was rolled back.
func TestRestoreUndoesNothingAcknowledged(t *testing.T) {
	url := pgtest.URL(t)
	ctx := context.Background()
	b, a, changed := twoInstances(t, url)
	cat := store.Category{Name: "dogs"}
	if err := a.CreateCategory(ctx, &cat, nil); err != nil {
		t.Fatal(err)
	}
	revoked, revokedSecret, err := a.CreateAPIKey(ctx, "revoked after the dump", nil)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	acked := map[int64]string{}
	create := func(db *postgres.DB, name string) (int64, error) {
		p := store.Pet{Name: name, CategoryID: cat.ID, Status: "available"}
		err := db.CreatePet(ctx, &p, nil)
		if err == nil {
			mu.Lock()
			if other, ok := acked[p.ID]; ok {
				t.Errorf("pet id %d given to %q, acknowledged before for %q", p.ID, name, other)
			}
			acked[p.ID] = name
			mu.Unlock()
		}
		return p.ID, err
	}
	for range 3 {
		if _, err := create(a, "in the dump"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.SetStock(ctx, 1, 1000000, store.Condition{}); err != nil {
		t.Fatal(err)
	}
	dump := pgDump(t, url)
	// Categories and orders draw from sequences of their own, and are
	// guarded as pets are.
	others := map[string]bool{}
	other := func(what string, id int64, err error) {
		if err != nil {
			return // refused while the restore holds the tables
		}
		mu.Lock()
		defer mu.Unlock()
		k := fmt.Sprintf("%s %d", what, id)
		if others[k] {
			t.Errorf("%s given out twice", k)
		}
		others[k] = true
	}
	for range 20 {
		for _, db := range []*postgres.DB{a, b} {
			if _, err := create(db, "after the dump"); err != nil {
				t.Fatal(err)
			}
			c := store.Category{Name: "after the dump"}
			if err := db.CreateCategory(ctx, &c, nil); err != nil {
				t.Fatal(err)
			}
			other("category", c.ID, nil)
			o := store.Order{PetID: 1}
			if err := db.PlaceOrder(ctx, &o, nil); err != nil {
				t.Fatal(err)
			}
			other("order", o.ID, nil)
		}
	}
	if err := a.RevokeAPIKey(ctx, revoked.ID); err != nil {
		t.Fatal(err)
	}
	// b has caught up with the revocation once it sees a later change.
	token := "pat_a-token-set-after-the-revocation-0123"
	if _, err := a.EnsureAdminToken(ctx, token); err != nil {
		t.Fatal(err)
	}
	waitFor(t, changed, func() bool { return b.CheckAdminToken(token) })

	// Creates on both instances go on during the restore and after it.
	stop := make(chan struct{})
	var writers sync.WaitGroup
	for _, db := range []*postgres.DB{a, b} {
		writers.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				_, _ = create(db, "during the restore")
				c := store.Category{Name: "during the restore"}
				other("category", c.ID, db.CreateCategory(ctx, &c, nil))
				o := store.Order{PetID: 1}
				other("order", o.ID, db.PlaceOrder(ctx, &o, nil))
			}
		})
	}
	out, err := pgRestore(url, dump)
	if err != nil {
		close(stop)
		writers.Wait()
		t.Fatalf("pg_restore: %v\n%s", err, out)
	}
	for _, db := range []*postgres.DB{a, b} {
		if _, ok, err := db.CheckAPIKey(ctx, revokedSecret); ok || err != nil {
			t.Errorf("a key revoked before the restore works right after it: %v %v", ok, err)
		}
	}
	// Each instance finds the rewind at its next poll at the latest.
	restored := waitEvents(t, a, store.EventStoreRestored, 1)
	close(stop)
	writers.Wait()

	for _, db := range []*postgres.DB{a, b} {
		if _, ok, err := db.CheckAPIKey(ctx, revokedSecret); ok || err != nil {
			t.Errorf("a key revoked before the restore works after it: %v %v", ok, err)
		}
		for range 5 {
			if _, err := create(db, "after the restore"); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n := countKeys(t, url, revoked.ID); n != 0 {
		t.Errorf("the revoked key's row is in the database after the restore (%d)", n)
	}

	// One event, whichever instance found the rewind first, with what
	// was rolled back.
	waitHandled(t, a, b)
	if all := eventsOf(t, a, store.EventStoreRestored); len(all) != 1 {
		t.Errorf("%d store.restored events, want 1: %v", len(all), all)
	}
	var data store.Restored
	if err := json.Unmarshal(restored[0].Data, &data); err != nil {
		t.Fatal(err)
	}
	pets, ok := data.IDs[store.ResPets]
	if data.Store != "postgres" || !ok || pets.Restored < 3 || pets.Acknowledged < 43 || pets.ResumesAfter <= pets.Acknowledged || data.RevokedAgain != 1 || data.RestoredTo == "" {
		t.Errorf("store.restored's data: %s", restored[0].Data)
	}
}

// waitEvents waits until db lists n events of type typ, for at most ten
// seconds, and returns them.
func waitEvents(t *testing.T, db *postgres.DB, typ string, n int) []store.Event {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		found := eventsOf(t, db, typ)
		if len(found) >= n {
			return found
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d %s events after ten seconds, want %d", len(found), typ, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// eventsOf lists the events of type typ.
func eventsOf(t *testing.T, db *postgres.DB, typ string) []store.Event {
	t.Helper()
	var out []store.Event
	var after store.EventID
	for {
		page, err := db.Events(context.Background(), store.EventFilter{After: after, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page {
			if e.Type == typ {
				out = append(out, e)
			}
		}
		if len(page) < 100 {
			return out
		}
		after = page[len(page)-1].ID
	}
}

// waitHandled runs a catch-up of each instance, as its next poll would,
// until one succeeds: each has then found the rewind and handled it.
func waitHandled(t *testing.T, dbs ...*postgres.DB) {
	t.Helper()
	for _, db := range dbs {
		var err error
		for range 50 {
			if err = postgres.CatchUp(db); err == nil {
				break
			}
		}
		if err != nil {
			t.Fatalf("a catch-up after the restore: %v", err)
		}
	}
}

// countKeys counts the api_keys rows of id.
func countKeys(t *testing.T, url string, id int64) int {
	t.Helper()
	n, err := pgtest.Connect(t, url).Int64s(context.Background(), fmt.Sprintf(`SELECT count(*) FROM api_keys WHERE id = %d`, id))
	if err != nil {
		t.Fatal(err)
	}
	return int(n[0])
}

// An operator who restores a dump on purpose to bring a revoked key back
// forgets its revocation first (UnrevokeAPIKeys, which petstore unrevoke
// runs): both instances forget it, and after the restore the key works on
// both, while a key revoked and not forgiven stays refused.
func TestUnrevokeBeforeARestore(t *testing.T) {
	url := pgtest.URL(t)
	ctx := context.Background()
	a, b := openAt(t, url), openAt(t, url)
	wanted, wantedSecret, err := a.CreateAPIKey(ctx, "revoked, then wanted back", nil)
	if err != nil {
		t.Fatal(err)
	}
	gone, goneSecret, err := a.CreateAPIKey(ctx, "revoked for good", nil)
	if err != nil {
		t.Fatal(err)
	}
	dump := pgDump(t, url)
	for _, id := range []int64{wanted.ID, gone.ID} {
		if err := a.RevokeAPIKey(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	waitHandled(t, b)
	if n := len(b.Marks().Revocations()); n != 2 {
		t.Fatalf("b keeps %d revocations, want 2", n)
	}
	if n, err := a.UnrevokeAPIKeys(ctx, []int64{wanted.ID}); n != 1 || err != nil {
		t.Fatalf("UnrevokeAPIKeys: %d %v", n, err)
	}
	waitHandled(t, b)
	if out, err := pgRestore(url, dump); err != nil {
		t.Fatalf("pg_restore: %v\n%s", err, out)
	}
	waitHandled(t, a, b)
	for _, db := range []*postgres.DB{a, b} {
		if _, ok, err := db.CheckAPIKey(ctx, wantedSecret); !ok || err != nil {
			t.Errorf("the key whose revocation was forgotten, after the restore: %v %v", ok, err)
		}
		if _, ok, err := db.CheckAPIKey(ctx, goneSecret); ok || err != nil {
			t.Errorf("the key still revoked, after the restore: %v %v", ok, err)
		}
	}
}

// A restore that rewinds the changes row, followed by as many changes as
// it rewound before the other instance's next poll, brings the counters
// back to the very values that instance saw: only the stamp tells that
// the history is another one. The instance must then drop what it
// caches: the admin token set after the dump is refused and the one of
// the dump works; a key revoked after the restore and a key the restore
// took away are refused.
func TestRewindThenChangesBeforeThePoll(t *testing.T) {
	url := pgtest.URL(t)
	ctx := context.Background()
	b, a, changed := twoInstances(t, url)
	const dumped, replaced = "pat_token-of-the-dump-0123456789abcdef", "pat_token-set-after-the-dump-0123456789"
	if _, err := a.EnsureAdminToken(ctx, dumped); err != nil {
		t.Fatal(err)
	}
	kept, keptSecret, err := a.CreateAPIKey(ctx, "in the dump", nil)
	if err != nil {
		t.Fatal(err)
	}
	dump := pgDump(t, url)
	if _, err := a.EnsureAdminToken(ctx, replaced); err != nil {
		t.Fatal(err)
	}
	_, laterSecret, err := a.CreateAPIKey(ctx, "after the dump", nil)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, changed, func() bool { return b.CheckAdminToken(replaced) })
	if _, ok, err := b.CheckAPIKey(ctx, laterSecret); !ok || err != nil {
		t.Fatalf("the key created after the dump, before the restore: %v %v", ok, err)
	}
	seen := counts(t, url)

	release := postgres.HoldCatchUp(b)
	if out, err := pgRestore(url, dump); err != nil {
		release()
		t.Fatalf("pg_restore: %v\n%s", err, out)
	}
	// Two credential changes, as many as the restore took away.
	if err := a.RevokeAPIKey(ctx, kept.ID); err != nil {
		release()
		t.Fatal(err)
	}
	if _, _, err := a.CreateAPIKey(ctx, "after the restore", nil); err != nil {
		release()
		t.Fatal(err)
	}
	if now := counts(t, url); now != seen {
		release()
		t.Fatalf("the counters are %v after the restore and the changes, %v before: the case under test is not made", now, seen)
	}
	release()

	waitFor(t, changed, func() bool { return b.CheckAdminToken(dumped) && !b.CheckAdminToken(replaced) })
	if _, ok, err := b.CheckAPIKey(ctx, keptSecret); ok || err != nil {
		t.Errorf("a key revoked after the restore works: %v %v", ok, err)
	}
	if _, ok, err := b.CheckAPIKey(ctx, laterSecret); ok || err != nil {
		t.Errorf("a key the restore took away works: %v %v", ok, err)
	}
}

// counts reads the changes row's counters: every change, and the
// credential changes.
func counts(t *testing.T, url string) [2]int64 {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var c [2]int64
	if err := conn.QueryRow(ctx, `SELECT version, version - other_version FROM changes`).Scan(&c[0], &c[1]); err != nil {
		t.Fatal(err)
	}
	return c
}

// pgDump dumps the database at url as docs/several-instances.md does, into
// a file of t's.
func pgDump(t *testing.T, url string) string {
	t.Helper()
	dump := t.TempDir() + "/petstore.dump"
	if out, err := exec.Command(pgtest.Program("pg_dump"), "--format=custom", "--file="+dump, url).CombinedOutput(); err != nil {
		t.Fatalf("pg_dump: %v\n%s", err, out)
	}
	return dump
}

// pgRestore restores dump into the database at url as
// docs/several-instances.md does, under the instances running on it.
func pgRestore(url, dump string) ([]byte, error) {
	return exec.Command(pgtest.Program("pg_restore"), "--clean", "--if-exists", "--single-transaction", "--dbname="+url, dump).CombinedOutput()
}

// A dump restored after writes that gave out no id (a pet replaced
// twice): the instance finds the rewind all the same, records one
// store.restored for the events it took back, and a version (an ETag)
// acknowledged after the dump is never given to another state of the
// pet, so that a client holding it passes no If-Match with it.
func TestRestoreTakingBackOnlyUpdates(t *testing.T) {
	url := pgtest.URL(t)
	ctx := context.Background()
	db := openAt(t, url)
	cat := store.Category{Name: "dogs"}
	if err := db.CreateCategory(ctx, &cat, nil); err != nil {
		t.Fatal(err)
	}
	p := store.Pet{Name: "Rex", CategoryID: cat.ID, Status: "available"}
	if err := db.CreatePet(ctx, &p, nil); err != nil {
		t.Fatal(err)
	}
	dump := pgDump(t, url)
	acked := map[int64]string{}
	for _, name := range []string{"Rex B", "Rex C"} {
		q := store.Pet{ID: p.ID, Name: name, CategoryID: cat.ID, Status: "available"}
		if err := db.ReplacePet(ctx, &q, store.Condition{}); err != nil {
			t.Fatal(err)
		}
		acked[q.Version] = name
	}
	waitHandled(t, db)
	if out, err := pgRestore(url, dump); err != nil {
		t.Fatalf("pg_restore: %v\n%s", err, out)
	}
	waitHandled(t, db)
	if n := len(eventsOf(t, db, store.EventStoreRestored)); n != 1 {
		t.Errorf("%d store.restored events after a restore that took back two pet.updated, want 1", n)
	}
	for _, name := range []string{"Rex D", "Rex E"} {
		q := store.Pet{ID: p.ID, Name: name, CategoryID: cat.ID, Status: "available"}
		if err := db.ReplacePet(ctx, &q, store.Condition{}); err != nil {
			t.Fatal(err)
		}
		if was, ok := acked[q.Version]; ok {
			t.Errorf("after the restore, the pet named %q got version %d, which was acknowledged before for %q", name, q.Version, was)
		}
	}
	for v, name := range acked {
		q := store.Pet{ID: p.ID, Name: "Rex F", CategoryID: cat.ID, Status: "available"}
		if err := db.ReplacePet(ctx, &q, store.Condition{IfMatch: []int64{v}}); store.ErrorCode(err) != store.EPRECONDITION {
			t.Errorf("If-Match %d (the pet named %q, rolled back) after the restore: %v, want %s", v, name, err, store.EPRECONDITION)
		}
	}
}

// A dump restored into another database, and the instance started on that
// one (--database repointed) with its marks file: the database is the same
// store, which the dump carries, so the marks apply to it: no pet id
// acknowledged before is given again, and a key revoked after the dump is
// refused. Marks of an unrelated database are still refused.
func TestRestoreIntoAnotherDatabase(t *testing.T) {
	ctx := context.Background()
	url, restored, unrelated := pgtest.URL(t), pgtest.URL(t), pgtest.URL(t)
	marks := filepath.Join(t.TempDir(), "marks.json")
	connect := func(url string) (*postgres.DB, error) {
		return postgres.Connect(ctx, url, store.Options{}, postgres.Config{RestoreMarks: marks})
	}
	db, err := connect(url)
	if err != nil {
		t.Fatal(err)
	}
	cat := store.Category{Name: "dogs"}
	if err := db.CreateCategory(ctx, &cat, nil); err != nil {
		t.Fatal(err)
	}
	key, secret, err := db.CreateAPIKey(ctx, "revoked after the dump", nil)
	if err != nil {
		t.Fatal(err)
	}
	dump := pgDump(t, url)
	var highest int64
	for range 5 {
		p := store.Pet{Name: "after the dump", CategoryID: cat.ID, Status: "available"}
		if err := db.CreatePet(ctx, &p, nil); err != nil {
			t.Fatal(err)
		}
		highest = p.ID
	}
	if err := db.RevokeAPIKey(ctx, key.ID); err != nil {
		t.Fatal(err)
	}
	waitHandled(t, db)
	db.Close()
	if out, err := pgRestore(restored, dump); err != nil {
		t.Fatalf("pg_restore into another database: %v\n%s", err, out)
	}

	db, err = connect(restored)
	if err != nil {
		t.Fatalf("the instance repointed to the database the dump was restored into: %v", err)
	}
	waitHandled(t, db)
	p := store.Pet{Name: "after the restore", CategoryID: cat.ID, Status: "available"}
	if err := db.CreatePet(ctx, &p, nil); err != nil {
		t.Fatal(err)
	}
	if p.ID <= highest {
		t.Errorf("a pet created after the restore got id %d; %d was acknowledged before", p.ID, highest)
	}
	if _, ok, err := db.CheckAPIKey(ctx, secret); ok || err != nil {
		t.Errorf("the key revoked after the dump, after the restore: %v %v", ok, err)
	}
	db.Close()

	// Refused at start even by a service, which serves without a database
	// it cannot reach yet: no retry would change this.
	db, err = postgres.Connect(ctx, unrelated, store.Options{}, postgres.Config{RestoreMarks: marks, Background: true})
	if err == nil {
		db.Close()
		t.Error("the marks of one store were taken for an unrelated database")
	} else if !errors.Is(err, store.ErrOtherStore) {
		t.Errorf("an unrelated database with the marks of another: %v", err)
	}
}

// A dump restored into another cluster whose transaction counter is
// behind the first's (a new server, a major upgrade by dump and restore):
// events' ids, made from it, sort below a consumer's cursor, and the
// events written there would be skipped by it and by the webhook fan-out
// without a word. The instance says so, naming the remedy, and with it
// (pg_resetwal -e, the cluster stopped) the cursor gets what follows it.
func TestRestoreIntoAClusterBehind(t *testing.T) {
	ctx := context.Background()
	first, behind := pgtest.Private(t), pgtest.Private(t)
	url, err := first.NewDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	restored, err := behind.NewDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Transactions that the cluster restored into has not had.
	if err := pgtest.Connect(t, url).Exec(ctx, `DO $$ BEGIN FOR i IN 1..3000 LOOP PERFORM pg_current_xact_id(); COMMIT; END LOOP; END $$`); err != nil {
		t.Fatal(err)
	}
	marks := filepath.Join(t.TempDir(), "marks.json")
	logs := &domaintest.SyncBuffer{}
	connect := func(url string) *postgres.DB {
		t.Helper()
		db, err := postgres.Connect(ctx, url, store.Options{}, postgres.Config{RestoreMarks: marks, Logger: slog.New(slog.NewTextHandler(logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		return db
	}
	db := connect(url)
	cat := store.Category{Name: "dogs"}
	if err := db.CreateCategory(ctx, &cat, nil); err != nil {
		t.Fatal(err)
	}
	dump := pgDump(t, url)
	p := store.Pet{Name: "after the dump", CategoryID: cat.ID, Status: "available"}
	if err := db.CreatePet(ctx, &p, nil); err != nil {
		t.Fatal(err)
	}
	seen, err := db.Events(ctx, store.EventFilter{Limit: 100})
	if err != nil || len(seen) == 0 {
		t.Fatalf("the events before the restore: %v %v", seen, err)
	}
	cursor := seen[len(seen)-1].ID
	waitHandled(t, db)
	db.Close()
	if out, err := pgRestore(restored, dump); err != nil {
		t.Fatalf("pg_restore into another cluster: %v\n%s", err, out)
	}

	db = connect(restored)
	waitHandled(t, db)
	if out := logs.String(); !strings.Contains(out, "pg_resetwal -e 1") {
		t.Errorf("no log line names the cluster's transaction counter behind and its remedy:\n%s", out)
	}
	db.Close()
	if err := behind.Halt(); err != nil {
		t.Fatal(err)
	}
	if err := behind.Reset("-e", "1"); err != nil {
		t.Fatal(err)
	}
	if err := behind.Resume(); err != nil {
		t.Fatal(err)
	}
	db = connect(restored)
	defer db.Close()
	waitHandled(t, db)
	p = store.Pet{Name: "after the restore", CategoryID: cat.ID, Status: "available"}
	if err := db.CreatePet(ctx, &p, nil); err != nil {
		t.Fatal(err)
	}
	if after := eventsAfter(t, db, cursor); len(after) == 0 || after[len(after)-1].Type != store.EventPetCreated {
		t.Errorf("the events after the cursor of the first cluster, with the remedy: %v", after)
	}
}

func eventsAfter(t *testing.T, db *postgres.DB, cursor store.EventID) []store.Event {
	t.Helper()
	after, err := db.Events(context.Background(), store.EventFilter{After: cursor, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return after
}

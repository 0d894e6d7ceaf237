package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"petstore/domains/domaintest"
	"petstore/events"
	"petstore/events/webhooktest"
	"petstore/store"
	"petstore/store/boltstore"
	"petstore/store/postgres/pgtest"
)

// TestMovesKeepRevocations revokes a key on PostgreSQL and moves the
// database back to a file, then that file to another database: after each
// move, what was taken before the revocation and put back under the new
// store (the file's backup under the file, the first database's dump
// into the second) does not bring the key back. Each store keeps
// revocations apart from its data (a file in its marks, a database in
// its revocations table), and a move that left them behind let the
// key work again after such a restore.
func TestMovesKeepRevocations(t *testing.T) {
	parallel(t)
	first, second := pgtest.URL(t), pgtest.URL(t)
	dir := t.TempDir()
	data, back, dump := filepath.Join(dir, "petstore.db"), filepath.Join(dir, "back.db"), filepath.Join(dir, "before.dump")
	fileArgs := func(path string) []string {
		return []string{"--data", path, "--admin-token", domaintest.AdminToken, "--rate-limit", "0"}
	}
	createPets := func(in *instance, key string, n int) {
		t.Helper()
		for range n {
			// An instance on PostgreSQL answers 503 until it has reached
			// its database.
			var code int
			var body string
			waitFor(t, "a pet created (the store reached)", time.Minute, func() bool {
				code, body = in.call(t, "POST", "/pets", `{"name":"Rex","categoryId":1}`, "X-API-Key", key)
				return code != http.StatusServiceUnavailable
			})
			if code != 201 {
				t.Fatalf("creating a pet: %d %s", code, body)
			}
		}
	}
	refused := func(in *instance, source, secret, when string) {
		t.Helper()
		if code, body := callFrom(t, source, in, "POST", "/pets", `{"name":"Rex","categoryId":1}`, "X-API-Key", secret); code != 401 {
			t.Errorf("the key revoked on PostgreSQL, %s: %d %s, want 401", when, code, body)
		}
	}

	// A file with the key, backed up, and moved to PostgreSQL, dumped
	// there with the key alive.
	in := start(t, nil, fileArgs(data)...)
	revoked := createKeyWithID(t, in, "revoked on PostgreSQL")
	writer := createKey(t, in, "writer")
	if code, body := in.call(t, "POST", "/categories", `{"name":"dogs"}`, "X-API-Key", writer); code != 201 {
		t.Fatalf("a category: %d %s", code, body)
	}
	code, backup := in.call(t, "GET", "/admin/backup", "", adminAuth...)
	if code != 200 {
		t.Fatalf("GET /admin/backup: %d", code)
	}
	in.stop(t)
	migrate(t, "--data", data, "--database", first)
	runTool(t, pgtest.Program("pg_dump"), "--format=custom", "--file="+dump, first)

	// Revoked on PostgreSQL, after writes that take the ids past the
	// backup's and the dump's, then moved back to a file.
	pg := start(t, nil, pgFlags(first, "--rate-limit", "0")...)
	createPets(pg, writer, 3)
	if code, body := pg.call(t, "DELETE", fmt.Sprintf("/admin/api-keys/%d", revoked.ID), "", adminAuth...); code != 204 {
		t.Fatalf("revoking: %d %s", code, body)
	}
	pg.stop(t)
	if out := migrate(t, "--to-data", back, "--database", first); !strings.Contains(out, "1 revocations of API keys") {
		t.Errorf("the way back does not count the revocation it copied: %s", out)
	}

	// The backup from before the revocation, put back under the file.
	if err := os.WriteFile(back, []byte(backup), 0o600); err != nil {
		t.Fatal(err)
	}
	in = start(t, nil, fileArgs(back)...)
	refused(in, "127.0.0.50", revoked.Secret, "once the file moved back has the backup from before it put back")
	createPets(in, writer, 1)
	in.stop(t)

	// That file to another database, and the dump from before the
	// revocation restored into it while an instance runs on it.
	if out := migrate(t, "--data", back, "--database", second); !strings.Contains(out, "1 revocations of API keys") {
		t.Errorf("the move to PostgreSQL does not count the revocation it copied: %s", out)
	}
	pg = start(t, nil, pgFlags(second, "--rate-limit", "0", "--restore-marks", filepath.Join(dir, "second.marks.json"))...)
	createPets(pg, writer, 1)
	runTool(t, pgtest.Program("pg_restore"), "--clean", "--if-exists", "--single-transaction", "--no-owner", "--dbname="+second, dump)
	waitFor(t, "the instance handles the rewind", 30*time.Second, func() bool {
		return strings.Contains(pg.out.String(), "its sequences now continue")
	})
	refused(pg, "127.0.0.51", revoked.Secret, "once the second database has the dump from before it restored")
}

// TestImportGivesRestoredToTheFilesNumber: a store.restored that
// PostgreSQL recorded names, in restoredTo, the newest event the restore
// kept. Moved back to a file, where every event PostgreSQL numbered is
// numbered again, it names that event by the file's number, the id a
// consumer of the file compares with.
func TestImportGivesRestoredToTheFilesNumber(t *testing.T) {
	parallel(t)
	url := pgtest.URL(t)
	dir := t.TempDir()
	data, dump := filepath.Join(dir, "petstore.db"), filepath.Join(dir, "petstore.dump")
	pg := start(t, nil, pgFlags(url, "--rate-limit", "0", "--restore-marks", filepath.Join(dir, "pg.marks.json"))...)
	key := createKey(t, pg, "writer")
	for _, body := range []string{`{"name":"dogs"}`, `{"name":"cats"}`} {
		if code, out := pg.call(t, "POST", "/categories", body, "X-API-Key", key); code != 201 {
			t.Fatalf("a category: %d %s", code, out)
		}
	}
	runTool(t, pgtest.Program("pg_dump"), "--format=custom", "--file="+dump, url)
	for range 2 {
		if code, out := pg.call(t, "POST", "/categories", `{"name":"after the dump"}`, "X-API-Key", key); code != 201 {
			t.Fatalf("a category: %d %s", code, out)
		}
	}
	// The instance knows the categories after the dump once it has polled
	// them; the restore takes them away.
	waitFor(t, "the instance's marks hold the categories after the dump", 30*time.Second, func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "pg.marks.json"))
		return strings.Contains(string(b), `"categories": 4`)
	})
	runTool(t, pgtest.Program("pg_restore"), "--clean", "--if-exists", "--single-transaction", "--dbname="+url, dump)
	type event struct {
		ID, Type string
		Data     struct{ RestoredTo string }
	}
	list := func(in *instance) []event {
		t.Helper()
		code, body := in.call(t, "GET", "/events?limit=100", "")
		var es []event
		if err := json.Unmarshal([]byte(body), &es); code != 200 || err != nil {
			t.Fatalf("GET /events: %d %s", code, body)
		}
		return es
	}
	// restoredAt is the index of store.restored and of the event its
	// restoredTo names, in a list of events.
	restoredAt := func(es []event) (int, int) {
		for i, e := range es {
			if e.Type == "store.restored" {
				for j, named := range es {
					if named.ID == e.Data.RestoredTo {
						return i, j
					}
				}
				return i, -1
			}
		}
		return -1, -1
	}
	var before []event
	waitFor(t, "store.restored listed on PostgreSQL", 30*time.Second, func() bool {
		before = list(pg)
		i, _ := restoredAt(before)
		return i >= 0
	})
	pg.stop(t)
	restored, named := restoredAt(before)
	if named < 0 || before[named].Type != "category.created" {
		t.Fatalf("on PostgreSQL, store.restored names %q, not a category.created listed: %+v", before[restored].Data.RestoredTo, before)
	}

	migrate(t, "--to-data", data, "--database", url)
	file := start(t, nil, "--data", data)
	after := list(file)
	if len(after) != len(before) {
		t.Fatalf("%d events on the file, %d on PostgreSQL", len(after), len(before))
	}
	if i, j := restoredAt(after); i != restored || j != named {
		t.Errorf("on the file, store.restored names %q, want %s, the file's number of the event it named on PostgreSQL (%s)",
			after[restored].Data.RestoredTo, after[named].ID, before[restored].Data.RestoredTo)
	}
}

// TestMigrateBackKeepsWebhookIDs: a delivery attempted from PostgreSQL,
// which failed and is pending when the database moves back to a file, is
// attempted from the file under the same webhook-id (and the same id in
// its body), though the file numbers its event again: a receiver that
// took the first attempt, its answer lost, deduplicates the next on that
// id (Standard Webhooks).
func TestMigrateBackKeepsWebhookIDs(t *testing.T) {
	parallel(t)
	url := pgtest.URL(t)
	data := filepath.Join(t.TempDir(), "petstore.db")
	rcv := webhooktest.Start(t, webhooktest.Options{Lenient: true, IgnoreTimestamp: true, Answers: []int{500, 500, 500}})
	pg := start(t, nil, pgFlags(url, "--webhook-allow-private")...)
	key := createKey(t, pg, "writer")
	hook := subscribeAll(t, pg, rcv)
	if code, body := pg.call(t, "POST", "/categories", `{"name":"dogs"}`, "X-API-Key", key); code != 201 {
		t.Fatalf("a category: %d %s", code, body)
	}
	// The first attempt failed, and the next one is pending.
	deliveries := fmt.Sprintf("/admin/webhooks/%d/deliveries?limit=100", hook.ID)
	waitFor(t, "a failed attempt recorded and the next one pending", 30*time.Second, func() bool {
		_, body := pg.call(t, "GET", deliveries, "", adminAuth...)
		return strings.Contains(body, `"state":"failed"`) && strings.Contains(body, `"state":"pending"`)
	})
	pg.stop(t)
	sent := rcv.Deliveries()
	if len(sent) == 0 || sent[0].Event.Type != "category.created" {
		t.Fatalf("the receiver got %+v from PostgreSQL, want category.created", sent)
	}

	migrate(t, "--to-data", data, "--database", url)
	db, err := boltstore.Open(data, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	listed, err := db.Events(context.Background(), store.EventFilter{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range listed {
		if e.Type == "category.created" && e.ID.String() == sent[0].ID {
			t.Fatalf("the file numbered the event as PostgreSQL did (%s): the test shows nothing", e.ID)
		}
	}
	// The pending attempt, due within the hour, from the file.
	ctx, stop := context.WithCancel(context.Background())
	e := events.New(events.Config{Store: db, Policy: events.Policy{AllowPrivate: true, AllowLoopback: true},
		Now: func() time.Time { return time.Now().Add(time.Hour) }, Poll: 10 * time.Millisecond, Log: slog.New(slog.DiscardHandler)})
	var wg sync.WaitGroup
	wg.Go(func() { e.Run(ctx) })
	defer func() { stop(); wg.Wait() }()
	waitFor(t, "the file's attempt received", 30*time.Second, func() bool {
		return len(rcv.Deliveries()) > len(sent)
	})
	got := rcv.Deliveries()[len(sent)]
	if got.ID != sent[0].ID || got.Event.ID != sent[0].ID || got.Event.Type != sent[0].Event.Type || string(got.Event.Data) != string(sent[0].Event.Data) {
		t.Errorf("the attempt from the file: webhook-id %s, %+v\nwant webhook-id %s, %+v, as sent from PostgreSQL", got.ID, got.Event, sent[0].ID, sent[0].Event)
	}
	if err := got.VerifiedBy(hook.Secret); err != nil {
		t.Errorf("the attempt from the file is not signed with the webhook's secret: %v", err)
	}
	if r := rcv.Rejected(); len(r) != 0 {
		t.Errorf("deliveries the receiver refused: %q", r)
	}
}

// TestSecondMoveKeepsCursorsAndWebhookIDs moves a database to a file,
// where its events are numbered again, and the file to another database,
// then back to a file again: at each step a client's cursor of the first
// database resumes at the event that followed it (the file's events
// after it included), and a delivery pending since the first database
// is attempted under the webhook-id a receiver got from it. A move to
// PostgreSQL once left the file's map of the first database's ids
// behind.
func TestSecondMoveKeepsCursorsAndWebhookIDs(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	first, second := pgtest.URL(t), pgtest.URL(t)
	dir := t.TempDir()
	data, again := filepath.Join(dir, "petstore.db"), filepath.Join(dir, "again.db")
	rcv := webhooktest.Start(t, webhooktest.Options{Lenient: true, IgnoreTimestamp: true, Answers: []int{500, 500, 500, 500, 500, 500}})
	pg := start(t, nil, pgFlags(first, "--webhook-allow-private")...)
	key := createKey(t, pg, "writer")
	hook := subscribeAll(t, pg, rcv)
	for _, name := range []string{"dogs", "cats", "fish"} {
		if code, body := pg.call(t, "POST", "/categories", `{"name":"`+name+`"}`, "X-API-Key", key); code != 201 {
			t.Fatalf("a category: %d %s", code, body)
		}
	}
	type event struct {
		ID, Type string
		Data     struct{ Name string }
	}
	list := func(in *instance, path string) []event {
		t.Helper()
		// An instance on PostgreSQL answers 503 until it has reached its
		// database.
		var code int
		var body string
		waitFor(t, "GET "+path+" served (the store reached)", time.Minute, func() bool {
			code, body = in.call(t, "GET", path, "")
			return code != http.StatusServiceUnavailable
		})
		var es []event
		if err := json.Unmarshal([]byte(body), &es); code != 200 || err != nil {
			t.Fatalf("GET %s: %d %s", path, code, body)
		}
		return es
	}
	names := func(es []event) string {
		var out []string
		for _, e := range es {
			out = append(out, e.Type+" "+e.Data.Name)
		}
		return strings.Join(out, ", ")
	}
	var before []event
	waitFor(t, "the categories' events listed", 30*time.Second, func() bool {
		before = list(pg, "/events")
		return strings.Count(names(before), "category.created") == 3
	})
	var cursor string
	for _, e := range before {
		if e.Data.Name == "dogs" {
			cursor = e.ID
		}
	}
	afterCursor := names(list(pg, "/events?after="+cursor))
	deliveries := fmt.Sprintf("/admin/webhooks/%d/deliveries?limit=100", hook.ID)
	waitFor(t, "every first attempt failed and the next pending", 30*time.Second, func() bool {
		_, body := pg.call(t, "GET", deliveries, "", adminAuth...)
		return strings.Count(body, `"state":"failed"`) >= 3 && strings.Contains(body, `"state":"pending"`)
	})
	pg.stop(t)
	sentAs := map[string]string{} // webhook-id by category
	tries := map[string]int{}
	for _, d := range rcv.Deliveries() {
		var c struct{ Name string }
		_ = json.Unmarshal(d.Event.Data, &c)
		sentAs[c.Name] = d.ID
		tries[c.Name]++
	}
	sent := len(rcv.Deliveries())
	// A category tried once has its retry due seconds after; one that a
	// stalled machine let the first database try twice has its next in
	// minutes, past this test's wait.
	due := []string{"birds"}
	for name, n := range tries {
		if n == 1 {
			due = append(due, name)
		} else {
			t.Logf("%s was tried %d times before the first database stopped: its next attempt is not awaited", name, n)
		}
	}

	// To a file, where the file writes an event of its own, and to
	// another database.
	migrate(t, "--to-data", data, "--database", first)
	file, err := boltstore.Open(data, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := file.CreateCategory(ctx, &store.Category{Name: "birds"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := file.Close(); err != nil {
		t.Fatal(err)
	}
	migrate(t, "--data", data, "--database", second)
	want := afterCursor + ", category.created birds"
	pg = start(t, nil, pgFlags(second, "--webhook-allow-private")...)
	if got := names(list(pg, "/events?after="+cursor)); got != want {
		t.Errorf("on the second database, after the first one's cursor %s: %s\nwant %s", cursor, got, want)
	}
	waitFor(t, "the pending attempts made from the second database", 30*time.Second, func() bool {
		seen := map[string]bool{}
		for _, d := range rcv.Deliveries()[sent:] {
			var c struct{ Name string }
			_ = json.Unmarshal(d.Event.Data, &c)
			seen[c.Name] = true
		}
		for _, name := range due {
			if !seen[name] {
				return false
			}
		}
		return true
	})
	pg.stop(t)
	for _, d := range rcv.Deliveries()[sent:] {
		var c struct{ Name string }
		_ = json.Unmarshal(d.Event.Data, &c)
		if id, ok := sentAs[c.Name]; ok && d.ID != id {
			t.Errorf("%s attempted from the second database as webhook-id %s, want %s, as the first database sent it", c.Name, d.ID, id)
		}
		if err := d.VerifiedBy(hook.Secret); err != nil {
			t.Errorf("delivery %s is not signed with the webhook's secret: %v", d.ID, err)
		}
	}

	// And back to a file again.
	migrate(t, "--to-data", again, "--database", second)
	file, err = boltstore.Open(again, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	id, err := store.ParseEventID(cursor)
	if err != nil {
		t.Fatal(err)
	}
	mapped, err := file.EventCursor(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	es, err := file.Events(ctx, store.EventFilter{After: mapped, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range es {
		var c struct{ Name string }
		_ = json.Unmarshal(e.Data, &c)
		if e.Type == "category.created" {
			got = append(got, e.Type+" "+c.Name)
		}
	}
	if strings.Join(got, ", ") != want {
		t.Errorf("on the file after the second database, after the first one's cursor %s: %s\nwant %s", cursor, strings.Join(got, ", "), want)
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	neturl "net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"petstore/domains/domaintest"
	"petstore/events"
	"petstore/events/webhooktest"
	"petstore/store"
	"petstore/store/boltstore"
	"petstore/store/postgres"
	"petstore/store/postgres/pgtest"
)

// migrate runs "petstore migrate" with args, failing the test on an error.
func migrate(t *testing.T, args ...string) string {
	t.Helper()
	var out bytes.Buffer
	if err := run(context.Background(), append([]string{"migrate"}, args...), func(string) string { return "" }, &out); err != nil {
		t.Fatalf("migrate %q: %v\n%s", args, err, out.String())
	}
	return out.String()
}

// TestMigrateRoundTripGivesTheSameAnswersAndDeliveries fills a data file
// through the service (a webhook that received every event, an API key,
// entities, a keyed write, a deleted pet), adds a delivery still pending,
// and moves the file to PostgreSQL and back to a new file with "petstore
// migrate" and "petstore migrate --to-data". The service on the file
// back answers every GET as the service on the first file did (times to
// the microsecond, PostgreSQL's precision), replays the keyed write, and
// the pending delivery, attempted when due by the events engine on each
// file, reaches a real receiver the same, signed with the webhook's
// secret.
func TestMigrateRoundTripGivesTheSameAnswersAndDeliveries(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	url := pgtest.URL(t)
	dir := t.TempDir()
	data, back := filepath.Join(dir, "petstore.db"), filepath.Join(dir, "back.db")
	rcv := webhooktest.Start(t, webhooktest.Options{Lenient: true, IgnoreTimestamp: true})
	first, hook := startWithWebhook(t, data, rcv)
	deliveriesPath := fmt.Sprintf("/admin/webhooks/%d/deliveries", hook.ID)
	key := createKey(t, first, "round trip")
	keyed := []string{"X-API-Key", key, "Idempotency-Key", "create-dogs-once"}
	code, created := first.call(t, "POST", "/categories", `{"name":"dogs"}`, keyed...)
	if code != 201 {
		t.Fatalf("a keyed write: %d %s", code, created)
	}
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/categories", `{"name":"cats","description":"purrs"}`},
		{"POST", "/pets", `{"name":"Rex","categoryId":1}`},
		{"POST", "/pets", `{"name":"Gone","categoryId":1}`},
		{"POST", "/pets", `{"name":"Tom","categoryId":2,"status":"pending"}`},
		{"PUT", "/store/inventory/1", `{"quantity":9}`},
		{"POST", "/store/orders", `{"petId":1,"quantity":2}`},
		{"DELETE", "/pets/2", ""},
	} {
		if code, body := first.call(t, c.method, c.path, c.body, "X-API-Key", key); code/100 != 2 {
			t.Fatalf("%s %s: %d %s", c.method, c.path, code, body)
		}
	}
	// Every event delivered and its outcome recorded: nothing is left in
	// flight when the service stops.
	domaintest.WaitFor(t, 30*time.Second, 20*time.Millisecond, func() error {
		_, public := first.call(t, "GET", "/events?limit=100", "")
		_, admin := first.call(t, "GET", "/admin/events?limit=100", "", adminAuth...)
		want := strings.Count(public, `"id":"evt_`) + strings.Count(admin, `"id":"evt_`)
		_, body := first.call(t, "GET", deliveriesPath+"?limit=100", "", adminAuth...)
		if n := strings.Count(body, `"state":"succeeded"`); n != want || want == 0 {
			return fmt.Errorf("%d deliveries succeeded, want %d: %s", n, want, body)
		}
		return nil
	})
	first.stop(t)

	addPendingChange(t, data).Close()

	paths := []string{"/pets", "/pets/1", "/pets/3", "/categories", "/store/inventory", "/store/orders/1", "/events?limit=100", "/admin/events?limit=100",
		"/admin/webhooks", fmt.Sprintf("/admin/webhooks/%d", hook.ID), deliveriesPath + "?limit=100", "/admin/api-keys", "/admin/project"}
	reader := start(t, nil, "--data", data, "--admin-token", domaintest.AdminToken)
	want := map[string]string{}
	for _, p := range paths {
		code, body := reader.call(t, "GET", p, "", adminAuth...)
		if code != 200 {
			t.Fatalf("GET %s on the first file: %d %s", p, code, body)
		}
		want[p] = toMicroseconds(body)
	}
	reader.stop(t)

	migrate(t, "--data", data, "--database", url)
	out := migrate(t, "--to-data", back, "--database", url)
	summary := out[strings.LastIndex(out, "copied "):]
	for _, w := range []string{"2 categories, 3 pets, 3 inventory entries, 1 orders, 1 API keys", "1 webhooks with their signing keys",
		fmt.Sprintf("%d events,", strings.Count(want["/events?limit=100"]+want["/admin/events?limit=100"], `"id":"evt_`)),
		fmt.Sprintf("%d deliveries", strings.Count(want[deliveriesPath+"?limit=100"], `"state":`)),
		"1 kept answers of Idempotency-Keys", "the admin token", "--data " + back} {
		if !strings.Contains(summary, w) {
			t.Errorf("the summary of the way back has no %q: %s", w, summary)
		}
	}
	if strings.Contains(out, "numbered again") {
		t.Errorf("events the file numbered came back numbered again: %s", summary)
	}

	moved := start(t, nil, "--data", back, "--admin-token", domaintest.AdminToken)
	for _, p := range paths {
		if code, got := moved.call(t, "GET", p, "", adminAuth...); code != 200 || toMicroseconds(got) != want[p] {
			t.Errorf("GET %s on the file back: %d %s\nwant %s", p, code, got, want[p])
		}
	}
	if code, got := moved.call(t, "POST", "/categories", `{"name":"dogs"}`, keyed...); code != 201 || got != created {
		t.Errorf("the keyed write again on the file back: %d %s\nwant the kept answer %s", code, got, created)
	}
	moved.stop(t)

	// The pending delivery, once due, from the first file and from the
	// file back: the same event, the same delivery, the same secret.
	deliver := func(path string) webhooktest.Delivery {
		t.Helper()
		db, err := boltstore.Open(path, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		received := len(rcv.Deliveries())
		ectx, stop := context.WithCancel(ctx)
		e := events.New(events.Config{Store: db, Policy: events.Policy{AllowPrivate: true, AllowLoopback: true},
			Now: func() time.Time { return time.Now().Add(2 * time.Hour) }, Poll: 10 * time.Millisecond, Log: slog.New(slog.DiscardHandler)})
		var wg sync.WaitGroup
		wg.Go(func() { e.Run(ectx) })
		defer func() { stop(); wg.Wait() }()
		domaintest.WaitFor(t, 30*time.Second, 10*time.Millisecond, func() error {
			if n := len(rcv.Deliveries()); n != received+1 {
				return fmt.Errorf("%d deliveries received from %s, want %d", n, path, received+1)
			}
			return nil
		})
		return rcv.Deliveries()[received]
	}
	a, b := deliver(data), deliver(back)
	if a.Event.Type != "pet.created" || !strings.Contains(string(a.Event.Data), `"name":"Pending"`) {
		t.Errorf("the pending delivery of the first file: %+v", a.Event)
	}
	if a.ID != b.ID || a.Event.ID != b.Event.ID || a.Event.Type != b.Event.Type || string(a.Event.Data) != string(b.Event.Data) ||
		!a.Event.CreatedAt.Truncate(time.Microsecond).Equal(b.Event.CreatedAt) {
		t.Errorf("the pending delivery of the file back: %s %+v\nwant %s %+v", b.ID, b.Event, a.ID, a.Event)
	}
	for _, d := range []webhooktest.Delivery{a, b} {
		if err := d.VerifiedBy(hook.Secret); err != nil {
			t.Errorf("delivery %s is not signed with the webhook's secret: %v", d.ID, err)
		}
	}
	if r := rcv.Rejected(); len(r) != 0 {
		t.Errorf("deliveries the receiver refused: %q", r)
	}
}

// TestMigrateBackNumbersPostgreSQLEventsAgain writes through a service on
// PostgreSQL, whose events PostgreSQL numbers, moves the database to a
// file, and serves the file: the same events, numbered again in their
// order; a client's PostgreSQL cursor (?after= or Last-Event-ID) resumes
// at the same event; and the cursor of the last one resumes at the first
// event written on the file.
func TestMigrateBackNumbersPostgreSQLEventsAgain(t *testing.T) {
	parallel(t)
	url := pgtest.URL(t)
	data := filepath.Join(t.TempDir(), "petstore.db")
	pg := start(t, nil, "--database", url, "--admin-token", domaintest.AdminToken)
	key := createKey(t, pg, "events")
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/categories", `{"name":"dogs"}`},
		{"POST", "/pets", `{"name":"Rex","categoryId":1}`},
		{"POST", "/pets", `{"name":"Fido","categoryId":1}`},
		{"PUT", "/pets/1", `{"name":"Rex II","categoryId":1}`},
		{"DELETE", "/pets/2", ""},
	} {
		if code, body := pg.call(t, c.method, c.path, c.body, "X-API-Key", key); code/100 != 2 {
			t.Fatalf("%s %s: %d %s", c.method, c.path, code, body)
		}
	}
	type event struct {
		ID, Type string
		Data     json.RawMessage
	}
	list := func(in *instance, path string, header ...string) []event {
		t.Helper()
		code, body := in.call(t, "GET", path, "", header...)
		var es []event
		if err := json.Unmarshal([]byte(body), &es); code != 200 || err != nil {
			t.Fatalf("GET %s: %d %s", path, code, body)
		}
		return es
	}
	var before []event
	domaintest.WaitFor(t, 30*time.Second, 20*time.Millisecond, func() error {
		if before = list(pg, "/events"); len(before) != 5 {
			return fmt.Errorf("%d events listed on PostgreSQL, want 5", len(before))
		}
		return nil
	})
	cursor, last := before[1].ID, before[4].ID
	if strings.HasPrefix(cursor, "evt_0000000000000000") {
		t.Fatalf("PostgreSQL gave event %s a file's kind of id (Tx 0)", cursor)
	}
	afterCursor := list(pg, "/events?after="+cursor)
	pg.stop(t)

	out := migrate(t, "--to-data", data, "--database", url)
	if !strings.Contains(out, "events that PostgreSQL numbered were numbered again") {
		t.Errorf("the way back does not say it numbered the events again: %s", out)
	}
	file := start(t, nil, "--data", data)
	same := func(got, want []event) bool {
		if len(got) != len(want) {
			return false
		}
		for i := range got {
			if got[i].Type != want[i].Type || string(got[i].Data) != string(want[i].Data) || !strings.HasPrefix(got[i].ID, "evt_0000000000000000") {
				return false
			}
		}
		return true
	}
	all := list(file, "/events")
	if !same(all, before) {
		t.Fatalf("the events on the file: %+v\nwant %+v, numbered by the file", all, before)
	}
	for i := 1; i < len(all); i++ {
		if all[i].ID <= all[i-1].ID {
			t.Errorf("event %s comes after %s", all[i].ID, all[i-1].ID)
		}
	}
	if got := list(file, "/events?after="+cursor); !same(got, afterCursor) || got[0].ID != all[2].ID {
		t.Errorf("after PostgreSQL's cursor %s on the file: %+v\nwant %+v", cursor, got, afterCursor)
	}
	if got := list(file, "/events", "Last-Event-ID", cursor); !same(got, afterCursor) {
		t.Errorf("Last-Event-ID %s on the file: %+v\nwant %+v", cursor, got, afterCursor)
	}
	if got := list(file, "/events?after="+last); len(got) != 0 {
		t.Errorf("after the last event's cursor, before any write on the file: %+v", got)
	}
	if code, body := file.call(t, "POST", "/categories", `{"name":"cats"}`, "X-API-Key", key); code != 201 {
		t.Fatalf("a write on the file: %d %s", code, body)
	}
	if got := list(file, "/events?after="+last); len(got) != 1 || got[0].Type != "category.created" || got[0].ID <= all[4].ID {
		t.Errorf("after the last event's cursor, once the file has a write: %+v", got)
	}
}

// noFilesBut fails the test when dir holds a file other than those named.
func noFilesBut(t *testing.T, dir string, names ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !strings.Contains(strings.Join(names, "\x00")+"\x00", e.Name()+"\x00") {
			t.Errorf("%s holds %s", dir, e.Name())
		}
	}
}

// TestMigrateBackRefusesWhatItCannotDo: the way back refuses, in words and
// leaving no file behind, a target file that holds anything (which it
// leaves as it was), a directory, both --data and --to-data, a --database
// that is no postgres:// URL or cannot be reached, and a database holding
// a key that a bbolt file cannot keep, which it names.
func TestMigrateBackRefusesWhatItCannotDo(t *testing.T) {
	parallel(t)
	url := pgtest.URL(t)
	dir := t.TempDir()
	taken := filepath.Join(dir, "taken.db")
	if err := os.WriteFile(taken, []byte("a service's data"), 0o600); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(dir, "new.db")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--to-data", taken, "--database", url}, "exists and holds 16 bytes: the way back writes a new file and never replaces one"},
		{[]string{"--to-data", dir, "--database", url}, "is a directory"},
		{[]string{"--to-data", target, "--data", taken, "--database", url}, "give one of them"},
		{[]string{"--to-data", target, "--database", "not-a-url"}, "must be the postgres:// URL"},
		{[]string{"--to-data", target, "--database", "postgres://petstore@127.0.0.1:1/petstore?connect_timeout=2"}, "opening the database"},
	} {
		var out bytes.Buffer
		err := run(context.Background(), append([]string{"migrate"}, c.args...), func(string) string { return "" }, &out)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("migrate %q: %v, want %q\n%s", c.args, err, c.want, out.String())
		}
	}
	if b, err := os.ReadFile(taken); err != nil || string(b) != "a service's data" {
		t.Errorf("the file refused is now %q (%v)", b, err)
	}
	noFilesBut(t, dir, "taken.db")

	// A key of the certificate store past bbolt's limit: PostgreSQL keeps
	// it, a file cannot.
	ctx := context.Background()
	domaintest.OpenPostgres(t, url) // brings the schema
	s := pgtest.Connect(t, url)
	if err := s.Exec(ctx, `INSERT INTO certmagic (key, value, modified) VALUES (repeat('certificates/', 3000), 'pem', now())`); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err := run(ctx, []string{"migrate", "--to-data", target, "--database", url}, func(string) string { return "" }, &out)
	if err == nil || !strings.Contains(err.Error(), `the certificate store's key "certificates/certificates/`) ||
		!strings.Contains(err.Error(), "(39000 bytes) cannot be a key of a bbolt file") || !strings.Contains(err.Error(), target+" was not written") {
		t.Errorf("migrate of a key bbolt cannot keep: %v\n%s", err, out.String())
	}
	noFilesBut(t, dir, "taken.db")
}

// cancelOn is a migrate's stdout that cancels it once it has printed a
// line: an operator's Ctrl-C at that point.
type cancelOn struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	line   string
	cancel context.CancelFunc
}

func (c *cancelOn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf.Write(p)
	if strings.Contains(c.buf.String(), c.line) {
		c.cancel()
	}
	return len(p), nil
}

// TestMigrateBackInterruptedLeavesNoFile interrupts the way back when it
// has copied a tenth of the pets (past its first committed batch): neither
// the file nor the file it was writing is left, and the next run copies
// everything.
func TestMigrateBackInterruptedLeavesNoFile(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	url := pgtest.URL(t)
	const pets = 30_000
	seedDogs(t, url, pets)
	dir := t.TempDir()
	data := filepath.Join(dir, "petstore.db")
	ictx, cancel := context.WithCancel(ctx)
	defer cancel()
	out := &cancelOn{line: fmt.Sprintf("pets: %d of %d (40%%)", pets*4/10, pets), cancel: cancel}
	err := run(ictx, []string{"migrate", "--to-data", data, "--database", url}, func(string) string { return "" }, out)
	if err == nil || !strings.Contains(err.Error(), "context canceled") || !strings.Contains(err.Error(), "was not written") {
		t.Errorf("the interrupted way back: %v\n%s", err, out.buf.String())
	}
	noFilesBut(t, dir)
	all := migrate(t, "--to-data", data, "--database", url)
	if !strings.Contains(all, fmt.Sprintf("1 categories, %d pets", pets)) {
		t.Errorf("the way back after the interrupted one: %s", all)
	}
	noFilesBut(t, dir, "petstore.db", "petstore.db.marks")
}

// TestMigrateBackOnAFullDiskSaysSo moves a database back into a file on a
// disk too small for it: the move fails saying the disk is full, and
// leaves no file. It once said that the database was unavailable (the
// file's ENOSPC passed for a broken connection) and ran the copy again.
func TestMigrateBackOnAFullDiskSaysSo(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	url := pgtest.URL(t)
	seedDogs(t, url, 30_000)
	dir := domaintest.MountSmallDisk(t, 4<<20)
	var out bytes.Buffer
	err := run(ctx, []string{"migrate", "--to-data", filepath.Join(dir, "petstore.db"), "--database", url}, func(string) string { return "" }, &out)
	if err == nil || !strings.Contains(err.Error(), "no space left on device") || strings.Contains(err.Error(), "unavailable") {
		t.Errorf("the way back onto a full disk: %v; want it to say the disk is full\n%s", err, out.String())
	}
	if n := strings.Count(out.String(), "records to copy"); n != 1 {
		t.Errorf("the copy was started %d times", n)
	}
	noFilesBut(t, dir)
}

// TestMigrateBackCountsARetriedStreamOnce cuts the way back's connection
// once, at a tenth of the pets: the database's stream is run again from
// the start, the file emptied again, and the summary counts what the file
// holds, not what both runs sent (it once said 33000 pets of 30000, and
// its progress lines went past 100%).
func TestMigrateBackCountsARetriedStreamOnce(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	direct := pgtest.URL(t)
	const pets = 30_000
	seedDogs(t, direct, pets)
	u, err := neturl.Parse(direct)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// The stream's connection is the one that carried the most: the
	// pool's others are left alone, so that the retry finds one.
	var mu sync.Mutex
	carried := map[*net.TCPConn]*atomic.Int64{}
	backend := u.Host
	domaintest.ServeConns(t, ln, func(c net.Conn) {
		b, err := net.Dial("tcp", backend)
		if err != nil {
			c.Close()
			return
		}
		n := new(atomic.Int64)
		mu.Lock()
		carried[c.(*net.TCPConn)] = n
		mu.Unlock()
		go func() { _, _ = io.Copy(b, c); b.Close() }()
		go func() {
			buf := make([]byte, 32<<10)
			for {
				k, err := b.Read(buf)
				n.Add(int64(k))
				if _, werr := c.Write(buf[:k]); err != nil || werr != nil {
					c.Close()
					return
				}
			}
		}()
	})
	u.Host = ln.Addr().String()
	var once sync.Once
	cut := func() {
		once.Do(func() {
			mu.Lock()
			defer mu.Unlock()
			var most *net.TCPConn
			for c, n := range carried {
				if most == nil || n.Load() > carried[most].Load() {
					most = c
				}
			}
			_ = most.SetLinger(0) // a reset, as a failing network gives
			most.Close()
		})
	}
	out := &cancelOn{line: fmt.Sprintf("pets: %d of %d (10%%)", pets/10, pets), cancel: cut}
	data := filepath.Join(t.TempDir(), "petstore.db")
	if err := run(ctx, []string{"migrate", "--to-data", data, "--database", u.String()}, func(string) string { return "" }, out); err != nil {
		t.Fatalf("the way back with its connection cut once: %v\n%s", err, out.buf.String())
	}
	text := out.buf.String()
	if n := strings.Count(text, "records to copy"); n != 2 {
		t.Fatalf("the stream ran %d times; the cut was to make it run twice\n%s", n, text)
	}
	if !strings.Contains(text, fmt.Sprintf("1 categories, %d pets, %d inventory entries", pets, pets)) || strings.Contains(text, "(110%)") {
		t.Errorf("the summary or progress counts the first run too:\n%s", text)
	}
	// The file holds each record once: its own count, moving it on.
	if again := migrate(t, "--data", data, "--database", pgtest.URL(t)); !strings.Contains(again, fmt.Sprintf("60002 records to copy: 1 categories, %d pets", pets)) {
		t.Errorf("the file the way back wrote: %s", again)
	}
}

// TestMigrateBackRefusesADatabaseInService: the way back from a database
// that an instance still serves is refused, naming its connections (the
// file would miss what the instance writes during and after the copy),
// and writes no file; once the instance is stopped, it goes through.
func TestMigrateBackRefusesADatabaseInService(t *testing.T) {
	parallel(t)
	url := pgtest.URL(t)
	pg := start(t, nil, pgFlags(url)...)
	createKey(t, pg, "writer")
	dir := t.TempDir()
	data := filepath.Join(dir, "petstore.db")
	var out bytes.Buffer
	err := run(context.Background(), []string{"migrate", "--to-data", data, "--database", url}, func(string) string { return "" }, &out)
	if err == nil || !strings.Contains(err.Error(), "in use by a running petstore service") || !strings.Contains(err.Error(), "stop every instance first") {
		t.Errorf("the way back while an instance serves the database: %v; want it refused\n%s", err, out.String())
	}
	noFilesBut(t, dir)
	pg.stop(t)
	if got := migrate(t, "--to-data", data, "--database", url); !strings.Contains(got, "1 API keys") {
		t.Errorf("the way back once the instance stopped: %s", got)
	}
}

// seedDogs fills the database at url with a category of n pets. The seed
// is one statement, which a loaded machine once took past the store's
// default statement timeout: not what the tests using it are about.
func seedDogs(t *testing.T, url string, n int) {
	t.Helper()
	ctx := context.Background()
	db, err := postgres.Connect(ctx, url, store.Options{}, postgres.Config{Timeouts: postgres.Timeouts{Statement: time.Minute, Transaction: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	dogs := store.Category{Name: "dogs"}
	if err := db.CreateCategory(ctx, &dogs, nil); err != nil {
		t.Fatal(err)
	}
	if err := db.ImportPets(ctx, dogs.ID, n, store.StatusAvailable); err != nil {
		t.Fatal(err)
	}
}

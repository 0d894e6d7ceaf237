package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"petstore/domains/domaintest"
	"petstore/events/webhooktest"
	"petstore/store"
	"petstore/store/boltstore"
	"petstore/store/postgres"
	"petstore/store/postgres/pgtest"
	"petstore/store/storetest"
)

// TestMigrateServesFromPostgreSQLWhatTheFileServed fills a data file
// through the service, moves it with "petstore migrate", and starts the
// service on the database: the same answers, the same admin token and API
// key, and new ids after the old ones. A second move into the same
// database is refused.
func TestMigrateServesFromPostgreSQLWhatTheFileServed(t *testing.T) {
	parallel(t)
	url := pgtest.URL(t)
	data := filepath.Join(t.TempDir(), "petstore.db")
	first := start(t, nil, "--data", data)
	token := first.printedToken(t)
	admin := []string{"Authorization", "Bearer " + token}
	code, body := first.call(t, "POST", "/admin/api-keys", `{"name":"move"}`, admin...)
	if code != 201 {
		t.Fatalf("creating an API key: %d %s", code, body)
	}
	var key struct{ Secret string }
	_ = json.Unmarshal([]byte(body), &key)
	write := []string{"X-API-Key", key.Secret}
	for _, c := range []struct{ path, body string }{
		{"/categories", `{"name":"dogs"}`},
		{"/pets", `{"name":"Rex","categoryId":1}`},
		{"/pets", `{"name":"Fido","categoryId":1,"status":"pending"}`},
		{"/store/orders", `{"petId":1,"quantity":2}`},
	} {
		if c.path == "/store/orders" {
			if code, body := first.call(t, "PUT", "/store/inventory/1", `{"quantity":9}`, write...); code != 200 {
				t.Fatalf("setting stock: %d %s", code, body)
			}
		}
		if code, body := first.call(t, "POST", c.path, c.body, write...); code != 201 {
			t.Fatalf("POST %s: %d %s", c.path, code, body)
		}
	}
	if code, body := first.call(t, "DELETE", "/pets/2", "", write...); code != 204 {
		t.Fatalf("deleting a pet: %d %s", code, body)
	}
	paths := []string{"/pets", "/pets/1", "/categories", "/store/inventory", "/store/orders/1"}
	before := map[string]string{}
	for _, p := range paths {
		_, before[p] = first.call(t, "GET", p, "")
	}
	_, before["/admin/project"] = first.call(t, "GET", "/admin/project", "", admin...)
	first.stop(t)

	var out bytes.Buffer
	if err := run(context.Background(), []string{"migrate", "--data", data, "--database", url}, func(string) string { return "" }, &out); err != nil {
		t.Fatalf("migrate: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "1 categories, 1 pets, 1 inventory entries, 1 orders, 1 API keys") || !strings.Contains(out.String(), "the admin token") || strings.Contains(out.String(), "secret") {
		t.Errorf("migrate says: %s", out.String())
	}

	moved := start(t, nil, "--database", url)
	if strings.Contains(moved.out.String(), "pat_") {
		t.Error("the moved service generated a new admin token")
	}
	for _, p := range paths {
		if code, body := moved.call(t, "GET", p, ""); code != 200 || body != before[p] {
			t.Errorf("GET %s on PostgreSQL: %d %s\nwant %s", p, code, body, before[p])
		}
	}
	if code, body := moved.call(t, "GET", "/admin/project", "", admin...); code != 200 || body != before["/admin/project"] {
		t.Errorf("GET /admin/project with the moved admin token on PostgreSQL: %d %s\nwant %s", code, body, before["/admin/project"])
	}
	if code, body := moved.call(t, "POST", "/pets", `{"name":"Tweety","categoryId":1}`, write...); code != 201 || !strings.Contains(body, `"id":3,`) {
		t.Errorf("a new pet after the move (the API key works, ids continue after the deleted 2): %d %s", code, body)
	}
	moved.stop(t)

	err := run(context.Background(), []string{"migrate", "--data", data, "--database", url}, func(string) string { return "" }, &out)
	if err == nil || !strings.Contains(err.Error(), "the target database is not empty") {
		t.Errorf("a second move into the same database: %v", err)
	}
}

// TestMigrateNamesTextPostgreSQLCannotStore: a data file that holds U+0000
// (bbolt kept it) is refused by default, naming each record and copying
// nothing; with --bad-text replace it moves, U+FFFD in place of U+0000,
// and each record changed is named.
func TestMigrateNamesTextPostgreSQLCannotStore(t *testing.T) {
	parallel(t)
	url := pgtest.URL(t)
	data := filepath.Join(t.TempDir(), "petstore.db")
	domaintest.WriteStoreFile(t, data, func(db *boltstore.DB) error {
		c := store.Category{Name: "dogs\x00"}
		if err := db.CreateCategory(context.Background(), &c, nil); err != nil {
			return err
		}
		p := store.Pet{Name: "Re\x00x", CategoryID: c.ID}
		if err := db.CreatePet(context.Background(), &p, nil); err != nil {
			return fmt.Errorf("bbolt no longer keeps U+0000 (write this file another way): %w", err)
		}
		return nil
	})

	var out bytes.Buffer
	err := run(context.Background(), []string{"migrate", "--data", data, "--database", url}, func(string) string { return "" }, &out)
	if err == nil || !strings.Contains(err.Error(), "2 records") || !strings.Contains(out.String(), "Pets 1.Name") || !strings.Contains(out.String(), "Categories 1.Name") {
		t.Fatalf("migrate of a file with U+0000: %v\n%s", err, out.String())
	}
	out.Reset()
	if err := run(context.Background(), []string{"migrate", "--data", data, "--database", url, "--bad-text", "replace"}, func(string) string { return "" }, &out); err != nil {
		t.Fatalf("migrate --bad-text replace (the first, refused, copied nothing): %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "replaced text PostgreSQL cannot store (U+0000 or invalid UTF-8) with U+FFFD: Pets 1.Name") {
		t.Errorf("migrate --bad-text replace does not name the pet:\n%s", out.String())
	}
	moved := start(t, nil, "--database", url)
	if code, body := moved.call(t, "GET", "/pets/1", ""); code != 200 || !strings.Contains(body, "Re\uFFFDx") {
		t.Errorf("the moved pet: %d %s", code, body)
	}
}

// collectEnv makes the test's child read the data file whole into memory,
// as migrate did before it streamed: the figure to compare with.
const collectEnv = "PETSTORE_TEST_COLLECT"

// TestMigrateStreamsALargeFile moves a file of 25,000 pets (or
// PETSTORE_TEST_MIGRATE_PETS) with
// "petstore migrate" run as a process of its own: the database then holds
// every entity the file held, versions and sequences included; the move
// tells its progress per kind on stdout; and its peak memory (the child's
// VmHWM, from its rusage) is printed beside that of a child that only
// reads the file whole into memory, as the move did before it streamed.
// Then "petstore migrate --to-data" moves the database back to a new file,
// which holds the same, and its peak memory and time are printed too.
func TestMigrateStreamsALargeFile(t *testing.T) {
	if isChild() {
		if data := os.Getenv(collectEnv); data != "" {
			db, err := boltstore.Open(data, store.Options{})
			if err == nil {
				var s *storetest.Snapshot
				s, err = storetest.Collect(context.Background(), db)
				if err == nil {
					fmt.Printf("read %d pets\n", len(s.Pets))
				}
			}
			if err != nil {
				fmt.Println(err)
				os.Exit(1)
			}
			printPeak()
			os.Exit(0)
		}
		args := strings.Split(os.Getenv(childArgsEnv), "\x1f")
		if err := run(context.Background(), args, func(string) string { return "" }, os.Stdout); err != nil {
			fmt.Println("run:", err)
			os.Exit(1)
		}
		printPeak()
		os.Exit(0)
	}
	parallel(t)
	// Several batches each way (the way in's round trips, the way back's
	// transactions: postgres.importBatch, boltstore.importBatch), and
	// every progress line of both: a larger file shows no more here, and
	// its CPU is most of the test's.
	pets := 25_000
	if n, err := strconv.Atoi(os.Getenv("PETSTORE_TEST_MIGRATE_PETS")); err == nil && n >= pets {
		pets = n // to measure a larger move by hand
	}
	ctx := context.Background()
	data := filepath.Join(t.TempDir(), "petstore.db")
	file, err := boltstore.Open(data, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dogs := store.Category{Name: "dogs"}
	if err := file.CreateCategory(ctx, &dogs, nil); err != nil {
		t.Fatal(err)
	}
	if err := file.ImportPets(ctx, dogs.ID, pets, store.StatusAvailable); err != nil {
		t.Fatal(err)
	}
	// Orders of pets spread over the file.
	stride := int64(pets) / 51
	for id := int64(1); id <= 50; id++ {
		if _, err := file.SetStock(ctx, id*stride, 10, store.Condition{}); err != nil {
			t.Fatal(err)
		}
		if err := file.PlaceOrder(ctx, &store.Order{PetID: id * stride, Quantity: 2}, nil); err != nil {
			t.Fatal(err)
		}
	}
	renamed := store.Pet{ID: 7, Name: "renamed", CategoryID: dogs.ID}
	if err := file.ReplacePet(ctx, &renamed, store.Condition{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := file.CreateAPIKey(ctx, "moved", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := file.EnsureAdminToken(ctx, ""); err != nil {
		t.Fatal(err)
	}
	want, err := storetest.Collect(ctx, file)
	if err != nil {
		t.Fatal(err)
	}
	file.Close()

	url := pgtest.URL(t)
	move := childCommand(t, []string{"migrate", "--data", data, "--database", url})
	began := time.Now()
	out, err := move.CombinedOutput()
	if err != nil {
		t.Fatalf("migrate: %v\n%s", err, out)
	}
	took := time.Since(began)
	moveHWM := peakKiB(t, out)
	read := childCommand(t, nil)
	read.Env = append(read.Env, collectEnv+"="+data)
	readOut, err := read.CombinedOutput()
	if err != nil {
		t.Fatalf("reading the file whole: %v\n%s", err, readOut)
	}
	t.Logf("peak memory (VmHWM) of the move of %d pets: %d MiB; of a process that only reads the file whole: %d MiB (race detector: %v)",
		pets, moveHWM>>10, peakKiB(t, readOut)>>10, raceEnabled)
	t.Logf("the move's memory at its end (it took %v):\n%s", took.Round(time.Millisecond), memoryLines(out))

	for _, line := range []string{
		fmt.Sprintf("pets: %d of %d (50%%)", pets/2, pets),
		fmt.Sprintf("pets: %d of %d (100%%)", pets, pets),
		fmt.Sprintf("inventory entries: %d of %d (100%%)", pets, pets),
		"orders: 50 of 50 (100%)",
		fmt.Sprintf("1 categories, %d pets, %d inventory entries, 50 orders, 1 API keys", pets, pets),
	} {
		if !strings.Contains(string(out), line) {
			t.Errorf("migrate does not say %q:\n%s", line, out)
		}
	}

	got, err := storetest.Collect(ctx, domaintest.OpenPostgres(t, url))
	if err != nil {
		t.Fatal(err)
	}
	storetest.SameSnapshot(t, want, got)

	// The way back, into a new file: the same records, in batches, so
	// that its memory too stays flat.
	backData := filepath.Join(t.TempDir(), "back.db")
	began = time.Now()
	backOut, err := childCommand(t, []string{"migrate", "--to-data", backData, "--database", url}).CombinedOutput()
	if err != nil {
		t.Fatalf("migrate --to-data: %v\n%s", err, backOut)
	}
	t.Logf("peak memory (VmHWM) of the way back of %d pets: %d MiB; it took %v; its memory at its end:\n%s",
		pets, peakKiB(t, backOut)>>10, time.Since(began).Round(time.Millisecond), memoryLines(backOut))
	if line := fmt.Sprintf("pets: %d of %d (100%%)", pets, pets); !strings.Contains(string(backOut), line) {
		t.Errorf("migrate --to-data does not say %q:\n%s", line, backOut)
	}
	backFile, err := boltstore.Open(backData, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer backFile.Close()
	gotBack, err := storetest.Collect(ctx, backFile)
	if err != nil {
		t.Fatal(err)
	}
	storetest.SameSnapshot(t, want, gotBack)
}

// printPeak prints the process's peak resident memory (VmHWM), for the
// test that started it (a child's rusage would also count what its parent
// held when it was forked), with what it holds at the end: anonymous
// memory apart from the data file's pages mapped in, and the heap the Go
// runtime took from the system.
func printPeak() {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Printf("heap from the system %d kB\n", ms.HeapSys>>10)
	for _, line := range strings.Split(string(status), "\n") {
		for _, field := range []string{"VmHWM:", "RssAnon:", "RssFile:"} {
			if strings.HasPrefix(line, field) {
				fmt.Println("memory", line)
			}
		}
	}
}

// peakKiB reads what printPeak printed, in KiB.
func peakKiB(t *testing.T, out []byte) int64 {
	var kib int64
	for _, line := range strings.Split(string(out), "\n") {
		if _, err := fmt.Sscanf(line, "memory VmHWM: %d kB", &kib); err == nil {
			return kib
		}
	}
	t.Logf("no peak memory printed (no /proc?)")
	return 0
}

// memoryLines are the lines of printPeak in out.
func memoryLines(out []byte) string {
	var lines []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "memory ") || strings.HasPrefix(line, "heap ") {
			lines = append(lines, line)
		}
	}
	return strings.Join(lines, "\n")
}

// TestMigrateCarriesWebhooksEventsAndDeliveries: a file with a webhook,
// its past deliveries, events, a kept Idempotency-Key answer and a
// pending delivery moves whole. PostgreSQL answers what the file did
// (times to the microsecond, its precision), the summary counts every
// kind, the pending delivery is there to attempt with its event and the
// webhook's own secret, an operator's retry of it reaches the receiver
// signed with that secret, and a retried keyed request gets its kept
// answer.
func TestMigrateCarriesWebhooksEventsAndDeliveries(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	url := pgtest.URL(t)
	data := filepath.Join(t.TempDir(), "petstore.db")
	rcv := webhooktest.Start(t, webhooktest.Options{Lenient: true})
	first, hook := startWithWebhook(t, data, rcv)
	deliveriesPath := fmt.Sprintf("/admin/webhooks/%d/deliveries", hook.ID)
	key := createKey(t, first, "move")
	keyed := []string{"X-API-Key", key, "Idempotency-Key", "create-dogs-once"}
	code, created := first.call(t, "POST", "/categories", `{"name":"dogs"}`, keyed...)
	if code != 201 {
		t.Fatalf("a keyed write: %d %s", code, created)
	}
	// Both events delivered and their outcomes recorded: nothing is left
	// in flight when the service stops.
	domaintest.WaitFor(t, 30*time.Second, 20*time.Millisecond, func() error {
		code, body := first.call(t, "GET", deliveriesPath, "", adminAuth...)
		if n := strings.Count(body, `"state":"succeeded"`); code != 200 || n != 2 {
			return fmt.Errorf("%d deliveries recorded as succeeded: %d %s", n, code, body)
		}
		return nil
	})
	first.stop(t)

	file := addPendingChange(t, data)
	before, err := storetest.Collect(ctx, file)
	if err != nil {
		t.Fatal(err)
	}
	file.Close()
	if len(before.Webhooks) != 1 || len(before.Answers) != 1 || len(before.Deliveries) != 3 {
		t.Fatalf("the file holds %d webhooks, %d kept answers, %d deliveries", len(before.Webhooks), len(before.Answers), len(before.Deliveries))
	}
	pendingID := before.Deliveries[2].ID

	// The file's own answers.
	reader := start(t, nil, "--data", data, "--admin-token", domaintest.AdminToken)
	paths := []string{"/admin/webhooks", fmt.Sprintf("/admin/webhooks/%d", hook.ID), deliveriesPath, "/events", "/admin/events", "/categories", "/pets"}
	want := map[string]string{}
	for _, p := range paths {
		_, want[p] = reader.call(t, "GET", p, "", adminAuth...)
	}
	reader.stop(t)

	var out bytes.Buffer
	if err := run(ctx, []string{"migrate", "--data", data, "--database", url}, func(string) string { return "" }, &out); err != nil {
		t.Fatalf("migrate: %v\n%s", err, out.String())
	}
	summary := out.String()[strings.LastIndex(out.String(), "copied "):]
	for _, want := range []string{"1 webhooks with their signing keys", fmt.Sprintf("%d events,", len(before.Events)),
		"3 deliveries", "1 kept answers of Idempotency-Keys", "1 categories", "1 pets"} {
		if !strings.Contains(summary, want) {
			t.Errorf("the summary has no %q: %s", want, summary)
		}
	}

	moved := start(t, nil, "--database", url, "--admin-token", domaintest.AdminToken, "--webhook-allow-private")
	for _, p := range paths {
		if code, got := moved.call(t, "GET", p, "", adminAuth...); code != 200 || toMicroseconds(got) != toMicroseconds(want[p]) {
			t.Errorf("GET %s on PostgreSQL: %d %s\nwant %s", p, code, got, want[p])
		}
	}
	if code, got := moved.call(t, "POST", "/categories", `{"name":"dogs"}`, keyed...); code != 201 || got != created {
		t.Errorf("the keyed write again on PostgreSQL: %d %s\nwant the kept answer %s", code, got, created)
	}
	if code, got := moved.call(t, "GET", "/categories", ""); code != 200 || strings.Count(got, `"name":"dogs"`) != 1 {
		t.Errorf("categories after the replay: %d %s", code, got)
	}
	// The pending delivery is there to attempt when it is due, with its
	// event and the webhook's secret.
	other, err := postgres.Open(ctx, url, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	due := time.Now().Add(2 * time.Hour)
	claimed, err := other.ClaimDeliveries(ctx, due, time.Minute, nil, 10)
	if err != nil || len(claimed) != 1 || claimed[0].ID != pendingID || claimed[0].Webhook.Secret != hook.Secret ||
		!strings.Contains(string(claimed[0].Event.Data), `"name":"Pending"`) {
		t.Errorf("the deliveries due on PostgreSQL: %+v, %v; want delivery %d of the pending pet", claimed, err, pendingID)
	}
	// An operator's retry of it reaches the receiver, signed with the
	// webhook's secret.
	received := len(rcv.Deliveries())
	if code, body := moved.call(t, "POST", fmt.Sprintf("%s/%d/retry", deliveriesPath, pendingID), "", adminAuth...); code != 202 {
		t.Fatalf("retrying the moved delivery: %d %s", code, body)
	}
	domaintest.WaitFor(t, 30*time.Second, 20*time.Millisecond, func() error {
		if n := len(rcv.Deliveries()); n != received+1 {
			return fmt.Errorf("%d deliveries received, want %d", n, received+1)
		}
		return nil
	})
	if last := rcv.Deliveries()[received]; last.Event.Type != "pet.created" || !strings.Contains(string(last.Event.Data), `"name":"Pending"`) {
		t.Errorf("the retried delivery: %+v", last.Event)
	}
	if r := rcv.Rejected(); len(r) != 0 {
		t.Errorf("deliveries refused by the receiver (not signed with the webhook's secret?): %q", r)
	}
}

// fraction is the fraction of a second of an RFC 3339 time.
var fraction = regexp.MustCompile(`(\d\d:\d\d:\d\d)\.(\d+)`)

// toMicroseconds cuts every time in s to the microsecond, as PostgreSQL
// keeps it, in RFC 3339's shortest form.
func toMicroseconds(s string) string {
	return fraction.ReplaceAllStringFunc(s, func(m string) string {
		p := fraction.FindStringSubmatch(m)
		f := strings.TrimRight(p[2][:min(len(p[2]), 6)], "0")
		if f == "" {
			return p[1]
		}
		return p[1] + "." + f
	})
}

// startWithWebhook starts an instance on a data file with a webhook to rcv
// for every event, its secret trusted by rcv.
func startWithWebhook(t *testing.T, data string, rcv *webhooktest.Receiver) (*instance, madeWebhook) {
	t.Helper()
	in := start(t, nil, "--data", data, "--admin-token", domaintest.AdminToken, "--webhook-allow-private")
	return in, subscribeAll(t, in, rcv)
}

// subscribeAll subscribes rcv to every event through in's admin API, and
// has it trust the webhook's secret.
func subscribeAll(t *testing.T, in *instance, rcv *webhooktest.Receiver) madeWebhook {
	t.Helper()
	code, body := in.call(t, "POST", "/admin/webhooks", fmt.Sprintf(`{"url":%q,"events":["*"]}`, rcv.URL), adminAuth...)
	var hook madeWebhook
	if err := json.Unmarshal([]byte(body), &hook); code != 201 || err != nil || hook.Secret == "" {
		t.Fatalf("creating the webhook: %d %s", code, body)
	}
	rcv.Trust(hook.Secret)
	return hook
}

// addPendingChange opens the data file and writes a pet whose delivery is
// pending in it when a move begins, due in an hour, so that no service
// attempts it before the test compares their answers.
func addPendingChange(t *testing.T, data string) *boltstore.DB {
	t.Helper()
	file, err := boltstore.Open(data, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := file.CreatePet(context.Background(), &store.Pet{Name: "Pending", CategoryID: 1}, nil); err != nil {
		t.Fatal(err)
	}
	if n, err := file.FanOut(context.Background(), time.Now().Add(time.Hour), 100); err != nil || n != 1 {
		t.Fatalf("fanning out the last event: %d, %v", n, err)
	}
	return file
}

// madeWebhook is what startWithWebhook's webhook was given.
type madeWebhook struct {
	ID     int64
	Secret string
}

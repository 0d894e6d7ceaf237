package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"petstore/store"
	"petstore/store/boltstore"
	"petstore/store/postgres/pgtest"
)

// TestMigrateServesFromPostgreSQLWhatTheFileServed fills a data file
// through the service, moves it with "petstore migrate", and starts the
// service on the database: the same answers, the same admin token and API
// key, and new ids after the old ones. A second move into the same
// database is refused.
func TestMigrateServesFromPostgreSQLWhatTheFileServed(t *testing.T) {
	url := pgtest.URL(t)
	data := filepath.Join(t.TempDir(), "petstore.db")
	first := start(t, nil, "--data", data)
	token := regexp.MustCompile(`admin token\s+(pat_\S+)`).FindStringSubmatch(first.out.String())
	if token == nil {
		t.Fatalf("no admin token printed:\n%s", first.out)
	}
	admin := []string{"Authorization", "Bearer " + token[1]}
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
	if !strings.Contains(out.String(), "1 categories, 1 pets, 1 orders, 1 API keys") || !strings.Contains(out.String(), "the admin token") || strings.Contains(out.String(), "secret") {
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
	url := pgtest.URL(t)
	data := filepath.Join(t.TempDir(), "petstore.db")
	db, err := boltstore.Open(data, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := store.Category{Name: "dogs\x00"}
	if err := db.CreateCategory(context.Background(), &c); err != nil {
		t.Fatal(err)
	}
	p := store.Pet{Name: "Re\x00x", CategoryID: c.ID}
	if err := db.CreatePet(context.Background(), &p); err != nil {
		t.Fatalf("bbolt no longer keeps U+0000 (write this file another way): %v", err)
	}
	db.Close()

	var out bytes.Buffer
	err = run(context.Background(), []string{"migrate", "--data", data, "--database", url}, func(string) string { return "" }, &out)
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

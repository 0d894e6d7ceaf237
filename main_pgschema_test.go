package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"petstore/store/postgres/pgtest"
)

// TestOlderVersionOnANewerSchema: an instance of an older version started
// on a database that a newer version migrated (a rolling upgrade, or a
// step back to the older binary) serves it, as the upgrade's side-by-side
// window needs, and says so in its log with both versions, instead of
// nothing.
func TestOlderVersionOnANewerSchema(t *testing.T) {
	parallel(t)
	databaseURL := pgtest.URL(t)
	first := start(t, nil, pgFlags(databaseURL)...)
	key := createKey(t, first, "k")
	first.stop(t)
	if err := pgtest.Connect(t, databaseURL).Exec(context.Background(), `INSERT INTO schema_migrations (version) VALUES (1000)`); err != nil {
		t.Fatal(err)
	}
	older := start(t, nil, pgFlags(databaseURL)...)
	if code, body := older.call(t, "POST", "/categories", `{"name":"a"}`, "X-API-Key", key); code != 201 {
		t.Errorf("a write on the newer schema: %d %s", code, body)
	}
	waitFor(t, "the log names the newer schema", 10*time.Second, func() bool {
		return strings.Contains(older.out.String(), "schema is at version 1000, which a newer version migrated")
	})
}

package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"petstore/domains/domaintest"
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
	t.Parallel()
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

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"petstore/domains/domaintest"
	"petstore/store/postgres/pgtest"
)

// TestMigrateBackAppliesTheRestoreMarks restores an older dump with the
// one instance stopped, then moves the database to a file with the
// instance's restore marks and no instance started in between: on the
// new file, a new pet's id is above every id acknowledged before the
// restore, and the key revoked after the dump stays revoked. A move that
// read no marks copied the dump's sequences and its key.
func TestMigrateBackAppliesTheRestoreMarks(t *testing.T) {
	parallel(t)
	url := pgtest.URL(t)
	dir := t.TempDir()
	marks, dump, file := filepath.Join(dir, "a.marks.json"), filepath.Join(dir, "before.dump"), filepath.Join(dir, "back.db")
	pg := start(t, nil, pgFlags(url, "--rate-limit", "0", "--restore-marks", marks)...)
	revoked := createKeyWithID(t, pg, "revoked after the dump")
	key := createKey(t, pg, "writer")
	var highest int64
	createPet := func(in *instance) int64 {
		t.Helper()
		code, body := in.call(t, "POST", "/pets", `{"name":"Rex","categoryId":1}`, "X-API-Key", key)
		var p struct{ ID int64 }
		if err := json.Unmarshal([]byte(body), &p); code != 201 || err != nil {
			t.Fatalf("creating a pet: %d %s", code, body)
		}
		return p.ID
	}
	if code, body := pg.call(t, "POST", "/categories", `{"name":"dogs"}`, "X-API-Key", key); code != 201 {
		t.Fatalf("a category: %d %s", code, body)
	}
	first := createPet(pg)
	replace := func(in *instance, name string) string {
		t.Helper()
		code, body, h := in.get(t, "PUT", fmt.Sprintf("/pets/%d", first), `{"name":"`+name+`","categoryId":1}`, "X-API-Key", key)
		if code != 200 || h.Get("ETag") == "" {
			t.Fatalf("replacing a pet: %d %s %v", code, body, h)
		}
		return h.Get("ETag")
	}
	runTool(t, pgtest.Program("pg_dump"), "--format=custom", "--file="+dump, url)
	for range 3 {
		highest = createPet(pg)
	}
	acked := map[string]string{replace(pg, "Rex B"): "Rex B", replace(pg, "Rex C"): "Rex C"}
	if code, body := pg.call(t, "DELETE", fmt.Sprintf("/admin/api-keys/%d", revoked.ID), "", adminAuth...); code != 204 {
		t.Fatalf("revoking: %d %s", code, body)
	}
	pg.stop(t)
	runTool(t, pgtest.Program("pg_restore"), "--clean", "--if-exists", "--single-transaction", "--no-owner", "--dbname="+url, dump)

	// Marks it cannot apply stop the move, and name the file.
	for name, content := range map[string]string{
		"another database": `{"store": "elsewhere:5432/petstore", "id": "ANOTHER", "lastIds": {}}`,
		"not JSON":         `{"store":`,
	} {
		bad := filepath.Join(dir, "bad.marks.json")
		if err := os.WriteFile(bad, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		err := run(context.Background(), []string{"migrate", "--to-data", file, "--database", url, "--restore-marks", bad}, func(string) string { return "" }, &out)
		if err == nil || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), bad) || strings.Contains(err.Error(), "\n") {
			t.Errorf("migrate with marks of %s: %v, want one line naming them and %s\n%s", name, err, bad, out.String())
		}
		if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a refused move left %s: %v", file, err)
		}
	}
	// No marks file where it looks by default: the move goes on, and says
	// where it looked.
	state := filepath.Join(dir, "state")
	none := filepath.Join(state, "restore-marks.json")
	var out bytes.Buffer
	err := run(context.Background(), []string{"migrate", "--to-data", filepath.Join(dir, "unmarked.db"), "--database", url},
		func(name string) string { return map[string]string{"STATE_DIRECTORY": state}[name] }, &out)
	if err != nil || !strings.Contains(out.String(), "no restore marks were read, from "+none+" (no such file)") {
		t.Errorf("migrate without a marks file: %v, and it does not say where it looked:\n%s", err, out.String())
	}
	if _, err := os.Stat(none); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("migrate made the marks file it did not find: %v", err)
	}
	moved := migrate(t, "--to-data", file, "--database", url, "--restore-marks", marks)
	if strings.Contains(moved, "no restore marks") || !strings.Contains(moved, "its sequences now continue") {
		t.Errorf("migrate does not say that the database went back in time and continues after the marks:\n%s", moved)
	}
	in := start(t, nil, "--data", file, "--admin-token", domaintest.AdminToken, "--rate-limit", "0")
	if id := createPet(in); id <= highest {
		t.Errorf("a pet on the moved file got id %d; %d was acknowledged before the restore", id, highest)
	}
	if etag := replace(in, "Rex D"); acked[etag] != "" {
		t.Errorf("on the moved file, the pet named Rex D got the ETag %s, acknowledged before the restore for %s", etag, acked[etag])
	}
	if code, body := callFrom(t, "127.0.0.52", in, "POST", "/pets", `{"name":"Rex","categoryId":1}`, "X-API-Key", revoked.Secret); code != 401 {
		t.Errorf("the key revoked after the dump, on the moved file: %d %s, want 401", code, body)
	}
}

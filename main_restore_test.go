package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"petstore/domains/domaintest"
	"petstore/events/webhooktest"
	"petstore/store/postgres/pgtest"
)

// TestRestoreRunbook runs docs/several-instances.md's restore steps under
// two instances, after a dump taken before some writes: a key revoked
// after the dump is refused by both, no pet id acknowledged before the
// restore is given to another pet after it (a webhook receiver never gets
// a second pet.created for one), and the receiver gets one store.restored,
// as openapi.yaml describes it, naming what was rolled back.
func TestRestoreRunbook(t *testing.T) {
	parallel(t)
	databaseURL := pgtest.URL(t)
	if _, err := exec.LookPath("jq"); err != nil {
		t.Skip("jq is not installed")
	}
	dir := t.TempDir()
	marks := func(name string) string { return filepath.Join(dir, name+".marks.json") }
	a := start(t, nil, pgFlags(databaseURL, "--webhook-allow-private", "--rate-limit", "0", "--restore-marks", marks("a"))...)
	b := start(t, nil, pgFlags(databaseURL, "--webhook-allow-private", "--rate-limit", "0", "--restore-marks", marks("b"))...)

	rcv := webhooktest.Start(t, webhooktest.Options{Lenient: true})
	subscribeAll(t, a, rcv)
	key := createKey(t, a, "writer")
	revoked := createKeyWithID(t, a, "revoked after the dump")
	if code, body := a.call(t, "POST", "/categories", `{"name":"dogs"}`, "X-API-Key", key); code != 201 {
		t.Fatalf("a category: %d %s", code, body)
	}
	acked := map[int64]string{}
	createPets := func(in *instance, prefix string, n int) {
		t.Helper()
		for i := range n {
			name := fmt.Sprintf("%s-%d", prefix, i)
			code, body := in.call(t, "POST", "/pets", `{"name":"`+name+`","categoryId":1}`, "X-API-Key", key)
			var p struct{ ID int64 }
			if err := json.Unmarshal([]byte(body), &p); code != 201 || err != nil {
				t.Fatalf("creating a pet: %d %s", code, body)
			}
			if other, ok := acked[p.ID]; ok {
				t.Errorf("pet id %d given to %s, acknowledged before for %s", p.ID, name, other)
			}
			acked[p.ID] = name
		}
	}
	createPets(a, "in-the-dump", 3)
	// PostgreSQL lists an event once every older transaction has ended
	// (another instance's may still be open): wait for the pets' events.
	var before []struct{ ID, Type string }
	waitFor(t, "the events of the pets in the dump are listed", 10*time.Second, func() bool {
		code, body := a.call(t, "GET", "/events?limit=100", "")
		if err := json.Unmarshal([]byte(body), &before); code != 200 || err != nil {
			t.Fatalf("the events before the dump: %d %s", code, body)
		}
		n := 0
		for _, e := range before {
			if e.Type == "pet.created" {
				n++
			}
		}
		return n == 3
	})
	cursor := before[len(before)-1].ID
	runTool(t, pgtest.Program("pg_dump"), "--format=custom", "--file="+filepath.Join(dir, "petstore.dump"), databaseURL)

	createPets(a, "a-after-the-dump", 20)
	createPets(b, "b-after-the-dump", 20)
	if code, body := a.call(t, "DELETE", fmt.Sprintf("/admin/api-keys/%d", revoked.ID), "", adminAuth...); code != 204 {
		t.Fatalf("revoking: %d %s", code, body)
	}
	// B keeps the revocation in its marks file once it has read it.
	waitFor(t, "B keeps the revocation in its marks", 10*time.Second, func() bool {
		data, _ := os.ReadFile(marks("b"))
		return strings.Contains(string(data), fmt.Sprintf(`"keyId": %d`, revoked.ID))
	})
	waitFor(t, "the receiver gets every pet.created", 30*time.Second, func() bool {
		return len(petsCreated(t, rcv)) == len(acked)
	})

	// The runbook, as written.
	block := docBlock(t, "docs/several-instances.md", "pg_restore --clean")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euc", block)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PETSTORE_DATABASE="+databaseURL, "PETSTORE_URL="+a.base, "CURSOR="+cursor,
		"PATH="+filepath.Dir(pgtest.Program("pg_restore"))+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the runbook: %v\n%s", err, out)
	}
	var shown struct {
		IDs map[string]struct{ Restored, Acknowledged, ResumesAfter int64 }
	}
	if err := json.Unmarshal(out, &shown); err != nil || shown.IDs["pets"].Acknowledged < 43 {
		t.Errorf("the runbook's last command shows %s (%v), want store.restored's data with the pets rolled back", out, err)
	}

	for i, in := range []*instance{a, b} {
		if code, body := callFrom(t, fmt.Sprintf("127.0.0.%d", 30+i), in, "POST", "/categories", `{"name":"c"}`, "X-API-Key", revoked.Secret); code != 401 {
			t.Errorf("a key revoked before the restore, after it: %d %s", code, body)
		}
	}
	createPets(a, "a-after-the-restore", 10)
	createPets(b, "b-after-the-restore", 10)

	// B has handled the rewind too once it logs so; there is still one
	// store.restored.
	waitFor(t, "both instances handle the rewind", 10*time.Second, func() bool {
		return strings.Contains(a.out.String(), "its sequences now continue") && strings.Contains(b.out.String(), "its sequences now continue")
	})
	waitFor(t, "the receiver gets every pet.created and store.restored", 30*time.Second, func() bool {
		return len(petsCreated(t, rcv)) == len(acked) && len(eventsOfType(rcv, "store.restored")) > 0
	})
	oneStoreRestored(t, rcv)
	code, body := a.call(t, "GET", "/events?limit=100&after="+cursor, "")
	if code != 200 || strings.Count(body, `"type":"store.restored"`) != 1 {
		t.Errorf("GET /events after the cursor: %d, want one store.restored: %s", code, body)
	}
}

// petsCreated is the name of each pet id the receiver was told of, failing
// the test when one id came with two names.
func petsCreated(t *testing.T, rcv *webhooktest.Receiver) map[int64]string {
	t.Helper()
	out := map[int64]string{}
	for _, e := range rcv.Events() {
		if e.Type != "pet.created" {
			continue
		}
		var p struct {
			ID   int64
			Name string
		}
		if err := json.Unmarshal(e.Data, &p); err != nil {
			t.Fatal(err)
		}
		if other, ok := out[p.ID]; ok && other != p.Name {
			t.Errorf("pet.created for id %d twice: %s, then %s", p.ID, other, p.Name)
		}
		out[p.ID] = p.Name
	}
	return out
}

// eventsOfType are the bodies of the receiver's events of type typ.
func eventsOfType(rcv *webhooktest.Receiver, typ string) []string {
	var out []string
	seen := map[string]bool{}
	for _, d := range rcv.Deliveries() {
		if d.Event.Type == typ && !seen[d.ID] {
			seen[d.ID] = true
			out = append(out, d.Body)
		}
	}
	return out
}

// TestDataFilePutBackFromABackup puts a backup back under the service as
// docs/operations.md says (stopped, file replaced, started): a key revoked
// after the backup is refused, a new pet's id is none acknowledged
// before, and the webhook receiver gets store.restored, as openapi.yaml
// describes it; the log says what happened.
func TestDataFilePutBackFromABackup(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "petstore.db")
	args := []string{"--data", path, "--admin-token", domaintest.AdminToken, "--webhook-allow-private"}
	in := start(t, nil, args...)
	rcv := webhooktest.Start(t, webhooktest.Options{Lenient: true})
	subscribeAll(t, in, rcv)
	key := createKey(t, in, "writer")
	revoked := createKeyWithID(t, in, "revoked after the backup")
	if code, body := in.call(t, "POST", "/categories", `{"name":"dogs"}`, "X-API-Key", key); code != 201 {
		t.Fatalf("a category: %d %s", code, body)
	}
	code, backup := in.call(t, "GET", "/admin/backup", "", adminAuth...)
	if code != 200 {
		t.Fatalf("GET /admin/backup: %d", code)
	}
	var highest int64
	for i := range 10 {
		code, body := in.call(t, "POST", "/pets", fmt.Sprintf(`{"name":"after-the-backup-%d","categoryId":1}`, i), "X-API-Key", key)
		var p struct{ ID int64 }
		if err := json.Unmarshal([]byte(body), &p); code != 201 || err != nil {
			t.Fatalf("creating a pet: %d %s", code, body)
		}
		highest = p.ID
	}
	if code, body := in.call(t, "DELETE", fmt.Sprintf("/admin/api-keys/%d", revoked.ID), "", adminAuth...); code != 204 {
		t.Fatalf("revoking: %d %s", code, body)
	}
	waitFor(t, "the receiver gets every pet.created", 30*time.Second, func() bool {
		return len(petsCreated(t, rcv)) == 10
	})
	in.stop(t)
	if err := os.WriteFile(path, []byte(backup), 0o600); err != nil {
		t.Fatal(err)
	}
	in = start(t, nil, args...)
	if code, body := callFrom(t, "127.0.0.40", in, "POST", "/categories", `{"name":"c"}`, "X-API-Key", revoked.Secret); code != 401 {
		t.Errorf("a key revoked after the backup, once it is put back: %d %s", code, body)
	}
	code, body := in.call(t, "POST", "/pets", `{"name":"after-the-put-back","categoryId":1}`, "X-API-Key", key)
	var p struct{ ID int64 }
	if err := json.Unmarshal([]byte(body), &p); code != 201 || err != nil || p.ID <= highest {
		t.Errorf("a pet after the put-back: %d %s; %d was acknowledged before", code, body, highest)
	}
	waitFor(t, "the receiver gets store.restored", 30*time.Second, func() bool {
		return len(eventsOfType(rcv, "store.restored")) > 0
	})
	oneStoreRestored(t, rcv)
	if !strings.Contains(in.out.String(), "the data file went back in time") {
		t.Errorf("the log does not say that the file went back in time:\n%s", in.out)
	}
}

// oneStoreRestored fails t unless the receiver got exactly one
// store.restored, as openapi.yaml's StoreRestoredEvent describes it.
func oneStoreRestored(t *testing.T, rcv *webhooktest.Receiver) {
	t.Helper()
	restored := eventsOfType(rcv, "store.restored")
	if len(restored) != 1 {
		t.Fatalf("%d store.restored delivered, want 1", len(restored))
	}
	doc, err := openapi3.NewLoader().LoadFromFile("openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var envelope any
	if err := json.Unmarshal([]byte(restored[0]), &envelope); err != nil {
		t.Fatal(err)
	}
	if err := doc.Components.Schemas["StoreRestoredEvent"].Value.VisitJSON(envelope); err != nil {
		t.Errorf("store.restored as delivered is not openapi.yaml's StoreRestoredEvent: %v\n%s", err, restored[0])
	}
}

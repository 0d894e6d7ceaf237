package main

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"petstore/domains/domaintest"
	"petstore/store/postgres/pgtest"
)

// TestIdempotentAPIKeySurvivesKillNine: the service is killed with SIGKILL
// right after a POST /admin/api-keys with an Idempotency-Key commits,
// before the client has read a byte of the answer, the only one that
// shows the new secret. The retry with the same key gets that secret,
// marked Idempotent-Replayed, the secret authenticates, and one key was
// created. On bbolt the retry goes to the service restarted on the same
// file; on PostgreSQL to a second instance on the same database.
func TestIdempotentAPIKeySurvivesKillNine(t *testing.T) {
	if isChild() {
		runChild(func() error { return nil })
	}
	if testing.Short() {
		t.Skip("starts and kills the service")
	}
	t.Run("bbolt", func(t *testing.T) {
		args := []string{"--data", filepath.Join(t.TempDir(), "p.db")}
		apiKeyKilledAfterCommit(t, args, func() string { return startKeyed(t, args) })
	})
	t.Run("postgres", func(t *testing.T) {
		args := []string{"--database", pgtest.URL(t)}
		b := startKeyed(t, args)
		apiKeyKilledAfterCommit(t, args, func() string { return b })
	})
}

func apiKeyKilledAfterCommit(t *testing.T, args []string, retry func() string) {
	proc, base := startKeyedProc(t, args)
	c := &keyClient{t: t, http: &http.Client{Timeout: 10 * time.Second}}
	relay := killingRelay(t, strings.TrimPrefix(base, "http://"), func() {
		if err := proc.Kill(); err != nil {
			t.Error(err)
		}
	})
	keyed := http.Header{"Authorization": {"Bearer " + domaintest.AdminToken}, "Idempotency-Key": {"8e03978e-40d5-43e8-bc93-6894a57f9324"}}
	req := c.request("http://"+relay, "POST", "/admin/api-keys", `{"name":"crash"}`, keyed)
	if res, err := (&http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}).Do(req); err == nil {
		res.Body.Close()
		t.Fatalf("the client read an answer (%d) through the relay that kills the service", res.StatusCode)
	}
	select {
	case <-proc.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the service is still running after SIGKILL")
	}

	next := retry()
	var key struct {
		ID     int64
		Name   string
		Secret string
	}
	res := c.call(next, "POST", "/admin/api-keys", `{"name":"crash"}`, keyed, 201, &key)
	if res.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("the retry after the kill is not a replay: Idempotent-Replayed %q", res.Header.Get("Idempotent-Replayed"))
	}
	if key.Name != "crash" || !strings.HasPrefix(key.Secret, "psk_") {
		t.Fatalf("the replayed key: %+v", key)
	}
	c.key = key.Secret
	c.call(next, "POST", "/categories", `{"name":"dogs"}`, nil, 201, nil)
	var keys []struct{ Name string }
	c.call(next, "GET", "/admin/api-keys", "", http.Header{"Authorization": {"Bearer " + domaintest.AdminToken}}, 200, &keys)
	if len(keys) != 1 {
		t.Errorf("API keys %+v, want the one created", keys)
	}
}

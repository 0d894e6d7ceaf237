package postgres_test

import (
	"context"
	"crypto/sha256"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"petstore/domains/domaintest"
	"petstore/store"
	"petstore/store/postgres"
	"petstore/store/postgres/pgtest"
)

func TestMain(m *testing.M) {
	pgtest.Main(m)
}

func open(t *testing.T) *postgres.DB {
	t.Helper()
	return openAt(t, pgtest.URL(t))
}

// openAt opens a store on the database at url, one instance of those that
// share it, and closes it when the test ends.
func openAt(t *testing.T, url string) *postgres.DB {
	t.Helper()
	return domaintest.OpenPostgres(t, url)
}

// Two instances on one database: a key revoked through one is refused by
// the other within a second, and a change of the admin token reaches it.
func TestChangesReachOtherInstances(t *testing.T) {
	ctx := context.Background()
	b, a, changed := twoInstances(t, pgtest.URL(t))

	token, err := a.EnsureAdminToken(ctx, "")
	if err != nil || token == "" {
		t.Fatalf("first token %q, %v", token, err)
	}
	if again, err := b.EnsureAdminToken(ctx, ""); err != nil || again != "" {
		t.Fatalf("second instance's start: %q, %v", again, err)
	}
	key, secret, err := a.CreateAPIKey(ctx, "shared", nil)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, changed, func() bool { _, ok := b.AuthenticateAPIKey(secret); return ok })
	if err := a.RevokeAPIKey(ctx, key.ID); err != nil {
		t.Fatal(err)
	}
	waitFor(t, changed, func() bool { _, ok := b.AuthenticateAPIKey(secret); return !ok })
	const next = "pat_replaced-by-the-operator-0123456789"
	if _, err := a.EnsureAdminToken(ctx, next); err != nil {
		t.Fatal(err)
	}
	waitFor(t, changed, func() bool { return b.CheckAdminToken(next) && !b.CheckAdminToken(token) })
}

// API keys are looked up in the database: a key written behind the stores'
// back works at once on every instance, and a revoked one is refused by
// every instance as soon as the revoke returns.
func TestKeysAreCheckedInTheDatabase(t *testing.T) {
	url := pgtest.URL(t)
	ctx := context.Background()
	a, b, _ := twoInstances(t, url)

	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	const hidden = "psk_written-behind-the-stores-back"
	hash := sha256.Sum256([]byte(hidden))
	if _, err := conn.Exec(ctx, `INSERT INTO api_keys (name, prefix, sha256, created_at) VALUES ('hidden', 'written-', $1, now())`, hash[:]); err != nil {
		t.Fatal(err)
	}
	if _, ok := a.AuthenticateAPIKey(hidden); !ok {
		t.Error("a key in the database is refused")
	}
	for range 20 {
		k, secret, err := b.CreateAPIKey(ctx, "new", nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok, err := a.CheckAPIKey(ctx, secret); !ok || err != nil {
			t.Fatalf("a key created on b is refused on a at its first use (%v)", err)
		}
		if err := b.RevokeAPIKey(ctx, k.ID); err != nil {
			t.Fatal(err)
		}
		if _, ok, err := a.CheckAPIKey(ctx, secret); ok || err != nil {
			t.Fatalf("a key revoked on b still works on a (%v)", err)
		}
	}
}

// twoInstances opens two instances on the database at url; changed
// receives the change notices of the first. A notice that comes while
// one is pending is dropped rather than waited on: a test that does not
// read them (or reads fewer than come) must not block the instance's
// change watcher, whose Close would then wait for it for good.
func twoInstances(t *testing.T, url string) (watched, other *postgres.DB, changed <-chan struct{}) {
	t.Helper()
	notices := make(chan struct{}, 1)
	watched, other = openAt(t, url), openAt(t, url)
	watched.OnChange(func() {
		select {
		case notices <- struct{}{}:
		default:
		}
	})
	return watched, other, notices
}

// waitFor waits for cond, re-checking after each change notification, for
// at most a second.
func waitFor(t *testing.T, changed <-chan struct{}, cond func() bool) {
	t.Helper()
	deadline := time.After(time.Second)
	for !cond() {
		select {
		case <-changed:
		case <-deadline:
			t.Fatal("the other instance did not see the change within a second")
		}
	}
}

// The key/value space and its locks, across two instances.
func TestKVAndLocksAcrossInstances(t *testing.T) {
	url := pgtest.URL(t)
	ctx := context.Background()
	a, b := openAt(t, url), openAt(t, url)
	for _, k := range []string{"certificates/ca/a.test/a.test.crt", "certificates/ca/a.test/a.test.key", "certificates/ca/b.test/b.test.crt", "certificatesx"} {
		if err := a.KVPut(ctx, k, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	if v, err := b.KVGet(ctx, "certificates/ca/a.test/a.test.key"); err != nil || string(v) != "certificates/ca/a.test/a.test.key" {
		t.Errorf("KVGet: %q %v", v, err)
	}
	if _, err := b.KVGet(ctx, "nope"); store.ErrorCode(err) != store.ENOTFOUND {
		t.Errorf("a missing key: %v", err)
	}
	keys, err := b.KVKeys(ctx, "certificates/ca/a.test")
	if err != nil || len(keys) != 2 {
		t.Errorf("KVKeys: %v %v", keys, err)
	}
	if err := b.KVDelete(ctx, "certificates/ca/a.test"); err != nil {
		t.Fatal(err)
	}
	if keys, _ := a.KVKeys(ctx, "certificates"); len(keys) != 1 || keys[0] != "certificates/ca/b.test/b.test.crt" {
		t.Errorf("after deleting a prefix: %v", keys)
	}
	if info, err := a.KVStat(ctx, "certificatesx"); err != nil || info.Size != int64(len("certificatesx")) {
		t.Errorf("KVStat: %+v %v", info, err)
	}

	if err := a.Lock(ctx, "issue_cert_a.test"); err != nil {
		t.Fatal(err)
	}
	if ok, err := b.TryLock(ctx, "issue_cert_a.test"); ok || err != nil {
		t.Fatalf("the other instance took a held lock: %v %v", ok, err)
	}
	got := make(chan error, 1)
	go func() { got <- b.Lock(ctx, "issue_cert_a.test") }()
	if err := a.Unlock(ctx, "issue_cert_a.test"); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("waiting for the lock: %v", err)
	}
	if err := b.Unlock(ctx, "issue_cert_a.test"); err != nil {
		t.Fatal(err)
	}
	if err := a.Unlock(ctx, "issue_cert_a.test"); err == nil {
		t.Error("unlocking a lock that is not held succeeds")
	}
}

// A rotated webhook's previous secret and its expiry are in the database:
// an instance started after the rotation signs with both.
func TestRotatedSecretSurvivesRestart(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	first := openAt(t, url)
	w := store.Webhook{URL: "http://receiver.test/", Events: []string{"*"}, Enabled: true, Secret: "whsec_AAAA"}
	if err := first.CreateWebhook(ctx, &w, nil); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	rotated, err := first.UpdateWebhook(ctx, w.ID, func(w *store.Webhook) error {
		w.RotateSecret("whsec_BBBB", now, time.Hour)
		return nil
	}, nil)

	if err != nil {
		t.Fatal(err)
	}
	first.Close()
	got, err := openAt(t, url).Webhook(ctx, w.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.PreviousSecret != "whsec_AAAA" || !got.PreviousSecretExpiresAt.Equal(*rotated.PreviousSecretExpiresAt) ||
		got.SigningSecrets(now) != "whsec_BBBB whsec_AAAA" {
		t.Errorf("after a restart: %+v, want %+v signing with both", got, rotated)
	}
}

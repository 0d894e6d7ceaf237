package postgres_test

import (
	"context"
	"os/exec"
	"testing"

	"github.com/jackc/pgx/v5"

	"petstore/store/postgres"
	"petstore/store/postgres/pgtest"
)

// A restore that rewinds the changes row, followed by as many changes as
// it rewound before the other instance's next poll, brings the counters
// back to the very values that instance saw: only the stamp tells that
// the history is another one. The instance must then drop what it
// caches: the admin token set after the dump is refused and the one of
// the dump works; a key revoked after the restore and a key the restore
// took away are refused.
func TestRewindThenChangesBeforeThePoll(t *testing.T) {
	url := pgtest.URL(t)
	ctx := context.Background()
	b, a, changed := twoInstances(t, url)
	const dumped, replaced = "pat_token-of-the-dump-0123456789abcdef", "pat_token-set-after-the-dump-0123456789"
	if _, err := a.EnsureAdminToken(ctx, dumped); err != nil {
		t.Fatal(err)
	}
	kept, keptSecret, err := a.CreateAPIKey(ctx, "in the dump", nil)
	if err != nil {
		t.Fatal(err)
	}
	dump := t.TempDir() + "/petstore.dump"
	if out, err := exec.Command(pgtest.Program("pg_dump"), "--format=custom", "--file="+dump, url).CombinedOutput(); err != nil {
		t.Fatalf("pg_dump: %v\n%s", err, out)
	}
	if _, err := a.EnsureAdminToken(ctx, replaced); err != nil {
		t.Fatal(err)
	}
	_, laterSecret, err := a.CreateAPIKey(ctx, "after the dump", nil)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, changed, func() bool { return b.CheckAdminToken(replaced) })
	if _, ok, err := b.CheckAPIKey(ctx, laterSecret); !ok || err != nil {
		t.Fatalf("the key created after the dump, before the restore: %v %v", ok, err)
	}
	seen := counts(t, url)

	release := postgres.HoldCatchUp(b)
	if out, err := exec.Command(pgtest.Program("pg_restore"), "--clean", "--if-exists", "--single-transaction", "--dbname="+url, dump).CombinedOutput(); err != nil {
		release()
		t.Fatalf("pg_restore: %v\n%s", err, out)
	}
	// Two credential changes, as many as the restore took away.
	if err := a.RevokeAPIKey(ctx, kept.ID); err != nil {
		release()
		t.Fatal(err)
	}
	if _, _, err := a.CreateAPIKey(ctx, "after the restore", nil); err != nil {
		release()
		t.Fatal(err)
	}
	if now := counts(t, url); now != seen {
		release()
		t.Fatalf("the counters are %v after the restore and the changes, %v before: the case under test is not made", now, seen)
	}
	release()

	waitFor(t, changed, func() bool { return b.CheckAdminToken(dumped) && !b.CheckAdminToken(replaced) })
	if _, ok, err := b.CheckAPIKey(ctx, keptSecret); ok || err != nil {
		t.Errorf("a key revoked after the restore works: %v %v", ok, err)
	}
	if _, ok, err := b.CheckAPIKey(ctx, laterSecret); ok || err != nil {
		t.Errorf("a key the restore took away works: %v %v", ok, err)
	}
}

// counts reads the changes row's counters: every change, and the
// credential changes.
func counts(t *testing.T, url string) [2]int64 {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var c [2]int64
	if err := conn.QueryRow(ctx, `SELECT version, version - other_version FROM changes`).Scan(&c[0], &c[1]); err != nil {
		t.Fatal(err)
	}
	return c
}

package main

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"petstore/store/postgres/pgtest"
)

// TestDatabaseRefusesTheService: a database that answers but refuses the
// service, as an operator's change leaves it (the role's login taken
// away, its password or pg_hba.conf changed: SQLSTATE class 28; a
// privilege revoked: 42501), fails each request with 503
// database_unavailable, Retry-After and the cause in words, never a 500,
// and never a 401 for a valid key (which would also count as a failed
// credential); the service takes writes again once the refusal ends.
func TestDatabaseRefusesTheService(t *testing.T) {
	parallel(t)
	databaseURL := pgtest.URL(t)
	ctx := context.Background()
	// The test's own sessions are ended with the service's: one per step.
	admin := func(sql string) {
		t.Helper()
		if err := pgtest.Connect(t, databaseURL).Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	u, err := url.Parse(databaseURL)
	if err != nil {
		t.Fatal(err)
	}
	// Roles are the cluster's: one of this database's own.
	role := strings.TrimPrefix(u.Path, "/") + "_svc"
	admin(`CREATE ROLE ` + role + ` LOGIN`)
	admin(`ALTER SCHEMA public OWNER TO ` + role)
	u.User = url.User(role)
	in := start(t, nil, pgFlags(u.String())...)
	key := createKey(t, in, "refused")
	for _, c := range []struct {
		what, refuse, undo, words string
		readsServed               bool
	}{
		{"the role's login taken away", `ALTER ROLE svc NOLOGIN`, `ALTER ROLE svc LOGIN`, "refused the service's login", false},
		{"a privilege revoked", `ALTER TABLE categories OWNER TO postgres`, `ALTER TABLE categories OWNER TO svc`, "privilege", false},
		// As pg_restore --clean without --single-transaction leaves it
		// between its drop and its create.
		{"a table missing", `ALTER TABLE categories RENAME TO categories_away`, `ALTER TABLE categories_away RENAME TO categories`, "does not exist", false},
		// As an operator sets it to stop writes (or a failover tool does).
		{"transactions read-only by default", `ALTER ROLE svc SET default_transaction_read_only = on`, `ALTER ROLE svc RESET default_transaction_read_only`, "default_transaction_read_only", true},
	} {
		admin(strings.ReplaceAll(c.refuse, "svc", role))
		if _, err := pgtest.TerminateOthers(ctx, databaseURL); err != nil {
			t.Fatal(err)
		}
		// More rounds than the failed credentials an address may send; the
		// first may meet a connection the test's own ending of sessions
		// closed (57P01), a 503 of its own.
		for round := range 12 {
			for _, r := range [][]string{{"POST", "/categories", `{"name":"a"}`}, {"GET", "/categories", ""}} {
				code, body, header := in.get(t, r[0], r[1], r[2], "X-API-Key", key)
				if r[0] == "GET" && c.readsServed {
					if code != 200 && round > 0 {
						t.Errorf("%s: a read: %d %s", c.what, code, body)
					}
					continue
				}
				wantUnavailable(t, c.what+": "+r[0]+" "+r[1], code, body, header)
				if code == 503 && round > 0 && !strings.Contains(body, c.words) {
					t.Errorf("%s: the 503 does not name the cause (%q): %s", c.what, c.words, body)
				}
			}
			if t.Failed() {
				break
			}
		}
		admin(strings.ReplaceAll(c.undo, "svc", role))
		// A role's settings are read at login: sessions open since keep
		// them until they end, as the operator's page says.
		if _, err := pgtest.TerminateOthers(ctx, databaseURL); err != nil {
			t.Fatal(err)
		}
		// The first may meet a connection that was ended.
		waitFor(t, c.what+", then given back: a write with the key", 10*time.Second, func() bool {
			code, _ := in.call(t, "POST", "/categories", `{"name":"back"}`, "X-API-Key", key)
			return code == 201
		})
	}
	if strings.Contains(in.out.String(), "status=500") {
		t.Errorf("a request got 500:\n%s", in.out)
	}
}

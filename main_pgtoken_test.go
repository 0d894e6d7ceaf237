package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"petstore/domains/domaintest"
	"petstore/store/postgres/pgtest"
)

// TestAdminTokenNotYetStored: start-up's write of --admin-token cannot
// land (a session holds the token's row locked, so the write ends at the
// statement timeout), and the service starts anyway, writing it later. The
// banner promised that token: until it is stored, requests with it get 503
// saying so (not 401, which would send the operator hunting for a typo),
// and /readyz 503; once it is stored, it works.
func TestAdminTokenNotYetStored(t *testing.T) {
	parallel(t)
	databaseURL := pgtest.URL(t)
	ctx := context.Background()
	// A first start makes the schema and stores a token the next replaces.
	start(t, nil, pgFlags(databaseURL)...).stop(t)
	lock := pgtest.Connect(t, databaseURL)
	for _, sql := range []string{`BEGIN`, `SELECT 1 FROM meta WHERE key = 'admin_token_sha256' FOR UPDATE`} {
		if err := lock.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	const token = "pat_replacement_0123456789abcdef0123456789"
	auth := []string{"Authorization", "Bearer " + token}
	in := start(t, nil, pgFlags(databaseURL, "--admin-token", token)...)
	code, body, header := in.get(t, "GET", "/admin/project", "", auth...)
	wantUnavailable(t, "the banner's token before it is stored", code, body, header)
	if !strings.Contains(body, "not stored yet") {
		t.Errorf("the 503 does not say the token is not stored yet: %s", body)
	}
	code, body, header = in.get(t, "GET", "/readyz", "")
	wantUnavailable(t, "/readyz before the token is stored", code, body, header)
	if !strings.Contains(body, "not stored yet") {
		t.Errorf("/readyz does not say the token is not stored yet: %s", body)
	}
	if err := lock.Exec(ctx, `ROLLBACK`); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the token stored", time.Minute, func() bool {
		code, _ = in.call(t, "GET", "/admin/project", "", auth...)
		return code != http.StatusServiceUnavailable
	})
	if code != http.StatusOK {
		t.Errorf("the banner's token once stored: %d", code)
	}
	// The token is taken a moment before start-up's retry says it stored it.
	waitFor(t, "/readyz once the token is stored", time.Minute, func() bool {
		code, _ = in.call(t, "GET", "/readyz", "")
		return code == http.StatusOK
	})
	if code, _ := in.call(t, "GET", "/admin/project", "", "Authorization", "Bearer "+domaintest.AdminToken); code != http.StatusUnauthorized {
		t.Errorf("the replaced token: %d, want 401", code)
	}
}

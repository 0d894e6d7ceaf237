package boltstore_test

import (
	"strings"
	"testing"

	"petstore/domains/domaintest"
)

func TestAdminToken(t *testing.T) {
	db := domaintest.OpenStore(t)
	if db.CheckAdminToken("") || db.CheckAdminToken("anything") {
		t.Fatal("a token checks before any was set")
	}
	token, err := db.EnsureAdminToken(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(token, "pat_") || len(token) != 4+43 {
		t.Fatalf("generated token %q: want pat_ and 43 base64url characters", token)
	}
	if !db.CheckAdminToken(token) {
		t.Fatal("the generated token does not check")
	}
	for _, bad := range []string{"", token[:len(token)-1], token + "x", "pat_"} {
		if db.CheckAdminToken(bad) {
			t.Fatalf("%q checks", bad)
		}
	}
	if again, err := db.EnsureAdminToken(ctx, ""); err != nil || again != "" {
		t.Fatalf("second EnsureAdminToken: %q, %v; want the stored token kept", again, err)
	}
	if !db.CheckAdminToken(token) {
		t.Fatal("the generated token stopped checking")
	}
	if got, err := db.EnsureAdminToken(ctx, "given-token"); err != nil || got != "" {
		t.Fatalf("EnsureAdminToken with a given token: %q, %v", got, err)
	}
	if !db.CheckAdminToken("given-token") || db.CheckAdminToken(token) {
		t.Fatal("a given token must replace the earlier one")
	}
	db = mustReopen(t, db)
	if !db.CheckAdminToken("given-token") || db.CheckAdminToken(token) {
		t.Fatal("the given token did not survive a restart")
	}
}

package boltstore_test

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"petstore/store"
)

func TestAPIKeys(t *testing.T) {
	now := time.Date(2026, 3, 4, 5, 6, 7, 890, time.UTC)
	db := mustOpenAt(t, now)

	k1, s1, err := db.CreateAPIKey(ctx, "ci", nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(s1, "psk_"))
	if !strings.HasPrefix(s1, "psk_") || err != nil || len(raw) != 32 {
		t.Fatalf("secret %q: want psk_ and 32 bytes of unpadded base64url", s1)
	}
	if k1.ID != 1 || k1.Name != "ci" || k1.Prefix != s1[4:12] || !k1.CreatedAt.Equal(now.Truncate(time.Second)) {
		t.Fatalf("key %+v for secret %q", k1, s1)
	}
	k2, s2, err := db.CreateAPIKey(ctx, "deploy", nil)
	if err != nil {
		t.Fatal(err)
	}
	if s1 == s2 {
		t.Fatal("two keys got the same secret")
	}

	if got, ok := db.AuthenticateAPIKey(s1); !ok || got != k1 {
		t.Fatalf("authenticate s1: %+v, %v", got, ok)
	}
	if got, ok := db.AuthenticateAPIKey(s2); !ok || got != k2 {
		t.Fatalf("authenticate s2: %+v, %v", got, ok)
	}
	for _, bad := range []string{"", "psk_", s1[:len(s1)-1], s1 + "x", strings.ToUpper(s1)} {
		if _, ok := db.AuthenticateAPIKey(bad); ok {
			t.Fatalf("%q authenticated", bad)
		}
	}

	keys, next, err := db.APIKeys(ctx, store.Page{})
	if err != nil || len(keys) != 2 || keys[0] != k1 || keys[1] != k2 || next != 0 {
		t.Fatalf("APIKeys: %+v, %d, %v", keys, next, err)
	}
	// Pages of one: the first names where the second starts.
	keys, next, err = db.APIKeys(ctx, store.Page{Limit: 1})
	if err != nil || len(keys) != 1 || keys[0] != k1 || next != k1.ID {
		t.Fatalf("APIKeys, first page of 1: %+v, %d, %v", keys, next, err)
	}
	keys, next, err = db.APIKeys(ctx, store.Page{Limit: 1, After: next})
	if err != nil || len(keys) != 1 || keys[0] != k2 || next != 0 {
		t.Fatalf("APIKeys, second page of 1: %+v, %d, %v", keys, next, err)
	}

	if err := db.RevokeAPIKey(ctx, k1.ID); err != nil {
		t.Fatal(err)
	}
	if _, ok := db.AuthenticateAPIKey(s1); ok {
		t.Fatal("a revoked key still authenticates")
	}
	if _, ok := db.AuthenticateAPIKey(s2); !ok {
		t.Fatal("revoking one key revoked another")
	}
	assertError(t, db.RevokeAPIKey(ctx, k1.ID), store.ENOTFOUND, "api key 1 not found")

	// Revocation survives a restart.
	db = mustReopen(t, db)
	if _, ok := db.AuthenticateAPIKey(s1); ok {
		t.Fatal("a revoked key authenticates after a restart")
	}
	if keys, _, err := db.APIKeys(ctx, store.Page{}); err != nil || len(keys) != 1 || keys[0] != k2 {
		t.Fatalf("APIKeys after restart: %+v, %v", keys, err)
	}
}

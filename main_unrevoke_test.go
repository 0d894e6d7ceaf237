package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"petstore/store"
	"petstore/store/boltstore"
)

// petstore unrevoke as docs/operations.md writes it: key ids after the
// flags. The flag parser once refused every positional argument, so the
// command as documented always failed.
func TestUnrevokeCommand(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "petstore.db")
	db, err := boltstore.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	key, _, err := db.CreateAPIKey(ctx, "revoked", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.RevokeAPIKey(ctx, key.ID); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	noEnv := func(string) string { return "" }
	unrevoke := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := run(ctx, append([]string{"unrevoke"}, args...), noEnv, &out)
		return out.String(), err
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--data", path}, "name the ids of the keys"},
		{[]string{"--data", path, "x"}, `"x" is not a key id`},
		{[]string{strconv.FormatInt(key.ID, 10)}, "give one of --data"},
	} {
		if _, err := unrevoke(c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("unrevoke %q: %v, want an error saying %q", c.args, err, c.want)
		}
	}
	out, err := unrevoke("--data", path, strconv.FormatInt(key.ID, 10), "999")
	if err != nil || out != "forgot 1 of the 2 revocations named\n" {
		t.Fatalf("unrevoke: %q, %v", out, err)
	}
	// What it forgot stays forgotten: a second run finds nothing.
	if out, err := unrevoke("--data", path, strconv.FormatInt(key.ID, 10)); err != nil || out != "forgot 0 of the 1 revocations named\n" {
		t.Errorf("unrevoke again: %q, %v", out, err)
	}
}

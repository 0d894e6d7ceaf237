package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"petstore/domains/domaintest"
)

// runOnce runs the service on a data file and returns run's error; a
// service that starts is stopped after a few seconds and reported.
func runOnce(t *testing.T, data string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := run(ctx, []string{"--listen", "127.0.0.1:0", "--rate-limit", "0", "--data", data}, func(string) string { return "" }, io.Discard)
	if ctx.Err() != nil {
		t.Fatalf("the service started on %s", data)
	}
	return err
}

// A damaged data file stops the start with one line that names the file and
// says what is wrong (main prints it and exits with status 1), never with a
// SIGBUS and a goroutine dump, nor by starting an empty store over it.
func TestRunRefusesDamagedDataFile(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(dir, "cut.db")
	domaintest.WriteStoreFile(t, cut, nil)
	if err := os.Truncate(cut, 8<<10); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{empty: "is empty", cut: "is truncated"} {
		err := runOnce(t, path)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), path) || strings.Contains(err.Error(), "\n") {
			t.Errorf("run on %s: %v; want one line naming the file and saying %q", path, err, want)
		}
	}
}

func TestRunSecondInstanceOnTheSameFileSaysItIsInUse(t *testing.T) {
	parallel(t)
	data := filepath.Join(t.TempDir(), "petstore.db")
	start(t, nil, "--data", data)
	err := runOnce(t, data)
	if want := "in use by another process"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("second run: %v; want %q", err, want)
	}
}

package domaintest

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// MountSmallDisk mounts a tmpfs of size bytes on a new folder and unmounts
// it when the test ends: a real file system that runs out of space. It
// needs root (CI runs as root); elsewhere the test is skipped.
func MountSmallDisk(tb testing.TB, size int) string {
	tb.Helper()
	dir := filepath.Join(tb.TempDir(), "small-disk")
	if err := os.Mkdir(dir, 0o700); err != nil {
		tb.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+strconv.Itoa(size)); err != nil {
		if os.Getenv("CI") != "" {
			tb.Fatalf("cannot mount a small tmpfs to run out of disk space (CI runs as root with mount rights): %v", err)
		}
		tb.Skipf("cannot mount a small tmpfs to run out of disk space (needs root): %v", err)
	}
	tb.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			tb.Errorf("unmounting %s: %v", dir, err)
		}
	})
	return dir
}

// FillDisk writes a file until dir's file system is full, and returns it.
func FillDisk(tb testing.TB, dir string) string {
	tb.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for n := len(chunk); n > 0; n /= 2 { // the last bytes too
		for i := 0; ; i++ {
			if i > 1<<14 {
				tb.Fatal("the disk never filled up")
			}
			if _, err := f.Write(chunk[:n]); errors.Is(err, syscall.ENOSPC) {
				break
			} else if err != nil {
				tb.Fatal(err)
			}
		}
	}
	return path
}

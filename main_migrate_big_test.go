package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"petstore/store"
	"petstore/store/boltstore"
	"petstore/store/postgres"
	"petstore/store/postgres/pgtest"
	"petstore/store/storetest"
)

// collectEnv makes the test's child read the data file whole into memory,
// as migrate did before it streamed: the figure to compare with.
const collectEnv = "PETSTORE_TEST_COLLECT"

// TestMigrateStreamsALargeFile moves a file of 50,000 pets (or
// PETSTORE_TEST_MIGRATE_PETS) with
// "petstore migrate" run as a process of its own: the database then holds
// every entity the file held, versions and sequences included; the move
// tells its progress per kind on stdout; and its peak memory (the child's
// VmHWM, from its rusage) is printed beside that of a child that only
// reads the file whole into memory, as the move did before it streamed.
func TestMigrateStreamsALargeFile(t *testing.T) {
	if isChild() {
		if data := os.Getenv(collectEnv); data != "" {
			db, err := boltstore.Open(data, store.Options{})
			if err == nil {
				var s *store.Snapshot
				s, err = store.Collect(context.Background(), db)
				if err == nil {
					fmt.Printf("read %d pets\n", len(s.Pets))
				}
			}
			if err != nil {
				fmt.Println(err)
				os.Exit(1)
			}
			printPeak()
			os.Exit(0)
		}
		args := strings.Split(os.Getenv(childArgsEnv), "\x1f")
		if err := run(context.Background(), args, func(string) string { return "" }, os.Stdout); err != nil {
			fmt.Println("run:", err)
			os.Exit(1)
		}
		printPeak()
		os.Exit(0)
	}
	pets := 50_000
	if n, err := strconv.Atoi(os.Getenv("PETSTORE_TEST_MIGRATE_PETS")); err == nil && n >= 50_000 {
		pets = n // to measure a larger move by hand
	}
	ctx := context.Background()
	data := filepath.Join(t.TempDir(), "petstore.db")
	file, err := boltstore.Open(data, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dogs := store.Category{Name: "dogs"}
	if err := file.CreateCategory(ctx, &dogs); err != nil {
		t.Fatal(err)
	}
	if err := file.ImportPets(ctx, dogs.ID, pets, store.StatusAvailable); err != nil {
		t.Fatal(err)
	}
	for id := int64(1); id <= 50; id++ {
		if _, err := file.SetStock(ctx, id*997, 10); err != nil {
			t.Fatal(err)
		}
		if err := file.PlaceOrder(ctx, &store.Order{PetID: id * 997, Quantity: 2}); err != nil {
			t.Fatal(err)
		}
	}
	renamed := store.Pet{ID: 7, Name: "renamed", CategoryID: dogs.ID}
	if err := file.ReplacePet(ctx, &renamed); err != nil {
		t.Fatal(err)
	}
	if _, _, err := file.CreateAPIKey(ctx, "moved"); err != nil {
		t.Fatal(err)
	}
	if _, err := file.EnsureAdminToken(ctx, ""); err != nil {
		t.Fatal(err)
	}
	want, err := store.Collect(ctx, file)
	if err != nil {
		t.Fatal(err)
	}
	file.Close()

	url := pgtest.URL(t)
	move := childCommand(t, []string{"migrate", "--data", data, "--database", url})
	out, err := move.CombinedOutput()
	if err != nil {
		t.Fatalf("migrate: %v\n%s", err, out)
	}
	moveHWM := peakKiB(t, out)
	read := childCommand(t, nil)
	read.Env = append(read.Env, collectEnv+"="+data)
	readOut, err := read.CombinedOutput()
	if err != nil {
		t.Fatalf("reading the file whole: %v\n%s", err, readOut)
	}
	t.Logf("peak memory (VmHWM) of the move of %d pets: %d MiB; of a process that only reads the file whole: %d MiB (race detector: %v)",
		pets, moveHWM>>10, peakKiB(t, readOut)>>10, raceEnabled)
	t.Logf("the move's memory at its end:\n%s", memoryLines(out))

	for _, line := range []string{
		fmt.Sprintf("pets: %d of %d (50%%)", pets/2, pets),
		fmt.Sprintf("pets: %d of %d (100%%)", pets, pets),
		fmt.Sprintf("inventory entries: %d of %d (100%%)", pets, pets),
		"orders: 50 of 50 (100%)",
		fmt.Sprintf("1 categories, %d pets, 50 orders, 1 API keys", pets),
	} {
		if !strings.Contains(string(out), line) {
			t.Errorf("migrate does not say %q:\n%s", line, out)
		}
	}

	db, err := postgres.Open(ctx, url, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	got, err := store.Collect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	storetest.SameSnapshot(t, want, got)
}

// printPeak prints the process's peak resident memory (VmHWM), for the
// test that started it (a child's rusage would also count what its parent
// held when it was forked), with what it holds at the end: anonymous
// memory apart from the data file's pages mapped in, and the heap the Go
// runtime took from the system.
func printPeak() {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Printf("heap from the system %d kB\n", ms.HeapSys>>10)
	for _, line := range strings.Split(string(status), "\n") {
		for _, field := range []string{"VmHWM:", "RssAnon:", "RssFile:"} {
			if strings.HasPrefix(line, field) {
				fmt.Println("memory", line)
			}
		}
	}
}

// peakKiB reads what printPeak printed, in KiB.
func peakKiB(t *testing.T, out []byte) int64 {
	var kib int64
	for _, line := range strings.Split(string(out), "\n") {
		if _, err := fmt.Sscanf(line, "memory VmHWM: %d kB", &kib); err == nil {
			return kib
		}
	}
	t.Logf("no peak memory printed (no /proc?)")
	return 0
}

// memoryLines are the lines of printPeak in out.
func memoryLines(out []byte) string {
	var lines []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "memory ") || strings.HasPrefix(line, "heap ") {
			lines = append(lines, line)
		}
	}
	return strings.Join(lines, "\n")
}

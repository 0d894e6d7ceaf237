package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"petstore/store/postgres/pgtest"
)

// TestMain lets the test binary serve the Echo baseline, as the command
// does: the benchmark re-executes itself for it.
func TestMain(m *testing.M) {
	if len(os.Args) == 3 && os.Args[1] == echoBaselineArg {
		if err := serveEchoBaseline(os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, "echo baseline:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestLoadtestQuick runs the whole benchmark in a tiny mode (few pets, 20
// TLS domains, 200 ms per row in 2 slices) so that it keeps working: every
// row measured, no errors (a failed handshake, or a TLS server that asked
// its CA for anything, is one). The figures themselves are not checked.
// LOADTEST_1M=1 makes the large store 1,000,000 pets, as the real run has
// (about 15 s more).
func TestLoadtestQuick(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the load benchmark reads Linux's /proc")
	}
	if testing.Short() {
		t.Skip("builds petstore and runs it under load")
	}
	cfg := config{
		duration: 200 * time.Millisecond, rounds: 2, warmup: 50 * time.Millisecond, connections: 8,
		pets: 300, bigPets: 2000, stockPets: 4, readyStarts: 2, settle: 100 * time.Millisecond, rssWait: 20 * time.Second,
		tlsDomains: 20,
		// This revision again, as another: the rows of -vs must work.
		vs: "..",
	}
	if os.Getenv("LOADTEST_1M") != "" {
		cfg.bigPets = 1_000_000
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var out, log bytes.Buffer
	rep, err := run(ctx, cfg, &out, &log)
	t.Logf("progress:\n%s\nreport:%s", log.String(), out.String())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.errors) > 0 {
		t.Fatalf("%d error(s): %s", len(rep.errors), strings.Join(rep.errors, "\n"))
	}

	small, big := humanCount(cfg.pets), humanCount(cfg.bigPets)
	loadRows := []string{
		labelEchoBaseline,
		"GET /pets/{id}",
		"GET /pets?limit=20 first page, " + small + " pets",
		"GET /pets?limit=20 90% deep, " + small + " pets",
		"GET / (the site)",
		"POST /pets (durable)",
		labelPostPetsKeyed,
		"POST /store/orders (durable)",
		labelPostPetsTwin,
		labelPostPetsHook,
		"GET /pets?limit=20 first page, " + big + " pets",
		"GET /pets?limit=20 90% deep, " + big + " pets",
	}
	for _, label := range loadRows[1:8] { // the small store's
		loadRows = append(loadRows, label+", "+revision(ctx, cfg.vs))
	}
	tlsRows := []string{tlsRow(1), tlsRow(cfg.tlsDomains)}
	loadRows = append(loadRows, tlsRows...)
	// Without PostgreSQL's binaries its rows are one skipped line.
	var skipped []string
	if pgtest.Installed() {
		loadRows = append(loadRows, labelPGGetPet, labelPGPostPets, labelPGOrders)
	} else {
		skipped = append(skipped, "PostgreSQL rows")
	}
	valueRows := []string{
		labelFsyncBaseline,
		"idle RSS after start, " + small + " pets",
		"idle RSS after start, " + big + " pets",
		"RSS after all rows, " + small + " pets",
		"peak RSS, " + small + " pets",
		"RSS after the load ends, " + small + " pets",
		"  of which the heap and other anonymous memory, " + small + " pets",
		"  of which the data file's mapped pages, " + small + " pets",
		"idle RSS after start, Echo baseline",
		labelReadyTime + ", " + small + " pets",
		labelReadyTime + ", " + big + " pets",
		"seeding " + small + " pets with store.ImportPets",
		"seeding " + big + " pets with store.ImportPets",
	}

	lines := map[string]line{}
	labelled := 0 // lines with a label: rows, counting any label twice
	for _, l := range rep.lines {
		if l.label != "" {
			lines[l.label] = l
			labelled++
		}
	}
	text := out.String()
	for _, label := range append(append([]string{}, loadRows...), valueRows...) {
		if _, ok := lines[label]; !ok {
			t.Errorf("no row %q; rows: %q", label, slices.Sorted(maps.Keys(lines)))
		}
		if !strings.Contains(text, label) {
			t.Errorf("row %q is not in the printed table", label)
		}
	}
	for _, label := range loadRows {
		if l := lines[label]; l.rps == "-" || l.cpu == "-" || l.p99 == "-" || l.errors != "0" {
			t.Errorf("row %q: req/s %s, CPU/req %s, p99 %s, errors %s", label, l.rps, l.cpu, l.p99, l.errors)
		}
	}
	for _, label := range tlsRows {
		if l := lines[label]; l.rps == "0" {
			t.Errorf("row %q: no handshake", label)
		}
	}
	if v := lines[tlsRow(cfg.tlsDomains)].verdict; v != "PASS*" && v != "MISS*" {
		t.Errorf("row %q: verdict %q, want a verdict with the caveat of a domain count other than the target's", tlsRow(cfg.tlsDomains), v)
	}
	if !strings.Contains(text, "nothing was asked of the CA") {
		t.Errorf("no note that the TLS servers asked nothing of the CA")
	}
	for _, l := range rep.lines {
		if l.verdict == "not measured" || l.verdict == "skipped" && !slices.Contains(skipped, l.label) {
			t.Errorf("row %q: %s", l.label, l.verdict)
		}
	}
	var ceiling bool
	for _, l := range rep.lines {
		if l.on == "CPU ceiling vs Echo baseline" {
			ceiling = l.measured != "-" && l.verdict == "info"
		}
	}
	if !ceiling {
		t.Error("POST /pets has no measured CPU ceiling line")
	}
	var vsTarget bool
	for _, l := range rep.lines {
		vsTarget = vsTarget || l.on == "req/s vs "+revision(ctx, cfg.vs) && l.measured != "-" && l.target == ">= 0.90x"
	}
	if !vsTarget {
		t.Error("POST /pets is not judged against the revision of -vs")
	}
	for _, label := range []string{labelEchoBaseline, "GET /pets/{id}", "POST /pets (durable)"} {
		found := false
		for _, c := range rep.clientCPU {
			found = found || (strings.HasPrefix(c, label+" ") && !strings.HasSuffix(c, " 0.0 µs"))
		}
		if !found || !strings.Contains(text, "the client's CPU per request") {
			t.Errorf("the client's CPU per request of %q is not in the notes (%q)", label, rep.clientCPU)
		}
	}
	for _, n := range rep.notes {
		if strings.Contains(n, "keep-alive broken") {
			t.Errorf("keep-alive: %s", n)
		}
	}
	if labelled != len(loadRows)+len(valueRows)+len(skipped) {
		t.Errorf("rows %q: a row the test does not know; add it above", slices.Sorted(maps.Keys(lines)))
	}
}

// A run that fails before measuring anything still prints its table: every
// row there, none measured.
func TestReportOfNothingMeasured(t *testing.T) {
	cfg, err := parseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	b := &bench{cfg: cfg, loads: map[string]*loadResult{}}
	var out bytes.Buffer
	b.buildReport().print(&out)
	for _, l := range b.buildReport().lines {
		if l.measured != "" && l.measured != "-" || l.rps != "" && l.rps != "-" {
			t.Errorf("row %q: measured %q, req/s %q", l.label, l.measured, l.rps)
		}
	}
	for _, label := range []string{labelGetPet, labelPostPets, tlsRow(cfg.tlsDomains), pageRow(cfg.bigPets, true)} {
		if !strings.Contains(out.String(), label+" ") {
			t.Errorf("no row %q in\n%s", label, out.String())
		}
	}
}

func TestFlags_Quick(t *testing.T) {
	var sink bytes.Buffer
	c, err := parseFlags([]string{"-quick"}, &sink)
	if err != nil || c.duration != quickDuration || c.rounds != quickRounds || c.warmup != quickWarmup || c.bigPets != quickBigPets {
		t.Fatalf("-quick: %+v, %v", c, err)
	}
	c, err = parseFlags([]string{"-quick", "-duration", "3s", "-big-pets", "1000000"}, &sink)
	if err != nil || c.duration != 3*time.Second || c.warmup != quickWarmup || c.bigPets != 1_000_000 {
		t.Fatalf("-quick with explicit flags: %+v, %v", c, err)
	}
	if _, err := parseFlags([]string{"-pets", "10"}, &sink); err == nil {
		t.Fatal("-pets 10 accepted")
	}
	// The rows of the two stores are named by their sizes.
	if _, err := parseFlags([]string{"-pets", "2000", "-big-pets", "2000"}, &sink); err == nil {
		t.Fatal("-big-pets equal to -pets accepted")
	}
}

// The README's example: the cursor after pet 1.
func TestEncodeCursor(t *testing.T) {
	if got := encodeCursor(1); got != "AAAAAAAAAAH_ExqjeA" {
		t.Fatalf("encodeCursor(1) = %q", got)
	}
}

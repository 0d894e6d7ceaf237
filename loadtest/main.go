// Command loadtest is Petstore's load benchmark (`go run ./loadtest`,
// Linux only): it builds the binary, seeds its stores, drives it over
// loopback and prints one table, each row beside its baseline and target
// (docs/performance.md). A MISS is a measurement: the exit status is
// non-zero only on real errors.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// echoBaselineArg, first, makes the binary serve the Echo baseline on the
// following address: the benchmark re-executes itself so, so that the
// baseline is measured as a process of its own, as the server is.
const echoBaselineArg = "-serve-echo-baseline"

func main() {
	if len(os.Args) == 3 && os.Args[1] == echoBaselineArg {
		if err := serveEchoBaseline(os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, "echo baseline:", err)
			os.Exit(1)
		}
		return
	}
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	} else if err != nil {
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := run(ctx, cfg, os.Stdout, os.Stderr)
	switch {
	case ctx.Err() != nil:
		fmt.Fprintln(os.Stderr, "loadtest: interrupted; every server it started is stopped")
		os.Exit(130)
	case err != nil:
		fmt.Fprintln(os.Stderr, "loadtest:", err)
		os.Exit(1)
	case len(rep.errors) > 0:
		fmt.Fprintf(os.Stderr, "loadtest: %d error(s), listed under the table\n", len(rep.errors))
		os.Exit(1)
	}
}

type config struct {
	duration    time.Duration // measured part of each row
	rounds      int           // slices the measured part is cut into, rows taking turns
	warmup      time.Duration // unmeasured traffic before it
	connections int           // concurrent keep-alive clients
	pets        int           // pets of the small store
	bigPets     int           // pets imported into the large store; 0 skips it
	stockPets   int           // pets given stock for the order row
	readyStarts int           // starts of the large store timed to ready
	tlsDomains  int           // verified domains of the second TLS server; 0 skips the TLS rows
	settle      time.Duration // wait after ready before reading idle RSS
	rssWait     time.Duration // longest wait after the load for RSS to come back near idle
	serverLog   string        // where the server's request log goes
	cpuProfiles string        // where each petstore server writes its CPU profile
	quick       bool
	// onlyPostgres runs the PostgreSQL rows alone; postgresVs is the
	// source folder of another revision measured beside them.
	onlyPostgres bool
	postgresVs   string
	// vs is the source folder of another revision measured beside every
	// row of the small store.
	vs string
}

// The defaults of -quick, and limits of the flags.
const (
	quickDuration = 2 * time.Second
	quickWarmup   = 500 * time.Millisecond
	quickRounds   = 2
	quickSettle   = 500 * time.Millisecond
	quickBigPets  = 100_000
	minPets       = 250
	maxTLSDomains = 100_000
)

func parseFlags(args []string, out io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("loadtest", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprintln(out, "usage: go run ./loadtest [flags]   (from the module root; Linux)")
		fmt.Fprintln(out, "Builds petstore, starts it on 127.0.0.1 and measures it; see docs/performance.md.")
		fs.PrintDefaults()
	}
	fs.DurationVar(&c.duration, "duration", 5*time.Second, "measured duration of each row")
	fs.IntVar(&c.rounds, "rounds", 5, "rounds the measured duration is cut into: the rows take turns, one slice each per round, so that all see the same background load")
	fs.DurationVar(&c.warmup, "warmup", time.Second, "unmeasured warm-up of each row")
	fs.IntVar(&c.connections, "connections", 64, "concurrent keep-alive connections")
	fs.IntVar(&c.pets, "pets", 10_000, "pets in the small store (single pets, pages, site, orders, creates)")
	fs.IntVar(&c.bigPets, "big-pets", 1_000_000, "pets imported into the large store (list pages, idle RSS, time to ready); 0 skips it")
	fs.IntVar(&c.stockPets, "stock-pets", 16, "pets given 1,000,000 in stock for POST /store/orders")
	fs.IntVar(&c.readyStarts, "ready-starts", 3, "starts of the large store timed to ready (the median is reported)")
	fs.IntVar(&c.tlsDomains, "tls-domains", targetTLSDomains, "verified domains (each with its certificate) of the server the 1-domain TLS row is compared with; 0 skips the TLS rows")
	fs.DurationVar(&c.settle, "settle", time.Second, "wait after ready before reading the idle RSS")
	fs.DurationVar(&c.rssWait, "rss-wait", time.Minute, "after the last row, how long to poll the small store's RSS for it to come back within 2x idle")
	fs.StringVar(&c.serverLog, "server-log", "", "file for the servers' request logs (default: discarded)")
	fs.BoolVar(&c.onlyPostgres, "only-postgres", false, "run the PostgreSQL rows only (no bbolt rows, baselines, large store or TLS rows)")
	fs.StringVar(&c.postgresVs, "postgres-vs", "", "source folder of another revision of petstore (a worktree of main, say): built there and measured beside this one, on a PostgreSQL database of its own seeded alike, in the same rounds, so that the PostgreSQL rows show before and after in one run")
	fs.StringVar(&c.vs, "vs", "", "source folder of another revision of petstore (a worktree of main, say): built there and measured beside this one, on a small store of its own seeded alike, sent every row of the small store in the same rounds, so that they show before and after in one run; POST /pets is held to 0.90x its req/s")
	fs.StringVar(&c.cpuProfiles, "cpu-profiles", "", "directory where each petstore server writes a CPU profile of its whole run, named after it (read with go tool pprof)")
	fs.BoolVar(&c.quick, "quick", false, fmt.Sprintf("quick run: -duration %v -rounds %d -warmup %v -settle %v -big-pets %d unless given", quickDuration, quickRounds, quickWarmup, quickSettle, quickBigPets))
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		err := fmt.Errorf("unexpected argument %q", fs.Arg(0))
		fmt.Fprintln(out, err)
		return c, err
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for name, v := range map[string]any{"duration": quickDuration, "warmup": quickWarmup, "rounds": quickRounds, "settle": quickSettle, "big-pets": quickBigPets} {
		if c.quick && !given[name] {
			fs.Set(name, fmt.Sprint(v)) // cannot fail: each value is of its flag's type
		}
	}
	var err error
	switch {
	case c.duration <= 0 || c.warmup < 0 || c.settle < 0 || c.rssWait < 0:
		err = errors.New("-duration must be positive, -warmup, -settle and -rss-wait not negative")
	case c.rounds < 1 || c.duration/time.Duration(c.rounds) < 10*time.Millisecond:
		err = errors.New("-rounds must be at least 1, and slices of -duration/-rounds at least 10ms")
	case c.connections < 1:
		err = errors.New("-connections must be at least 1")
	case c.pets < minPets:
		err = fmt.Errorf("-pets must be at least %d (a 90%% deep page needs another page after it)", minPets)
	case c.bigPets != 0 && c.bigPets < minPets:
		err = fmt.Errorf("-big-pets must be 0 (skip) or at least %d", minPets)
	case c.bigPets == c.pets:
		err = errors.New("-big-pets must differ from -pets: the rows are named by their store's size")
	case c.stockPets < 1 || c.stockPets > c.pets:
		err = errors.New("-stock-pets must be from 1 to -pets")
	case c.readyStarts < 1:
		err = errors.New("-ready-starts must be at least 1")
	case c.postgresVs != "" && !isModuleDir(c.postgresVs):
		err = fmt.Errorf("-postgres-vs %s: not a folder holding go.mod", c.postgresVs)
	case c.vs != "" && !isModuleDir(c.vs):
		err = fmt.Errorf("-vs %s: not a folder holding go.mod", c.vs)
	case c.vs != "" && c.onlyPostgres:
		err = errors.New("-vs measures the small store's rows, which -only-postgres leaves out: use -postgres-vs")
	case c.tlsDomains != 0 && (c.tlsDomains < 2 || c.tlsDomains > maxTLSDomains):
		err = fmt.Errorf("-tls-domains must be 0 (skip the TLS rows) or from 2 to %d", maxTLSDomains)
	}
	if err != nil {
		fmt.Fprintln(out, err)
	}
	return c, err
}

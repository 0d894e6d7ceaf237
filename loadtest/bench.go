package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"petstore/store/boltstore/bolttest"
	"petstore/store/postgres/pgtest"
)

// Labels of the rows measured on both stores (PostgreSQL rows add
// onPostgres); a label names its results in bench.loads.
const (
	labelGetPet   = "GET /pets/{id}"
	labelPostPets = "POST /pets (durable)"
	labelOrders   = "POST /store/orders (durable)"
	// labelPostPetsKeyed is POST /pets with its own Idempotency-Key each.
	labelPostPetsKeyed = "POST /pets with an Idempotency-Key (durable)"
	onPostgres         = ", PostgreSQL"
	labelPGGetPet      = labelGetPet + onPostgres
	labelPGPostPets    = labelPostPets + onPostgres
	labelPGOrders      = labelOrders + onPostgres
	labelSite          = "GET / (the site)"
)

const pageLimit = 20

// pageRow labels the row reading the first page of n pets, or one 90%
// deep.
func pageRow(n int, deep bool) string {
	if deep {
		return fmt.Sprintf("GET /pets?limit=%d 90%% deep, %s pets", pageLimit, humanCount(n))
	}
	return fmt.Sprintf("GET /pets?limit=%d first page, %s pets", pageLimit, humanCount(n))
}

// job is one row's load: a warm-up, then measured slices. Jobs take turns
// slice by slice, so that a row and its baseline share background load.
type job struct {
	label string
	// warm sends unmeasured load for d; nil means no warm-up.
	warm func(ctx context.Context, d time.Duration) *loadResult
	// slice sends load for d and measures it.
	slice func(ctx context.Context, d time.Duration) (*loadResult, error)
}

// serverJob is the job of a row whose load send sends to server p, warm-up
// and slices alike.
func (b *bench) serverJob(label string, p *proc, send func(ctx context.Context, d time.Duration) *loadResult) job {
	return job{label: label, warm: send, slice: b.measured(p, send)}
}

func (b *bench) httpJob(label string, p *proc, w workload) job {
	return b.serverJob(label, p, func(ctx context.Context, d time.Duration) *loadResult { return b.phase(ctx, p, w, d) })
}

// bench is one run: settings, processes and measures (zero: not measured).
type bench struct {
	cfg        config
	log        io.Writer
	begun      time.Time
	dir        string // temporary: the binary and the data files
	bin        string // the petstore binary
	src        string // the module root it was built from
	adminToken string
	serverLog  *os.File // cfg.serverLog, open
	procs      []*proc
	smallProc  *proc // the server on the small store
	tlsTargets []*tlsTarget
	// pgCluster serves the PostgreSQL rows; pgSkipped says why there are none.
	pgCluster *pgtest.Cluster
	pgSkipped string
	// pgVs names -postgres-vs's revision, which ends its rows' labels.
	pgVs string
	// others are -vs's and -postgres-vs's revisions by source folder; vsRev
	// names -vs's, which ends its rows' labels.
	others map[string]otherRevision
	vsRev  string
	jobs   []job

	loads map[string]*loadResult // by row label

	buildTime time.Duration

	echoIdleRSS  int64
	smallImport  time.Duration
	smallReady   time.Duration
	idleRSS      int64 // small store, after start
	afterLoadRSS int64 // small store, after every row
	peakRSS      int64 // small store, its high-water mark (VmHWM)
	// settledRSS is the small store's RSS once back within
	// targetSettledVsIdle of idle, or at cfg.rssWait; settleTime is when.
	settledRSS int64
	settleTime time.Duration
	// settledAnon and settledFile split settledRSS: anonymous memory, which
	// the service can give back, and the data file's mapped page cache.
	settledAnon, settledFile int64

	importTime  time.Duration
	bigFileSize int64
	bigReady    []time.Duration
	bigIdleRSS  int64

	hook *hookRow // the webhook row's server and receiver

	loadBefore, loadAfter string   // /proc/loadavg: was the machine busy with something else?
	notes                 []string // worth saying under the table

	errors []string // real errors: they make the exit status non-zero
}

func (b *bench) progress(format string, args ...any) {
	fmt.Fprintf(b.log, "[%6.1fs] %s\n", time.Since(b.begun).Seconds(), fmt.Sprintf(format, args...))
}

// fail records a real error and carries on: the table is still worth
// printing.
func (b *bench) fail(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	b.errors = append(b.errors, msg)
	b.progress("ERROR: %s", msg)
}

// run measures everything, prints the table to out (after an error too)
// and returns the report.
func run(ctx context.Context, cfg config, out, log io.Writer) (*report, error) {
	b := &bench{cfg: cfg, log: log, begun: time.Now(), loads: map[string]*loadResult{}, others: map[string]otherRevision{}}
	b.loadBefore = loadAverage()
	err := b.measure(ctx)
	b.cleanup()
	b.loadAfter = loadAverage()
	rep := b.buildReport()
	rep.print(out)
	return rep, err
}

// cleanup kills every process still running and removes the temporary files.
func (b *bench) cleanup() {
	for _, p := range b.procs {
		p.kill()
	}
	if b.pgCluster != nil {
		b.pgCluster.Stop()
	}
	if b.serverLog != nil {
		b.serverLog.Close()
	}
	if b.hook != nil {
		b.hook.rcv.close()
	}
	if b.dir != "" {
		os.RemoveAll(b.dir)
	}
}

// measure sets everything up, runs every row's load, and stops the
// servers.
func (b *bench) measure(ctx context.Context) error {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		return fmt.Errorf("needs Linux /proc: %w", err)
	}
	var err error
	if b.dir, err = os.MkdirTemp("", "petstore-loadtest-"); err != nil {
		return err
	}
	b.adminToken = "pat_loadtest_" + rand.Text()
	if b.cfg.serverLog != "" {
		if b.serverLog, err = os.OpenFile(b.cfg.serverLog, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
			return err
		}
	}

	b.progress("building petstore (go build -o %s .)", filepath.Join(b.dir, "petstore"))
	t := time.Now()
	if b.bin, b.src, err = buildServer(ctx, b.dir); err != nil {
		return err
	}
	b.buildTime = time.Since(t)

	bare, err := bolttest.OpenFsyncBaseline(b.dir)
	if err != nil {
		return err
	}
	defer bare.Close()
	setUps := []func(context.Context) error{b.echoBaseline, b.smallStore, b.webhookStore, b.postgresStore, b.bigStore, b.tlsServers}
	if b.cfg.onlyPostgres {
		setUps = []func(context.Context) error{b.postgresStore}
	} else {
		b.jobs = append(b.jobs, job{label: labelFsyncBaseline, slice: fsyncJob(bare)})
	}
	for _, setUp := range setUps {
		if err := setUp(ctx); err != nil {
			return err
		}
	}
	if err := b.runJobs(ctx); err != nil {
		return err
	}
	if err := b.webhookCatchUp(ctx); err != nil {
		return err
	}
	if b.smallProc != nil {
		if err := b.rssAfterLoad(ctx); err != nil {
			return err
		}
	}
	for _, p := range b.procs {
		if err := p.stop(); err != nil {
			return err
		}
	}
	b.checkTLSServers(ctx)
	return nil
}

// runJobs warms every job up, then runs cfg.rounds rounds, each job taking
// one slice of cfg.duration/cfg.rounds per round.
func (b *bench) runJobs(ctx context.Context) error {
	slice := b.cfg.duration / time.Duration(b.cfg.rounds)
	b.progress("%d rows: %v warm-up each, then %d rounds of a %v slice per row, %d connections",
		len(b.jobs), b.cfg.warmup, b.cfg.rounds, slice, b.cfg.connections)
	warm := map[string]*loadResult{}
	for _, j := range b.jobs {
		if j.warm != nil && b.cfg.warmup > 0 {
			warm[j.label] = j.warm(ctx, b.cfg.warmup)
			if err := ctx.Err(); err != nil {
				return err
			}
		}
	}
	for r := range b.cfg.rounds {
		b.progress("round %d of %d", r+1, b.cfg.rounds)
		for _, j := range b.jobs {
			res, err := j.slice(ctx, slice)
			if err != nil {
				return fmt.Errorf("%s: %w", j.label, err)
			}
			if b.loads[j.label] == nil {
				b.loads[j.label] = &loadResult{}
			}
			b.loads[j.label].add(res)
		}
	}
	for _, j := range b.jobs {
		res := b.loads[j.label]
		if w := warm[j.label]; w != nil && w.errors > 0 {
			res.errors += w.errors
			res.errSamples = append(w.errSamples, res.errSamples...)
		}
		res.finish()
		// A few dials are the pool growing past the warm-up's concurrency; more
		// mean connections close.
		if res.dials > int64(b.cfg.connections) {
			b.notes = append(b.notes, fmt.Sprintf("%s: %d new connections during the measured slices (keep-alive broken?)", j.label, res.dials))
		}
		if res.errors > 0 {
			b.fail("%s: %d failed or non-2xx answer(s), e.g.\n%s", j.label, res.errors, indent(strings.Join(res.errSamples, "\n")))
		}
	}
	return nil
}

// rssAfterLoad reads the small store's RSS and peak right after the load,
// then polls RSS until within targetSettledVsIdle of idle or cfg.rssWait.
func (b *bench) rssAfterLoad(ctx context.Context) error {
	var err error
	if b.afterLoadRSS, err = b.smallProc.rss(); err != nil {
		return err
	}
	if b.peakRSS, err = b.smallProc.procStatus("VmHWM"); err != nil {
		return err
	}
	b.progress("waiting up to %v for the RSS to come back within %gx idle", b.cfg.rssWait, targetSettledVsIdle)
	start := time.Now()
	for {
		if b.settledRSS, err = b.smallProc.rss(); err != nil {
			return err
		}
		b.settleTime = time.Since(start)
		if float64(b.settledRSS) <= targetSettledVsIdle*float64(b.idleRSS) || b.settleTime >= b.cfg.rssWait {
			if b.settledAnon, err = b.smallProc.procStatus("RssAnon"); err != nil {
				return err
			}
			b.settledFile, err = b.smallProc.procStatus("RssFile")
			return err
		}
		select {
		case <-time.After(500 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// settleRSS waits for the process to settle after its start and reads
// its RSS.
func (b *bench) settleRSS(ctx context.Context, p *proc) (int64, error) {
	select {
	case <-time.After(b.cfg.settle):
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	return p.rss()
}

func (b *bench) echoBaseline(ctx context.Context) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	p, err := b.startServer(ctx, "Echo baseline", self, nil, echoBaselineArg, "ADDR")
	if err != nil {
		return err
	}
	if b.echoIdleRSS, err = b.settleRSS(ctx, p); err != nil {
		return err
	}
	b.jobs = append(b.jobs, b.httpJob(labelEchoBaseline, p, get(echoBaselinePath)))
	return nil
}

// startPetstore starts bin (this revision's b.bin or another's) on
// loopback, rate limiter off, with args naming its store, and waits until
// ready. It writes a CPU profile only if it knows the flag.
func (b *bench) startPetstore(ctx context.Context, name, bin string, watch io.Writer, args ...string) (*proc, error) {
	args = append([]string{"--listen", "ADDR", "--rate-limit", "0"}, args...)
	if b.cfg.cpuProfiles != "" && knowsFlag(ctx, bin, "cpu-profile") {
		file := strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
				return r
			}
			return '-'
		}, strings.ToLower(name))
		args = append(args, "--cpu-profile", filepath.Join(b.cfg.cpuProfiles, file+".prof"))
	}
	return b.startServer(ctx, name, bin, watch, args...)
}

// apiClient makes the few one-off calls of seeding and checks.
type apiClient struct {
	client *http.Client
	base   string
	apiKey string
}

func (a *apiClient) do(ctx context.Context, method, path string, h http.Header, body string, want int, out any) (http.Header, error) {
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	maps.Copy(req.Header, h)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if a.apiKey != "" && method != "GET" {
		req.Header.Set("X-API-Key", a.apiKey)
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != want {
		return nil, fmt.Errorf("%s %s: %s, want %d: %s", method, path, resp.Status, want, bytes.TrimSpace(data))
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return nil, fmt.Errorf("%s %s: %w", method, path, err)
		}
	}
	return resp.Header, nil
}

func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(data)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "?"
}

// humanCount writes 10000 as 10k and 1000000 as 1M.
func humanCount(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return strconv.Itoa(n/1_000_000) + "M"
	case n >= 1000 && n%1000 == 0:
		return strconv.Itoa(n/1000) + "k"
	}
	return strconv.Itoa(n)
}

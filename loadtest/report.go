package main

import (
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// report is the printed result: a header, one table, notes and errors.
type report struct {
	header []string
	lines  []line
	notes  []string
	errors []string
	// clientCPU lists each load row's client CPU per request, for a note.
	clientCPU []string
}

// line is one line of the table; a row judged twice has a second line
// with the judgement cells only.
type line struct {
	label                      string
	rps, p50, p99, cpu, errors string
	on, measured, target       string
	verdict                    string
}

// check is one judgement: a measured ratio or figure against a target,
// for information when op is "", a baseline's mark when unit is "" too.
type check struct {
	on     string // what is compared: "CPU/req vs Echo baseline"
	value  float64
	ok     bool   // measured
	unit   string // "x", "MB", "ms"
	op     string // "<=", ">=" or "" (no target)
	target float64
	caveat bool // measured on another store size than the target names
}

func (c check) cells() (measured, target, verdict string) {
	switch {
	case !c.ok:
		return "-", c.fmt(c.target, c.op != ""), "not measured"
	case c.unit == "": // a baseline: nothing to judge
		return "-", "-", "-"
	}
	measured = c.fmt(c.value, true)
	if c.op == "" {
		return measured, "-", "info"
	}
	pass := c.op == "<=" && c.value <= c.target || c.op == ">=" && c.value >= c.target
	verdict = "MISS"
	if pass {
		verdict = "PASS"
	}
	if c.caveat {
		verdict += "*"
	}
	return measured, c.op + " " + c.fmt(c.target, true), verdict
}

func (c check) fmt(v float64, show bool) string {
	if !show {
		return "-"
	}
	switch c.unit {
	case "x":
		return fmt.Sprintf("%.2fx", v)
	case "ms":
		return fmt.Sprintf("%.1f ms", v)
	}
	return fmt.Sprintf("%.2f %s", v, c.unit)
}

// versus judges the ratio a/b, measured when both are.
func versus(on string, a, b float64, op string, target float64) check {
	c := check{on: on, unit: "x", op: op, target: target}
	if a > 0 && b > 0 {
		c.value, c.ok = a/b, true
	}
	return c
}

func cpuVs(res, base *loadResult, baseName, op string, target float64) check {
	return versus("CPU/req vs "+baseName, float64(res.cpuPerReq(serverCPU)), float64(base.cpuPerReq(serverCPU)), op, target)
}

// cpuCeiling is the req/s ratio of res to base the CPU alone would allow:
// with the cores fully used, a row's rate is the cores over its client's
// and server's CPU per request.
func cpuCeiling(res, base *loadResult, baseName string) check {
	return versus("CPU ceiling vs "+baseName, float64(base.cpuPerReq(serverCPU)+base.cpuPerReq(clientCPU)), float64(res.cpuPerReq(serverCPU)+res.cpuPerReq(clientCPU)), "", 0)
}

func rpsVs(res, base *loadResult, baseName, op string, target float64) check {
	return versus("req/s vs "+baseName, res.rps(), base.rps(), op, target)
}

func mb(bytes int64) float64 { return float64(bytes) / (1 << 20) }

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// Targets the performance work set (docs/performance.md lists them).
const (
	targetGetPetCPU   = 1.2  // GET /pets/{id} CPU/req, x Echo baseline
	targetPostVsEcho  = 0.55 // POST /pets req/s, x Echo baseline
	targetPostVsFsync = 5    // POST /pets req/s, x one-fsync-per-write puts/s
	targetDeepVsFirst = 1.2  // deep page CPU/req, x first page
	targetBigVsSmall  = 1.2  // first page at 1M, x at 10k
	// targetPostVsRevision: POST /pets req/s, x -vs's revision beside it.
	targetPostVsRevision = 0.9
	targetIdleRSSMB      = 25
	// targetSettledVsIdle: RSS within a minute after the load, x idle RSS.
	targetSettledVsIdle = 2.0
	targetReadyMS       = 200 // with 1M pets
	targetBigPets       = 1_000_000
	targetSmallPets     = 10_000
	targetTLSManyVsOne  = 0.9   // new TLS connections/s with 1,000 domains, x with 1
	targetTLSDomains    = 1_000 // the domains of that target
	labelReadyTime      = "time to ready after start"
	labelEchoBaseline   = "Echo baseline: GET " + echoBaselinePath + ", no middleware (own process)"
	labelFsyncBaseline  = "bbolt baseline: sequential puts, one fsync each (req = put)"
)

// buildReport turns what was measured into the table, judging each row
// against its baseline and target.
func (b *bench) buildReport() *report {
	r := &report{errors: b.errors}
	c := b.cfg
	small, big := humanCount(c.pets), humanCount(c.bigPets)
	r.header = []string{
		fmt.Sprintf("Petstore load benchmark, %s, %s %s/%s, %d CPUs shared by the client and the servers",
			b.begun.Format("2006-01-02 15:04"), runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU()),
		fmt.Sprintf("each load row: %d keep-alive connections (Go client), %v warm-up, then %v measured in %d slices, the rows taking turns; requests to 127.0.0.1 only",
			c.connections, c.warmup, c.duration, c.rounds),
		"CPU/req: the server's CPU time (its threads' /proc schedstat) over the measured part / requests; server started with --rate-limit 0",
		fmt.Sprintf("load average before: %s, after: %s (other work on the machine makes every figure worse)", b.loadBefore, b.loadAfter),
	}

	if c.onlyPostgres {
		b.postgresReport(r)
		r.notes = append(r.notes, b.notes...)
		return r
	}
	echo, fsync := b.loads[labelEchoBaseline], b.loads[labelFsyncBaseline]
	r.load(labelEchoBaseline, echo, check{on: "baseline of GET CPU/req, POST req/s", ok: echo != nil})
	r.load(labelFsyncBaseline, fsync, check{on: "baseline of POST req/s", ok: fsync != nil})

	get, first, deep := b.loads[labelGetPet], b.loads[pageRow(c.pets, false)], b.loads[pageRow(c.pets, true)]
	b.smallRow(r, labelGetPet, cpuVs(get, echo, "Echo baseline", "<=", targetGetPetCPU))
	b.smallRow(r, pageRow(c.pets, false), cpuVs(first, echo, "Echo baseline", "", 0))
	b.smallRow(r, pageRow(c.pets, true), cpuVs(deep, first, "first page", "<=", targetDeepVsFirst))
	b.smallRow(r, labelSite, cpuVs(b.loads[labelSite], echo, "Echo baseline", "", 0))
	post := b.loads[labelPostPets]
	b.smallRow(r, labelPostPets,
		rpsVs(post, echo, "Echo baseline", ">=", targetPostVsEcho),
		rpsVs(post, fsync, "one fsync per write", ">=", targetPostVsFsync),
		cpuCeiling(post, echo, "Echo baseline"))
	b.smallRow(r, labelPostPetsKeyed, rpsVs(b.loads[labelPostPetsKeyed], post, "without a key", "", 0))
	orders := b.loads[labelOrders]
	b.smallRow(r, labelOrders,
		rpsVs(orders, echo, "Echo baseline", "", 0),
		rpsVs(orders, fsync, "one fsync per write", "", 0))

	b.webhookReport(r)
	b.postgresReport(r)

	bigCaveat := c.bigPets != targetBigPets
	if c.bigPets > 0 {
		bf, bd := b.loads[pageRow(c.bigPets, false)], b.loads[pageRow(c.bigPets, true)]
		vsSmall := cpuVs(bf, first, "first page at "+small, "<=", targetBigVsSmall)
		vsSmall.caveat = bigCaveat || c.pets != targetSmallPets
		r.load(pageRow(c.bigPets, false), bf, vsSmall)
		r.load(pageRow(c.bigPets, true), bd, cpuVs(bd, bf, "first page at "+big, "<=", targetDeepVsFirst))
	} else {
		r.lines = append(r.lines, line{label: "GET /pets, large store", on: "skipped (-big-pets 0)", verdict: "skipped"})
	}

	// TLS rows: req = one new connection (connect, full handshake, close),
	// to a server with 1 domain and one with cfg.tlsDomains.
	if c.tlsDomains > 0 {
		manyLabel := tlsRow(c.tlsDomains)
		one, many := b.loads[tlsRow(1)], b.loads[manyLabel]
		r.load(tlsRow(1), one, check{on: "baseline of handshakes/s", ok: one != nil})
		vsOne := versus("handshakes/s vs 1 domain", many.rps(), one.rps(), ">=", targetTLSManyVsOne)
		vsOne.caveat = c.tlsDomains != targetTLSDomains
		r.load(manyLabel, many, vsOne, cpuVs(many, one, "1 domain", "", 0))
		if c.tlsDomains != targetTLSDomains {
			r.notes = append(r.notes, fmt.Sprintf("* the TLS target names %s domains; this run used %s: run with the defaults for the verdict.",
				thousands(targetTLSDomains), thousands(float64(c.tlsDomains))))
		}
		r.notes = append(r.notes, fmt.Sprintf("TLS rows: req = one new connection from %d workers: TCP connect, full TLS handshake (the client keeps no session cache: no resumption, no session tickets) and close, SNI picked at random among the server's verified domains; p50/p99 are connect + handshake; ECDSA P-256 certificates loaded by certmagic from the data file and signed by one test CA that the client trusts",
			c.connections))
	} else {
		r.lines = append(r.lines, line{label: "new TLS connections", on: "skipped (-tls-domains 0)", verdict: "skipped"})
	}

	rssCheck := func(v int64, op string, target float64) check {
		return check{on: "VmRSS", value: mb(v), ok: v > 0, unit: "MB", op: op, target: target}
	}
	r.value(fmt.Sprintf("idle RSS after start, %s pets", small), rssCheck(b.idleRSS, "<=", targetIdleRSSMB))
	if c.bigPets > 0 {
		r.value(fmt.Sprintf("idle RSS after start, %s pets", big), rssCheck(b.bigIdleRSS, "<=", targetIdleRSSMB))
	}
	r.value(fmt.Sprintf("RSS after all rows, %s pets", small), rssCheck(b.afterLoadRSS, "", 0))
	r.value(fmt.Sprintf("peak RSS, %s pets", small), check{on: "VmHWM", value: mb(b.peakRSS), ok: b.peakRSS > 0, unit: "MB"})
	r.value(fmt.Sprintf("RSS after the load ends, %s pets", small), check{
		on: fmt.Sprintf("VmRSS %.0f s after, x idle", b.settleTime.Seconds()), unit: "x", op: "<=", target: targetSettledVsIdle,
		value: float64(b.settledRSS) / float64(max(b.idleRSS, 1)), ok: b.settledRSS > 0 && b.idleRSS > 0,
	})
	r.value(fmt.Sprintf("  of which the heap and other anonymous memory, %s pets", small), check{on: "RssAnon", value: mb(b.settledAnon), ok: b.settledAnon > 0, unit: "MB"})
	r.value(fmt.Sprintf("  of which the data file's mapped pages, %s pets", small), check{on: "RssFile", value: mb(b.settledFile), ok: b.settledFile > 0, unit: "MB"})
	r.value("idle RSS after start, Echo baseline", rssCheck(b.echoIdleRSS, "", 0))
	r.value(fmt.Sprintf("%s, %s pets", labelReadyTime, small), check{on: "one start", value: ms(b.smallReady), ok: b.smallReady > 0, unit: "ms"})
	if c.bigPets > 0 {
		med := median(b.bigReady)
		r.value(fmt.Sprintf("%s, %s pets", labelReadyTime, big), check{
			on: fmt.Sprintf("median of %d starts", len(b.bigReady)), value: ms(med), ok: med > 0,
			unit: "ms", op: "<=", target: targetReadyMS, caveat: bigCaveat,
		})
	}
	r.value(fmt.Sprintf("seeding %s pets with store.ImportPets", small), check{on: "wall time", value: b.smallImport.Seconds(), ok: b.smallImport > 0, unit: "s"})
	if c.bigPets > 0 {
		r.value(fmt.Sprintf("seeding %s pets with store.ImportPets", big), check{on: "wall time", value: b.importTime.Seconds(), ok: b.importTime > 0, unit: "s"})
	}

	if bigCaveat && c.bigPets > 0 {
		r.notes = append(r.notes, fmt.Sprintf("* the target names %s pets (and %s for the small store); this run used %s and %s: run with the defaults for the verdict.",
			humanCount(targetBigPets), humanCount(targetSmallPets), big, small))
	}
	if len(b.bigReady) > 0 {
		var ds []string
		for _, d := range b.bigReady {
			ds = append(ds, fmt.Sprintf("%.1f ms", ms(d)))
		}
		r.notes = append(r.notes, fmt.Sprintf("time to ready with %s pets, each start (from fork/exec to the first 200 on /readyz): %s; data file %.0f MB",
			big, strings.Join(ds, ", "), mb(b.bigFileSize)))
	}
	if fsync != nil {
		r.notes = append(r.notes, fmt.Sprintf("bbolt baseline: %d puts of 60 bytes on a fresh file, in process, each its own db.Update (commit and fsync); p50/p99 are per put", fsync.requests))
	}
	if len(r.clientCPU) > 0 {
		r.notes = append(r.notes, "the client's CPU per request (this process's CPU time over each row's measured slices / requests): "+strings.Join(r.clientCPU, "; "),
			"CPU ceiling: the req/s ratio the CPU alone would allow, were the cores fully used: (baseline's client + server CPU per request) / (this row's); a row below its ceiling waits for something else, such as the disk")
	}
	if b.vsRev != "" {
		r.notes = append(r.notes, fmt.Sprintf("rows ending with %s: the binary built from -vs (%s), on a small store of its own seeded alike, sent every row this revision's small store was; each of its rows ran right after this revision's row of the same request, in every round (a revision that knows no Idempotency-Key creates as without one)",
			b.vsRev, c.vs))
	}
	r.notes = append(r.notes, b.notes...)
	r.notes = append(r.notes,
		"ratios: GET rows by server CPU per request, POST rows by req/s, TLS rows by new connections (handshakes)/s; PASS/MISS are measurements, not assertions",
		fmt.Sprintf("petstore built in %.1f s; req/s and latencies include the Go client's share of the same CPUs", b.buildTime.Seconds()))
	return r
}

// load adds a load row judged by checks, each on a line of its own.
func (r *report) load(label string, res *loadResult, checks ...check) {
	l := line{label: label, rps: "-", p50: "-", p99: "-", cpu: "-", errors: "-"}
	if res != nil {
		l.rps = thousands(res.rps())
		l.p50, l.p99 = latency(res.p50), latency(res.p99)
		if res.hasCPU {
			l.cpu = fmt.Sprintf("%.1f µs", micros(res.cpuPerReq(serverCPU)))
			if res.cpu[clientCPU] > 0 {
				r.clientCPU = append(r.clientCPU, fmt.Sprintf("%s %.1f µs", label, micros(res.cpuPerReq(clientCPU))))
			}
		}
		l.errors = fmt.Sprint(res.errors)
	}
	r.judge(l, checks)
}

// value adds a row whose measure is a figure, not a load.
func (r *report) value(label string, c check) {
	r.judge(line{label: label}, []check{c})
}

func (r *report) judge(l line, checks []check) {
	for i, c := range checks {
		if i > 0 {
			l = line{}
		}
		l.on = c.on
		l.measured, l.target, l.verdict = c.cells()
		r.lines = append(r.lines, l)
	}
}

func (r *report) print(w io.Writer) {
	fmt.Fprintln(w)
	for _, h := range r.header {
		fmt.Fprintln(w, h)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "row\treq/s\tp50\tp99\tCPU/req\terrors\tjudged on\tmeasured\ttarget\tverdict")
	for _, l := range r.lines {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			l.label, l.rps, l.p50, l.p99, l.cpu, l.errors, l.on, l.measured, l.target, l.verdict)
	}
	tw.Flush()
	fmt.Fprintln(w)
	for _, n := range r.notes {
		fmt.Fprintln(w, n)
	}
	if len(r.errors) > 0 {
		fmt.Fprintf(w, "\nERRORS (%d):\n", len(r.errors))
		for _, e := range r.errors {
			fmt.Fprintln(w, "  - "+e)
		}
	}
}

// tlsRow labels the TLS row of the server with n verified domains.
func tlsRow(n int) string {
	return "new TLS connections, " + domainCount(n)
}

func latency(d time.Duration) string {
	if d < time.Millisecond {
		return fmt.Sprintf("%d µs", d.Microseconds())
	}
	return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
}

var english = message.NewPrinter(language.English)

func thousands(v float64) string { return english.Sprintf("%.0f", v) }

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	return slices.Sorted(slices.Values(ds))[len(ds)/2]
}

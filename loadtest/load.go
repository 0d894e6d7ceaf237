package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// workload is one kind of request, as a row sends it.
type workload struct {
	method string
	// next gives the path (with query) and body of a worker's next request.
	next   func(r *rand.Rand) (path string, body []byte)
	apiKey string // sent as X-API-Key when set
	// keyed sends each request with an Idempotency-Key of its own.
	keyed bool
}

// idempotencyKeys numbers keyed workloads' keys; runID keeps runs on one
// store apart.
var (
	idempotencyKeys atomic.Int64
	runID           = strconv.FormatInt(time.Now().UnixNano(), 36)
)

func get(path string) workload {
	return workload{method: http.MethodGet, next: func(*rand.Rand) (string, []byte) { return path, nil }}
}

// loadResult is what a row measured, summed over its slices.
type loadResult struct {
	requests   int64         // answered in the measured slices, errors included
	errors     int64         // non-2xx answers and failed requests, warm-up included
	errSamples []string      // the first few of them
	elapsed    time.Duration // of the measured slices
	// cpu is the CPU time over the measured slices of the server, of the
	// benchmark's own process and of the PostgreSQL server (rows on it).
	cpu      [3]time.Duration
	hasCPU   bool  // cpu was measured (not for in-process baselines)
	dials    int64 // new connections opened during the measured slices
	lats     []time.Duration
	p50, p99 time.Duration // set by finish
}

// Indexes of loadResult.cpu.
const (
	serverCPU = iota
	clientCPU
	dbCPU
)

// rps and cpuPerReq are 0 for an unmeasured row (nil).
func (r *loadResult) rps() float64 {
	if r == nil || r.elapsed <= 0 {
		return 0
	}
	return float64(r.requests) / r.elapsed.Seconds()
}

func (r *loadResult) cpuPerReq(of int) time.Duration {
	if r == nil || r.requests == 0 {
		return 0
	}
	return r.cpu[of] / time.Duration(r.requests)
}

const maxErrSamples = 5

func (r *loadResult) add(o *loadResult) {
	r.requests += o.requests
	r.errors += o.errors
	r.elapsed += o.elapsed
	for i := range r.cpu {
		r.cpu[i] += o.cpu[i]
	}
	r.hasCPU = r.hasCPU || o.hasCPU
	r.dials += o.dials
	r.lats = append(r.lats, o.lats...)
	for _, s := range o.errSamples {
		if len(r.errSamples) < maxErrSamples {
			r.errSamples = append(r.errSamples, s)
		}
	}
}

// finish computes the percentiles and lets the latencies go.
func (r *loadResult) finish() {
	if len(r.lats) > 0 {
		slices.Sort(r.lats)
		r.p50 = r.lats[len(r.lats)*50/100]
		r.p99 = r.lats[min(len(r.lats)*99/100, len(r.lats)-1)]
	}
	r.lats = nil
}

// client is one server's keep-alive client, keeping an idle connection per
// worker so that no request pays for a new one after the warm-up; it
// counts its dials to show that.
type client struct {
	*http.Client
	dials atomic.Int64
}

func newClient(conns int) *client {
	c := &client{}
	dialer := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	c.Client = &http.Client{
		Timeout: 10 * time.Second,
		Transport: &http.Transport{
			Proxy: nil, // loopback only, whatever HTTP_PROXY says
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				c.dials.Add(1)
				return dialer.DialContext(ctx, network, addr)
			},
			MaxIdleConns:        conns,
			MaxIdleConnsPerHost: conns,
			MaxConnsPerHost:     conns,
			IdleConnTimeout:     5 * time.Minute,
			DisableCompression:  true,
		},
	}
	return c
}

// measured is a job's slice: load sent by send for d, with the CPU time
// server p, this process and p's PostgreSQL server used meanwhile, read
// from /proc; the latter's reading, a walk over /proc, outside the others.
func (b *bench) measured(p *proc, send func(ctx context.Context, d time.Duration) *loadResult) func(ctx context.Context, d time.Duration) (*loadResult, error) {
	return func(ctx context.Context, d time.Duration) (*loadResult, error) {
		db0, err := p.dbCPU()
		if err != nil {
			return nil, err
		}
		cpu0, self0, err := p.cpuTimes()
		if err != nil {
			return nil, err
		}
		res := send(ctx, d)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		cpu1, self1, err := p.cpuTimes()
		if err != nil {
			return nil, err
		}
		db1, err := p.dbCPU()
		if err != nil {
			return nil, err
		}
		res.cpu, res.hasCPU = [3]time.Duration{cpu1 - cpu0, self1 - self0, db1 - db0}, true
		return res, nil
	}
}

func (p *proc) cpuTimes() (server, self time.Duration, err error) {
	if server, err = procCPUTime(p.pid(), p.name); err != nil {
		return 0, 0, err
	}
	if self, err = procCPUTime(os.Getpid(), "loadtest"); err != nil {
		return 0, 0, err
	}
	return server, self, nil
}

// dbCPU is the CPU time of the PostgreSQL server p serves from; rows take
// turns, so its difference over a slice is the row's. 0 on bbolt.
func (p *proc) dbCPU() (time.Duration, error) {
	if p.db == nil {
		return 0, nil
	}
	return p.db.CPU()
}

// phase sends w from b.cfg.connections workers, one request at a time
// each on its own keep-alive connection, until d has passed.
func (b *bench) phase(ctx context.Context, p *proc, w workload, d time.Duration) *loadResult {
	dials0 := p.client.dials.Load()
	res := runWorkers(ctx, b.cfg.connections, d, func(rng *rand.Rand) (time.Duration, bool, string) {
		path, body := w.next(rng)
		status, msg, lat, err := do(ctx, p.client.Client, p.base(), w, path, body)
		switch {
		case err != nil:
			return 0, false, fmt.Sprintf("%s %s: %v", w.method, path, err)
		case status < 200 || status > 299:
			return lat, true, fmt.Sprintf("%s %s: %d %s", w.method, path, status, msg)
		}
		return lat, true, ""
	})
	res.dials = p.client.dials.Load() - dials0
	return res
}

// runWorkers runs attempts from n workers, one at a time each, until d has
// passed, and gathers latencies and failures. An attempt that did not
// reach the server counts no latency, and 100 in a row end the worker.
func runWorkers(ctx context.Context, n int, d time.Duration, attempt func(rng *rand.Rand) (lat time.Duration, reached bool, failure string)) *loadResult {
	res := &loadResult{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(d)
	for i := range n {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(i), uint64(start.UnixNano())))
			mine := &loadResult{lats: make([]time.Duration, 0, 1024)}
			failedInARow := 0
			for time.Now().Before(deadline) && ctx.Err() == nil {
				lat, reached, failure := attempt(rng)
				if ctx.Err() != nil {
					break // interrupted: not the server's fault
				}
				if failure != "" {
					mine.errors++
					if len(mine.errSamples) < maxErrSamples {
						mine.errSamples = append(mine.errSamples, failure)
					}
				}
				if !reached {
					if failedInARow++; failedInARow >= 100 {
						break
					}
					continue
				}
				failedInARow = 0
				mine.lats = append(mine.lats, lat)
			}
			mine.requests = int64(len(mine.lats))
			mu.Lock()
			res.add(mine)
			mu.Unlock()
		})
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	return res
}

// do sends one request and reads the whole answer; msg is the start of a
// non-2xx body.
func do(ctx context.Context, client *http.Client, base string, w workload, path string, body []byte) (status int, msg string, lat time.Duration, err error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, w.method, base+path, rd)
	if err != nil {
		return 0, "", 0, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if w.apiKey != "" {
		req.Header.Set("X-API-Key", w.apiKey)
	}
	if w.keyed {
		req.Header.Set("Idempotency-Key", runID+"-"+strconv.FormatInt(idempotencyKeys.Add(1), 10))
	}
	t0 := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", 0, err
	}
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
		msg = string(b)
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	lat = time.Since(t0)
	if err != nil {
		return 0, "", 0, fmt.Errorf("reading the answer: %w", err)
	}
	return resp.StatusCode, msg, lat, nil
}

package handlers

import (
	"bytes"
	"cmp"
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"

	"petstore/store"
)

// Prometheus metrics at GET /metrics, in the text exposition format 0.0.4,
// written by hand: a handful of series do not need a client library.
//
// Requests are recorded by the access log (observe), once per request, so
// recording must be cheap: a lock-free map lookup and three atomic adds.
// Series are keyed by the route template (c.Path()), never by the URL, so
// their number is bounded by the routes, methods and statuses there are.

const metricsContentType = "text/plain; version=0.0.4"

// durationBuckets are the upper bounds, in seconds, of the request-duration
// histogram: most answers take well under a millisecond to a few; the top
// buckets catch slow clients, DNS checks and backups.
var durationBuckets = [...]float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10}

// unmatchedRoute labels requests that matched no route (404s, and requests
// answered from their Host before routing: 421, redirects).
const unmatchedRoute = "unmatched"

type requestKey struct {
	route, method string
	status        int
}

// requestSeries counts the requests of one route, method and status. The
// buckets are not cumulative (each observation adds to one); an observation
// above the last bound adds to none, and shows in +Inf through count.
type requestSeries struct {
	count    atomic.Uint64
	buckets  [len(durationBuckets)]atomic.Uint64
	sumNanos atomic.Int64
}

// httpMetrics records every request. The zero value is ready to use.
//
// The map of series is copied on write: a request looks its series up with
// one atomic load and no lock (a shared RWMutex would make every request
// write its reader count, one cache line for all cores); only the first
// request of a new series takes mu and copies the map. Series are few and
// bounded, so copies are rare and small.
type httpMetrics struct {
	series atomic.Pointer[map[requestKey]*requestSeries]
	mu     sync.Mutex // serialises copies
}

// observe records one answered request. route is the route template (Echo's
// c.Path()), empty when no route matched.
func (m *httpMetrics) observe(method, route string, status int, d time.Duration) {
	if route == "" {
		route = unmatchedRoute
	}
	k := requestKey{route: route, method: methodLabel(method), status: status}
	s := m.lookup(k)
	if s == nil {
		s = m.add(k)
	}
	// count before the bucket: a scrape reads the buckets before count, so
	// it never sees a bucket above +Inf.
	s.count.Add(1)
	secs := d.Seconds()
	for i, le := range durationBuckets {
		if secs <= le {
			s.buckets[i].Add(1)
			break
		}
	}
	s.sumNanos.Add(int64(d))
}

func (m *httpMetrics) lookup(k requestKey) *requestSeries {
	if p := m.series.Load(); p != nil {
		return (*p)[k]
	}
	return nil
}

// add returns the series of k, creating it in a new copy of the map.
func (m *httpMetrics) add(k requestKey) *requestSeries {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.lookup(k); s != nil {
		return s
	}
	var next map[requestKey]*requestSeries
	if p := m.series.Load(); p != nil {
		next = maps.Clone(*p)
	} else {
		next = make(map[requestKey]*requestSeries)
	}
	s := new(requestSeries)
	next[k] = s
	m.series.Store(&next)
	return s
}

// methodLabel keeps the method label to the standard methods: any other
// string a client sends becomes "other", so clients cannot mint series.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet:
		return http.MethodGet
	case http.MethodHead:
		return http.MethodHead
	case http.MethodPost:
		return http.MethodPost
	case http.MethodPut:
		return http.MethodPut
	case http.MethodPatch:
		return http.MethodPatch
	case http.MethodDelete:
		return http.MethodDelete
	case http.MethodOptions:
		return http.MethodOptions
	case http.MethodConnect:
		return http.MethodConnect
	case http.MethodTrace:
		return http.MethodTrace
	}
	return "other"
}

// requestSnapshot is one series as read for a scrape.
type requestSnapshot struct {
	requestKey
	count    uint64
	buckets  [len(durationBuckets)]uint64
	sumNanos int64
}

// snapshot reads every series, sorted by route, method and status.
func (m *httpMetrics) snapshot() []requestSnapshot {
	var series map[requestKey]*requestSeries
	if p := m.series.Load(); p != nil {
		series = *p // never written once published
	}
	out := make([]requestSnapshot, 0, len(series))
	ptrs := make([]*requestSeries, 0, len(series))
	for k, s := range series {
		out = append(out, requestSnapshot{requestKey: k})
		ptrs = append(ptrs, s)
	}
	for i, s := range ptrs {
		for j := range s.buckets {
			out[i].buckets[j] = s.buckets[j].Load()
		}
		out[i].count = s.count.Load()
		out[i].sumNanos = s.sumNanos.Load()
	}
	slices.SortFunc(out, func(a, b requestSnapshot) int {
		return cmp.Or(cmp.Compare(a.route, b.route), cmp.Compare(a.method, b.method), cmp.Compare(a.status, b.status))
	})
	return out
}

// serveMetrics answers GET /metrics.
func (s *Server) serveMetrics(c echo.Context) error {
	ctx := c.Request().Context()
	size, err := s.store.Size(ctx)
	if err != nil {
		return err
	}
	doms, err := s.domains.List(ctx)
	if err != nil {
		return err
	}
	var w expositionWriter
	w.requests(s.reqMetrics.snapshot())

	w.family("petstore_store_size_bytes", "gauge", "Bytes in use in the bbolt data file: the size of a backup taken now (the file on disk may be larger, preallocated).")
	w.sample("petstore_store_size_bytes", nil, float64(size))

	states := map[string]int{store.DomainPending: 0, store.DomainVerified: 0, store.DomainMoved: 0}
	for _, d := range doms {
		states[d.State]++
	}
	w.family("petstore_domains", "gauge", "Custom domains attached, by state.")
	for _, st := range slices.Sorted(maps.Keys(states)) {
		w.sample("petstore_domains", []string{"state", st}, float64(states[st]))
	}

	w.family("petstore_certificate_expiry_days", "gauge", "Days until the certificate of a custom domain expires (negative once expired), for domains with an issued certificate.")
	now := s.now()
	for _, d := range doms {
		if d.Certificate.State == store.CertIssued && d.Certificate.NotAfter != nil {
			w.sample("petstore_certificate_expiry_days", []string{"domain", d.Name}, d.Certificate.NotAfter.Sub(now).Hours()/24)
		}
	}

	if d, ok := s.cfg.AccessLog.(interface{ Dropped() uint64 }); ok {
		w.family("petstore_log_lines_dropped_total", "counter", "Log lines dropped because the log output did not keep up.")
		w.sample("petstore_log_lines_dropped_total", nil, float64(d.Dropped()))
	}

	if s.cfg.Conns != nil {
		st := s.cfg.Conns.Stats()
		w.family("petstore_connections_open", "gauge", "Client connections open, on every listener.")
		w.sample("petstore_connections_open", nil, float64(st.Open))
		w.family("petstore_connections_closed_total", "counter", "Connections the service closed to keep descriptors free: client_cap (the client was at --max-client-conns), idle (idle, closed because descriptors ran short), refused (new, with descriptors short and nothing idle).")
		w.sample("petstore_connections_closed_total", []string{"reason", "client_cap"}, float64(st.ClientCapped))
		w.sample("petstore_connections_closed_total", []string{"reason", "idle"}, float64(st.Shed))
		w.sample("petstore_connections_closed_total", []string{"reason", "refused"}, float64(st.Refused))
	}

	w.family("petstore_up", "gauge", "1 while the service is up and its store answers.")
	w.sample("petstore_up", nil, 1)

	c.Response().Header().Set("Cache-Control", "no-store")
	return c.Blob(http.StatusOK, metricsContentType, w.Bytes())
}

// expositionWriter writes the Prometheus text format, version 0.0.4.
type expositionWriter struct {
	bytes.Buffer
}

// family writes the HELP and TYPE lines of a metric.
func (w *expositionWriter) family(name, typ, help string) {
	w.WriteString("# HELP ")
	w.WriteString(name)
	w.WriteByte(' ')
	w.WriteString(helpEscaper.Replace(help))
	w.WriteString("\n# TYPE ")
	w.WriteString(name)
	w.WriteByte(' ')
	w.WriteString(typ)
	w.WriteByte('\n')
}

// sample writes one line; labels are name, value pairs.
func (w *expositionWriter) sample(name string, labels []string, v float64) {
	w.WriteString(name)
	if len(labels) > 0 {
		w.WriteByte('{')
		for i := 0; i+1 < len(labels); i += 2 {
			if i > 0 {
				w.WriteByte(',')
			}
			w.WriteString(labels[i])
			w.WriteString(`="`)
			w.WriteString(labelEscaper.Replace(labels[i+1]))
			w.WriteByte('"')
		}
		w.WriteByte('}')
	}
	w.WriteByte(' ')
	w.WriteString(formatFloat(v))
	w.WriteByte('\n')
}

// requests writes the request counter and the duration histogram; the
// histogram of a route and method adds up its series of every status.
func (w *expositionWriter) requests(series []requestSnapshot) {
	const total = "petstore_http_requests_total"
	w.family(total, "counter", "HTTP requests answered, by route template, method and status.")
	for _, s := range series {
		w.sample(total, []string{"route", s.route, "method", s.method, "status", strconv.Itoa(s.status)}, float64(s.count))
	}

	const hist = "petstore_http_request_duration_seconds"
	w.family(hist, "histogram", "Time from the request's arrival to the end of its answer, by route template and method.")
	for i := 0; i < len(series); {
		first := series[i]
		var (
			buckets [len(durationBuckets)]uint64
			count   uint64
			nanos   int64
		)
		for ; i < len(series) && series[i].route == first.route && series[i].method == first.method; i++ {
			for j, n := range series[i].buckets {
				buckets[j] += n
			}
			count += series[i].count
			nanos += series[i].sumNanos
		}
		var cumulative uint64
		for j, le := range durationBuckets {
			cumulative += buckets[j]
			w.sample(hist+"_bucket", []string{"route", first.route, "method", first.method, "le", formatFloat(le)}, float64(cumulative))
		}
		w.sample(hist+"_bucket", []string{"route", first.route, "method", first.method, "le", "+Inf"}, float64(count))
		w.sample(hist+"_sum", []string{"route", first.route, "method", first.method}, time.Duration(nanos).Seconds())
		w.sample(hist+"_count", []string{"route", first.route, "method", first.method}, float64(count))
	}
}

var (
	labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
)

// formatFloat writes whole numbers (counts, sizes) in full rather than in
// exponent form, for people reading a scrape.
func formatFloat(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

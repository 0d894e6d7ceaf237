// Package metrics keeps the service's Prometheus registry: the request
// series, the gauges its parts report at scrape time, and GET /metrics'
// text exposition.
package metrics

import (
	"io"
	"maps"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// Series are keyed by route template, never URL, and non-standard methods
// become "other", so that clients cannot mint series.

// UnmatchedRoute labels requests that matched no route (404s, and ones
// answered from their Host: 421, redirects).
const UnmatchedRoute = "unmatched"

// format is the text exposition format, which every Prometheus scrapes.
var format = expfmt.NewFormat(expfmt.TypeTextPlain)

// ContentType is the Content-Type of an exposition.
var ContentType = string(format)

// Registry owns one server's series; servers in one process (tests) do
// not share them.
type Registry struct {
	registry *prometheus.Registry
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	// series maps route, method and status to their series in one lookup
	// (WithLabelValues rehashes each call). The map is never changed once
	// stored: a new series (rare) stores a copy under addMu, so reads take no
	// lock and hash the key directly (sync.Map hashes through an interface).
	series atomic.Pointer[map[seriesKey]*requestSeries]
	addMu  sync.Mutex
}

type seriesKey struct {
	route, method string
	status        int
}

type requestSeries struct {
	requests prometheus.Counter
	duration prometheus.Observer
}

// New returns a registry with the request series, the Go runtime and
// process collectors, and more (such as Connections and LogDrops).
func New(more ...prometheus.Collector) *Registry {
	m := &Registry{
		registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "petstore_http_requests_total",
			Help: "HTTP requests answered, by route template, method and status.",
		}, []string{"route", "method", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "petstore_http_request_duration_seconds",
			Help: "Time from the request's arrival to the end of its answer, by route template and method.",
			// The top buckets catch slow clients, DNS checks and backups.
			Buckets: []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10},
		}, []string{"route", "method"}),
	}
	m.registry.MustRegister(
		m.requests, m.duration,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	m.registry.MustRegister(more...)
	return m
}

// Register adds a collector; it fails when one already gives its series.
func (m *Registry) Register(c prometheus.Collector) error { return m.registry.Register(c) }

// Observe records one answered request; route is the route template,
// empty when no route matched.
func (m *Registry) Observe(method, route string, status int, d time.Duration) {
	if route == "" {
		route = UnmatchedRoute
	}
	key := seriesKey{route: route, method: methodLabel(method), status: status}
	var rs *requestSeries
	if all := m.series.Load(); all != nil {
		rs = (*all)[key]
	}
	if rs == nil {
		rs = m.addSeries(key)
	}
	rs.requests.Inc()
	rs.duration.Observe(d.Seconds())
}

// addSeries stores key's series in a copy of the map, unless another
// request has.
func (m *Registry) addSeries(key seriesKey) *requestSeries {
	m.addMu.Lock()
	defer m.addMu.Unlock()
	var old map[seriesKey]*requestSeries
	if all := m.series.Load(); all != nil {
		old = *all
	}
	if rs := old[key]; rs != nil {
		return rs
	}
	rs := &requestSeries{
		requests: m.requests.WithLabelValues(key.route, key.method, strconv.Itoa(key.status)),
		duration: m.duration.WithLabelValues(key.route, key.method),
	}
	all := make(map[seriesKey]*requestSeries, len(old)+1)
	maps.Copy(all, old)
	all[key] = rs
	m.series.Store(&all)
	return rs
}

// methodLabel maps non-standard methods to "other".
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "other"
}

// Exposition is every series at one moment, gathered before anything is
// written, so that a failing collector gets an error, not half an
// exposition.
type Exposition struct{ families []*dto.MetricFamily }

func (m *Registry) Gather() (*Exposition, error) {
	families, err := m.registry.Gather()
	if err != nil {
		return nil, err
	}
	return &Exposition{families}, nil
}

// Write writes the exposition in the text format (ContentType); it stops
// at the first write that fails.
func (e *Exposition) Write(w io.Writer) error {
	enc := expfmt.NewEncoder(w, format)
	for _, f := range e.families {
		if err := enc.Encode(f); err != nil {
			return err
		}
	}
	return nil
}

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

// collector gives descs, and the metrics collect sends at scrape time.
type collector struct {
	descs   []*prometheus.Desc
	collect func(send)
}

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) { c.collect(ch) }

type send chan<- prometheus.Metric

func (s send) gauge(d *prometheus.Desc, v float64, labels ...string) {
	s <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
}

func (s send) counter(d *prometheus.Desc, v float64, labels ...string) {
	s <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
}

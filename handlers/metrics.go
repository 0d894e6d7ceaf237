package handlers

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/common/expfmt"

	"petstore/store"
)

// Prometheus metrics at GET /metrics, through client_golang: the request
// series, the store and domain gauges read at scrape time, and the Go
// runtime and process collectors operators look for.
//
// Series are keyed by the route template (c.Path()), never by the URL, and
// methods outside the standard ones become "other", so their number is
// bounded by the routes, methods and statuses there are.

// unmatchedRoute labels requests that matched no route (404s, and requests
// answered from their Host before routing: 421, redirects).
const unmatchedRoute = "unmatched"

// metricsFormat is the text exposition format, which every Prometheus
// version scrapes.
var metricsFormat = expfmt.NewFormat(expfmt.TypeTextPlain)

// httpMetrics owns the server's registry. Each Server has its own, so that
// servers in one process (tests) do not share series.
type httpMetrics struct {
	registry *prometheus.Registry
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	// series holds the series of requests and duration for each route,
	// method and status answered so far, so that a request finds its
	// series in one lookup: the vectors' WithLabelValues hashes the labels
	// again on every call, and formatting the status allocates.
	series sync.Map // seriesKey -> *requestSeries
}

type seriesKey struct {
	route, method string
	status        int
}

type requestSeries struct {
	requests prometheus.Counter
	duration prometheus.Observer
}

func newHTTPMetrics(s *Server) *httpMetrics {
	m := &httpMetrics{
		registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "petstore_http_requests_total",
			Help: "HTTP requests answered, by route template, method and status.",
		}, []string{"route", "method", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "petstore_http_request_duration_seconds",
			Help: "Time from the request's arrival to the end of its answer, by route template and method.",
			// Most answers take well under a millisecond to a few; the
			// top buckets catch slow clients, DNS checks and backups.
			Buckets: []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10},
		}, []string{"route", "method"}),
	}
	m.registry.MustRegister(
		m.requests, m.duration,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		stateCollector{s},
	)
	return m
}

// observe records one answered request. route is the route template (Echo's
// c.Path()), empty when no route matched.
func (m *httpMetrics) observe(method, route string, status int, d time.Duration) {
	if route == "" {
		route = unmatchedRoute
	}
	key := seriesKey{route: route, method: methodLabel(method), status: status}
	s, ok := m.series.Load(key)
	if !ok {
		s, _ = m.series.LoadOrStore(key, &requestSeries{
			requests: m.requests.WithLabelValues(key.route, key.method, strconv.Itoa(status)),
			duration: m.duration.WithLabelValues(key.route, key.method),
		})
	}
	rs := s.(*requestSeries)
	rs.requests.Inc()
	rs.duration.Observe(d.Seconds())
}

// methodLabel keeps the method label to the standard methods: any other
// string a client sends becomes "other", so clients cannot mint series.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "other"
}

var (
	storeSizeDesc = prometheus.NewDesc("petstore_store_size_bytes",
		"Bytes of data in the store: in the bbolt data file, the size of a backup taken now (the file on disk may be larger, preallocated); with PostgreSQL, the database's size on disk.", nil, nil)
	domainsDesc = prometheus.NewDesc("petstore_domains",
		"Custom domains attached, by state.", []string{"state"}, nil)
	expiryDesc = prometheus.NewDesc("petstore_certificate_expiry_days",
		"Days until the certificate of a custom domain expires (negative once expired), for domains with an issued certificate.", []string{"domain"}, nil)
	logDroppedDesc = prometheus.NewDesc("petstore_log_lines_dropped_total",
		"Log lines dropped because the log output did not keep up.", nil, nil)
	connsOpenDesc = prometheus.NewDesc("petstore_connections_open",
		"Client connections open, on every listener.", nil, nil)
	connsClosedDesc = prometheus.NewDesc("petstore_connections_closed_total",
		"Connections the service closed to keep descriptors free: client_cap (the client was at --max-client-conns), idle (idle, closed because descriptors ran short), refused (new, with descriptors short and nothing idle).", []string{"reason"}, nil)
	dbConnsDesc = prometheus.NewDesc("petstore_db_connections",
		"Connections of the database pool (PostgreSQL), by state: in_use, idle, max (the pool's size).", []string{"state"}, nil)
	dbWaitingDesc = prometheus.NewDesc("petstore_db_acquire_waiting",
		"Requests waiting for a connection of the database pool now.", nil, nil)
	dbAcquiresDesc = prometheus.NewDesc("petstore_db_acquires_total",
		"Connections of the database pool handed out.", nil, nil)
	dbWaitDesc = prometheus.NewDesc("petstore_db_acquire_wait_seconds_total",
		"Time spent waiting for connections of the database pool.", nil, nil)
	dbTimeoutsDesc = prometheus.NewDesc("petstore_db_acquire_timeouts_total",
		"Waits for a connection of the database pool that ran past --database-acquire-timeout.", nil, nil)
	dbUnavailableDesc = prometheus.NewDesc("petstore_db_unavailable_total",
		"Requests answered 503 database_unavailable: timeouts, lost connections, an unreachable database.", nil, nil)
	dbErrorsDesc = prometheus.NewDesc("petstore_db_errors_total",
		"Errors from the database, by SQLSTATE class (08: connection, 23: constraint, 40: rollback, 53: resources, 57: operator intervention).", []string{"class"}, nil)
	upDesc = prometheus.NewDesc("petstore_up",
		"1 while the service is up and its store answers.", nil, nil)
)

// stateCollector reads the store and the domains at scrape time.
type stateCollector struct{ s *Server }

func (stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- storeSizeDesc
	ch <- domainsDesc
	ch <- expiryDesc
	ch <- logDroppedDesc
	ch <- connsOpenDesc
	ch <- connsClosedDesc
	ch <- upDesc
	ch <- dbConnsDesc
	ch <- dbWaitingDesc
	ch <- dbAcquiresDesc
	ch <- dbWaitDesc
	ch <- dbTimeoutsDesc
	ch <- dbUnavailableDesc
	ch <- dbErrorsDesc
}

// poolStats is a store with a pool of database connections (PostgreSQL).
type poolStats interface{ PoolStats() store.PoolStats }

// collectPool reports the database pool first: a database that is down
// fails the store's other metrics, and these say why.
func collectPool(st store.PoolStats, ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	gauge(dbConnsDesc, float64(st.InUse), "in_use")
	gauge(dbConnsDesc, float64(st.Idle), "idle")
	gauge(dbConnsDesc, float64(st.Max), "max")
	gauge(dbWaitingDesc, float64(st.Waiting))
	counter(dbAcquiresDesc, float64(st.Acquires))
	counter(dbWaitDesc, st.AcquireWait.Seconds())
	counter(dbTimeoutsDesc, float64(st.AcquireTimeouts))
	counter(dbUnavailableDesc, float64(st.Unavailable))
	for class, n := range st.ErrorsByClass {
		counter(dbErrorsDesc, float64(n), class)
	}
}

func (c stateCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if p, ok := c.s.store.(poolStats); ok {
		collectPool(p.PoolStats(), ch)
	}
	size, err := c.s.store.Size(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(storeSizeDesc, err)
		return
	}
	doms, err := c.s.domains.List(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(domainsDesc, err)
		return
	}
	ch <- prometheus.MustNewConstMetric(storeSizeDesc, prometheus.GaugeValue, float64(size))
	states := map[string]int{store.DomainPending: 0, store.DomainVerified: 0, store.DomainMoved: 0}
	for _, d := range doms {
		states[d.State]++
	}
	for st, n := range states {
		ch <- prometheus.MustNewConstMetric(domainsDesc, prometheus.GaugeValue, float64(n), st)
	}
	now := c.s.now()
	for _, d := range doms {
		if st := d.Certificate.State; (st == store.CertIssued || st == store.CertRenewing || st == store.CertExpired) && d.Certificate.NotAfter != nil {
			ch <- prometheus.MustNewConstMetric(expiryDesc, prometheus.GaugeValue, d.Certificate.NotAfter.Sub(now).Hours()/24, d.Name)
		}
	}
	if d, ok := c.s.cfg.AccessLog.(interface{ Dropped() uint64 }); ok {
		ch <- prometheus.MustNewConstMetric(logDroppedDesc, prometheus.CounterValue, float64(d.Dropped()))
	}
	if g := c.s.cfg.Conns; g != nil {
		ch <- prometheus.MustNewConstMetric(connsOpenDesc, prometheus.GaugeValue, float64(g.open()))
		ch <- prometheus.MustNewConstMetric(connsClosedDesc, prometheus.CounterValue, float64(g.clientCapped.Load()), "client_cap")
		ch <- prometheus.MustNewConstMetric(connsClosedDesc, prometheus.CounterValue, float64(g.shed.Load()), "idle")
		ch <- prometheus.MustNewConstMetric(connsClosedDesc, prometheus.CounterValue, float64(g.refused.Load()), "refused")
	}
	ch <- prometheus.MustNewConstMetric(upDesc, prometheus.GaugeValue, 1)
}

// serveMetrics answers GET /metrics. It gathers before it writes, so that a
// store that fails is answered with an Error body, not half an exposition.
func (s *Server) serveMetrics(c echo.Context) error {
	families, err := s.metrics.registry.Gather()
	if err != nil {
		return err
	}
	res := c.Response()
	res.Header().Set(echo.HeaderContentType, string(metricsFormat))
	res.Header().Set("Cache-Control", "no-store")
	res.WriteHeader(http.StatusOK)
	enc := expfmt.NewEncoder(res, metricsFormat)
	for _, f := range families {
		if err := enc.Encode(f); err != nil {
			return nil // the status is out; the client sees a cut answer
		}
	}
	return nil
}

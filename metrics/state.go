package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"petstore/store"
)

var (
	storeSizeDesc = prometheus.NewDesc("petstore_store_size_bytes",
		"Bytes of data in the store: in the bbolt data file, the size of a backup taken now (the file on disk may be larger, preallocated); with PostgreSQL, the database's size on disk.", nil, nil)
	domainsDesc = prometheus.NewDesc("petstore_domains",
		"Custom domains attached, by state.", []string{"state"}, nil)
	expiryDesc = prometheus.NewDesc("petstore_certificate_expiry_days",
		"Days until the certificate of a custom domain expires (negative once expired), for domains with an issued certificate.", []string{"domain"}, nil)
	connsOpenDesc = prometheus.NewDesc("petstore_connections_open",
		"Client connections open, on every listener.", nil, nil)
	connsClosedDesc = prometheus.NewDesc("petstore_connections_closed_total",
		"Connections the service closed to keep descriptors free: client_cap (the client was at --max-client-conns), idle (idle, closed because descriptors ran short), refused (new, with descriptors short and nothing idle).", []string{"reason"}, nil)
	upDesc = prometheus.NewDesc("petstore_up",
		"1 while the service is up and its store answers; 0 when the store did not answer this scrape in time (its series are then absent).", nil, nil)
)

// Sizer is the store as the state gauges read it.
type Sizer interface {
	Size(ctx context.Context) (int64, error)
}

// DomainLister is the custom domains as the state gauges read them.
type DomainLister interface {
	List(ctx context.Context) ([]store.Domain, error)
}

// State reports the store's size, the custom domains by state and their
// certificates' expiry, and petstore_up, read at scrape time; now is the
// clock for the expiry.
func State(db Sizer, domains DomainLister, now func() time.Time) prometheus.Collector {
	return &stateCollector{db: db, domains: domains, now: now}
}

type stateCollector struct {
	db      Sizer
	domains DomainLister
	now     func() time.Time
	bounded
}

func (*stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- storeSizeDesc
	ch <- domainsDesc
	ch <- expiryDesc
	ch <- upDesc
}

// Collect reads the store within ReadTimeout. A store that does not
// answer in time, or fails, gives petstore_up 0 without the store's
// series, and the scrape answers with the rest.
func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	var (
		size int64
		doms []store.Domain
	)
	err := c.read(func(ctx context.Context) error {
		var err error
		if size, err = c.db.Size(ctx); err != nil {
			return err
		}
		doms, err = c.domains.List(ctx)
		return err
	})
	if err != nil {
		ch <- prometheus.MustNewConstMetric(upDesc, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(storeSizeDesc, prometheus.GaugeValue, float64(size))
	states := map[string]int{store.DomainPending: 0, store.DomainOwned: 0, store.DomainVerified: 0, store.DomainMoved: 0}
	for _, d := range doms {
		states[d.State]++
	}
	for st, n := range states {
		ch <- prometheus.MustNewConstMetric(domainsDesc, prometheus.GaugeValue, float64(n), st)
	}
	now := c.now()
	for _, d := range doms {
		if st := d.Certificate.State; (st == store.CertIssued || st == store.CertRenewing || st == store.CertExpired) && d.Certificate.NotAfter != nil {
			ch <- prometheus.MustNewConstMetric(expiryDesc, prometheus.GaugeValue, d.Certificate.NotAfter.Sub(now).Hours()/24, d.Name)
		}
	}
	ch <- prometheus.MustNewConstMetric(upDesc, prometheus.GaugeValue, 1)
}

// DropCounter is a log output that counts the lines it dropped.
type DropCounter interface{ Dropped() uint64 }

// LogDrops reports the lines a log output dropped.
func LogDrops(d DropCounter) prometheus.Collector {
	return counterFunc("petstore_log_lines_dropped_total",
		"Log lines dropped because the log output did not keep up.", d.Dropped)
}

// ConnCounter is the listeners' connection guard as /metrics reads it.
type ConnCounter interface {
	// Open is the number of connections open.
	Open() int
	// Closed is how many connections the guard closed since the start:
	// at accept because their client was at its cap, idle ones because
	// descriptors ran short, and new ones at accept for that reason with
	// nothing idle to close.
	Closed() (clientCap, idle, refused uint64)
}

// Connections reports the connections open and those the guard closed.
func Connections(g ConnCounter) prometheus.Collector { return conns{g} }

type conns struct{ g ConnCounter }

func (conns) Describe(ch chan<- *prometheus.Desc) {
	ch <- connsOpenDesc
	ch <- connsClosedDesc
}

func (c conns) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(connsOpenDesc, prometheus.GaugeValue, float64(c.g.Open()))
	capped, idle, refused := c.g.Closed()
	ch <- prometheus.MustNewConstMetric(connsClosedDesc, prometheus.CounterValue, float64(capped), "client_cap")
	ch <- prometheus.MustNewConstMetric(connsClosedDesc, prometheus.CounterValue, float64(idle), "idle")
	ch <- prometheus.MustNewConstMetric(connsClosedDesc, prometheus.CounterValue, float64(refused), "refused")
}

// StreamCounter is the open event streams as /metrics reads them.
type StreamCounter interface{ Open() int64 }

// EventStreams reports the event streams open.
func EventStreams(s StreamCounter) prometheus.Collector {
	return gaugeFunc("petstore_event_streams_open",
		"Event streams open (GET /events and GET /admin/events as Server-Sent Events), which --max-event-streams caps.",
		func() float64 { return float64(s.Open()) })
}

// DamageReporter is a store that can find its data damaged.
type DamageReporter interface{ Damaged() error }

// Damage reports whether the store found its data damaged.
func Damage(d DamageReporter) prometheus.Collector {
	return gaugeFunc("petstore_store_damaged",
		"1 once the store found its data file damaged (a transaction met a damaged page), until a restart: restore the file from a backup.",
		func() float64 {
			if d.Damaged() != nil {
				return 1
			}
			return 0
		})
}

// HandshakeCounter counts refused TLS handshakes.
type HandshakeCounter interface{ HandshakesRefused() uint64 }

// Handshakes reports the TLS handshakes refused.
func Handshakes(h HandshakeCounter) prometheus.Collector {
	return counterFunc("petstore_tls_handshakes_refused_total",
		"TLS handshakes that failed (unknown server names, probes, clients that gave up); the log summarizes them once a minute.",
		h.HandshakesRefused)
}

// counterFunc is a counter whose value n gives at scrape time.
func counterFunc(name, help string, n func() uint64) prometheus.Collector {
	return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 { return float64(n()) })
}

// gaugeFunc is a gauge whose value v gives at scrape time.
func gaugeFunc(name, help string, v func() float64) prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, v)
}

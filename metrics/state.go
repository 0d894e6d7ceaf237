package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"petstore/store"
)

var (
	storeSizeDesc   = desc("petstore_store_size_bytes", "Bytes of data in the store: in the bbolt data file, the size of a backup taken now (the file on disk may be larger, preallocated); with PostgreSQL, the database's size on disk.")
	domainsDesc     = desc("petstore_domains", "Custom domains attached, by state.", "state")
	expiryDesc      = desc("petstore_certificate_expiry_days", "Days until the certificate of a custom domain expires (negative once expired), for domains with an issued certificate.", "domain")
	connsOpenDesc   = desc("petstore_connections_open", "Client connections open, on every listener.")
	connsClosedDesc = desc("petstore_connections_closed_total", "Connections the service closed to keep descriptors free: client_cap (the client was at --max-client-conns), idle (idle, closed because descriptors ran short), refused (new, with descriptors short and nothing idle).", "reason")
	upDesc          = desc("petstore_up", "1 while the service is up and its store answers; 0 when the store did not answer this scrape in time (its series are then absent).")
)

// Sizer is the store as the state gauges read it.
type Sizer interface {
	Size(ctx context.Context) (int64, error)
}

// DomainLister is the custom domains as the state gauges read them.
type DomainLister interface {
	List(ctx context.Context) ([]store.Domain, error)
}

// State reports the store's size, the custom domains by state, their
// certificates' expiry, and petstore_up, read at scrape time within
// ReadTimeout. A store that fails or is late gives petstore_up 0 without
// its series, and the scrape answers with the rest.
func State(db Sizer, domains DomainLister, now func() time.Time) prometheus.Collector {
	var b bounded
	return collector{[]*prometheus.Desc{storeSizeDesc, domainsDesc, expiryDesc, upDesc}, func(s send) {
		var (
			size int64
			doms []store.Domain
		)
		err := b.read(func(ctx context.Context) (err error) {
			if size, err = db.Size(ctx); err != nil {
				return err
			}
			doms, err = domains.List(ctx)
			return err
		})
		if err != nil {
			s.gauge(upDesc, 0)
			return
		}
		s.gauge(storeSizeDesc, float64(size))
		states := map[string]int{store.DomainPending: 0, store.DomainOwned: 0, store.DomainVerified: 0, store.DomainMoved: 0}
		for _, d := range doms {
			states[d.State]++
		}
		for st, n := range states {
			s.gauge(domainsDesc, float64(n), st)
		}
		now := now()
		for _, d := range doms {
			if st := d.Certificate.State; (st == store.CertIssued || st == store.CertRenewing || st == store.CertExpired) && d.Certificate.NotAfter != nil {
				s.gauge(expiryDesc, d.Certificate.NotAfter.Sub(now).Hours()/24, d.Name)
			}
		}
		s.gauge(upDesc, 1)
	}}
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
	// Closed is how many connections the guard closed; see
	// server.ConnGuard.Closed.
	Closed() (clientCap, idle, refused uint64)
}

// Connections reports the connections open and those the guard closed.
func Connections(g ConnCounter) prometheus.Collector {
	return collector{[]*prometheus.Desc{connsOpenDesc, connsClosedDesc}, func(s send) {
		s.gauge(connsOpenDesc, float64(g.Open()))
		capped, idle, refused := g.Closed()
		s.counter(connsClosedDesc, float64(capped), "client_cap")
		s.counter(connsClosedDesc, float64(idle), "idle")
		s.counter(connsClosedDesc, float64(refused), "refused")
	}}
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

func counterFunc(name, help string, n func() uint64) prometheus.Collector {
	return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 { return float64(n()) })
}

func gaugeFunc(name, help string, v func() float64) prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, v)
}

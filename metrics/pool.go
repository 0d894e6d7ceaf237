package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"petstore/store"
)

var (
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
)

// PoolStatser is a store with a pool of database connections (PostgreSQL).
type PoolStatser interface {
	PoolStats() store.PoolStats
}

// Pool reports a store's database pool. It reads no database, so it
// answers while the database is down, and says why through its counters.
func Pool(p PoolStatser) prometheus.Collector { return pool{p} }

type pool struct{ p PoolStatser }

func (pool) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{dbConnsDesc, dbWaitingDesc, dbAcquiresDesc, dbWaitDesc, dbTimeoutsDesc, dbUnavailableDesc, dbErrorsDesc} {
		ch <- d
	}
}

func (c pool) Collect(ch chan<- prometheus.Metric) {
	st := c.p.PoolStats()
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

package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"petstore/store"
)

var (
	dbConnsDesc       = desc("petstore_db_connections", "Connections of the database pool (PostgreSQL), by state: in_use, idle, max (the pool's size).", "state")
	dbWaitingDesc     = desc("petstore_db_acquire_waiting", "Requests waiting for a connection of the database pool now.")
	dbAcquiresDesc    = desc("petstore_db_acquires_total", "Connections of the database pool handed out.")
	dbWaitDesc        = desc("petstore_db_acquire_wait_seconds_total", "Time spent waiting for connections of the database pool.")
	dbTimeoutsDesc    = desc("petstore_db_acquire_timeouts_total", "Waits for a connection of the database pool that ran past --database-acquire-timeout.")
	dbUnavailableDesc = desc("petstore_db_unavailable_total", "Requests answered 503 database_unavailable: timeouts, lost connections, an unreachable database.")
	dbErrorsDesc      = desc("petstore_db_errors_total", "Errors from the database, by SQLSTATE class (08: connection, 23: constraint, 40: rollback, 53: resources, 57: operator intervention).", "class")
)

// PoolStatser is a store with a pool of database connections (PostgreSQL).
type PoolStatser interface {
	PoolStats() store.PoolStats
}

// Pool reports a store's database pool. It reads no database, so it
// answers while the database is down, and says why through its counters.
func Pool(p PoolStatser) prometheus.Collector {
	return collector{
		[]*prometheus.Desc{dbConnsDesc, dbWaitingDesc, dbAcquiresDesc, dbWaitDesc, dbTimeoutsDesc, dbUnavailableDesc, dbErrorsDesc},
		func(s send) {
			st := p.PoolStats()
			s.gauge(dbConnsDesc, float64(st.InUse), "in_use")
			s.gauge(dbConnsDesc, float64(st.Idle), "idle")
			s.gauge(dbConnsDesc, float64(st.Max), "max")
			s.gauge(dbWaitingDesc, float64(st.Waiting))
			s.counter(dbAcquiresDesc, float64(st.Acquires))
			s.counter(dbWaitDesc, st.AcquireWait.Seconds())
			s.counter(dbTimeoutsDesc, float64(st.AcquireTimeouts))
			s.counter(dbUnavailableDesc, float64(st.Unavailable))
			for class, n := range st.ErrorsByClass {
				s.counter(dbErrorsDesc, float64(n), class)
			}
		},
	}
}

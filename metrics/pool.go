package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"petstore/store"
)

// pool are the series of a database pool.
var pool = struct{ conns, waiting, acquires, wait, timeouts, unavailable, errors *prometheus.Desc }{
	desc("petstore_db_connections", "Connections of the database pool (PostgreSQL), by state: in_use, idle, max (the pool's size).", "state"),
	desc("petstore_db_acquire_waiting", "Requests waiting for a connection of the database pool now."),
	desc("petstore_db_acquires_total", "Connections of the database pool handed out."),
	desc("petstore_db_acquire_wait_seconds_total", "Time spent waiting for connections of the database pool."),
	desc("petstore_db_acquire_timeouts_total", "Waits for a connection of the database pool that ran past --database-acquire-timeout."),
	desc("petstore_db_unavailable_total", "Requests answered 503 database_unavailable: timeouts, lost connections, an unreachable database."),
	desc("petstore_db_errors_total", "Errors from the database, by SQLSTATE class (08: connection, 23: constraint, 40: rollback, 53: resources, 57: operator intervention).", "class"),
}

// PoolStatser is a store with a pool of database connections (PostgreSQL).
type PoolStatser interface {
	PoolStats() store.PoolStats
}

// Pool reports a store's database pool. It reads no database, so it
// answers while the database is down, and says why through its counters.
func Pool(p PoolStatser) prometheus.Collector {
	return collector{
		[]*prometheus.Desc{pool.conns, pool.waiting, pool.acquires, pool.wait, pool.timeouts, pool.unavailable, pool.errors},
		func(s send) {
			st := p.PoolStats()
			s.gauge(pool.conns, float64(st.InUse), "in_use")
			s.gauge(pool.conns, float64(st.Idle), "idle")
			s.gauge(pool.conns, float64(st.Max), "max")
			s.gauge(pool.waiting, float64(st.Waiting))
			s.counter(pool.acquires, float64(st.Acquires))
			s.counter(pool.wait, st.AcquireWait.Seconds())
			s.counter(pool.timeouts, float64(st.AcquireTimeouts))
			s.counter(pool.unavailable, float64(st.Unavailable))
			for class, n := range st.ErrorsByClass {
				s.counter(pool.errors, float64(n), class)
			}
		},
	}
}

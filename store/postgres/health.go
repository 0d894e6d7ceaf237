package postgres

import (
	"context"
	"sync"
	"time"

	"petstore/store"
)

// Readiness: what one request meets (a locked table, its share of the
// pool full) is that request's 503, not the instance's: another instance
// would meet the same lock. So Ping asks the database itself, on a
// connection of its own (probePool) that requests holding the pool cannot
// make wait: can it be reached, does it take writes, and are commits
// waiting on a synchronous standby that is gone.
const (
	probeTimeout = time.Second
	// probeEvery shares one probe among the checks that come within it.
	probeEvery = 500 * time.Millisecond
)

type probe struct {
	mu       sync.Mutex
	at       time.Time
	err      error
	notReady string // logged when it changes
}

// Ping reports whether the store is ready to serve: nil, or a
// database_unavailable error whose message says why not.
func (db *DB) Ping(ctx context.Context) error {
	db.probe.mu.Lock()
	defer db.probe.mu.Unlock()
	err := db.pool.health.initError()
	if err == nil && time.Since(db.probe.at) >= probeEvery {
		db.probe.err = db.runProbe(ctx)
		db.probe.at = time.Now()
	}
	if err == nil {
		err = db.probe.err
	}
	why := ""
	if err != nil {
		why = store.ErrorMessage(err)
	}
	switch {
	case why != "" && why != db.probe.notReady:
		db.log.Warn("the store is not ready: "+why, "database", db.pool.name)
	case why == "" && db.probe.notReady != "":
		db.log.Info("the store is ready again", "database", db.pool.name)
	}
	db.probe.notReady = why
	return err
}

func (db *DB) runProbe(ctx context.Context) error {
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), probeTimeout)
	defer cancel()
	var standby, noStandby bool
	var waiting int
	// noStandby: commits wait for a synchronous standby and none is
	// connected (pg_stat_replication's rows are visible to every role).
	err := db.probePool.QueryRow(pctx, `SELECT pg_is_in_recovery(),
		(SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'SyncRep' AND state_change < now() - interval '1 second'),
		current_setting('synchronous_standby_names') <> ''
			AND current_setting('synchronous_commit') IN ('on', 'remote_write', 'remote_apply')
			AND NOT EXISTS (SELECT 1 FROM pg_stat_replication)`).Scan(&standby, &waiting, &noStandby)
	switch {
	case err != nil && pctx.Err() != nil:
		return store.Errorf(store.EUNAVAILABLE, "the database did not answer the readiness probe within %v", probeTimeout)
	case err != nil:
		if _, code, counted := classify(err); counted {
			db.pool.health.metrics.sqlstate(code)
		}
		return store.ErrorWithCause(err, store.EUNAVAILABLE, "the readiness probe failed: %s", reason(err, db.pool.t))
	case standby:
		return store.Errorf(store.EUNAVAILABLE, "the database is a read-only standby; the URL should name the primary (target_session_attrs=read-write)")
	case waiting > 0 || noStandby:
		return store.Errorf(store.EUNAVAILABLE, "commits wait for a synchronous standby that does not confirm them (%d sessions waiting, no standby connected: see synchronous_standby_names)", waiting)
	}
	return nil
}

// serviceName is the application_name of a service's connections.
const serviceName = "petstore"

// ServiceSessions lists the backends of the sessions petstore services
// (Config.Background) have open on this database: a move away from it
// must wait for them to end. A service whose URL names another
// application_name is not seen.
func (db *DB) ServiceSessions(ctx context.Context) ([]int32, error) {
	var pids []int32
	err := db.pool.QueryRow(ctx, `SELECT COALESCE(array_agg(pid ORDER BY pid), '{}') FROM pg_stat_activity
		WHERE datname = current_database() AND application_name = $1 AND pid <> pg_backend_pid()`, serviceName).Scan(&pids)
	return pids, err
}

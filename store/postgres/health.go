package postgres

import (
	"context"
	"fmt"
	"sync"
	"time"

	"petstore/store"
)

// Readiness: a balancer must stop sending requests to an instance that
// cannot serve them, and only then. What one request meets (a table
// locked past the statement timeout, its resource's share of the pool
// full) is that request's answer, 503 with Retry-After, not the
// instance's: another instance would meet the same lock. So Ping does not
// look at recent failures; it asks the database itself, in a probe with a
// short timeout on a connection of its own (probePool, outside the pool
// that requests share, so that requests holding every connection cannot
// make it wait): can this instance reach the database, does it take
// writes, and are commits waiting on a synchronous standby that is gone.
const (
	// probeTimeout bounds the probe, so that readiness never hangs.
	probeTimeout = time.Second
	// probeEvery shares one probe among the readiness checks that come
	// within it, so that a flood of them cannot become a flood of queries.
	probeEvery = 500 * time.Millisecond
)

type probe struct {
	mu  sync.Mutex
	at  time.Time
	err error
	// notReady is the reason logged last, so that the log says when it
	// changes, not at every check.
	notReady string
}

// Ping reports whether the store is ready to serve: nil, or a
// database_unavailable error whose message says why not.
func (db *DB) Ping(ctx context.Context) error {
	err := db.ping(ctx)
	db.probe.mu.Lock()
	defer db.probe.mu.Unlock()
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

func (db *DB) ping(ctx context.Context) error {
	if err := db.pool.health.initError(); err != nil {
		return err
	}
	db.probe.mu.Lock()
	defer db.probe.mu.Unlock()
	if time.Since(db.probe.at) < probeEvery {
		return db.probe.err
	}
	db.probe.err = db.runProbe(ctx)
	db.probe.at = time.Now()
	return db.probe.err
}

// runProbe asks the database whether it takes writes, and whether commits
// have waited long for a synchronous standby.
func (db *DB) runProbe(ctx context.Context) error {
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), probeTimeout)
	defer cancel()
	var standby, noStandby bool
	var waiting int
	// noStandby: commits must wait for a synchronous standby and none is
	// connected at all (pg_stat_replication's rows are visible to every
	// role, though most of their columns are not).
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
		return store.Errorf(store.EUNAVAILABLE, "%s", fmt.Sprintf("commits wait for a synchronous standby that does not confirm them (%d sessions waiting, no standby connected: see synchronous_standby_names)", waiting))
	}
	return nil
}

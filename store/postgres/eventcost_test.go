package postgres_test

import (
	"context"
	"encoding/json"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"petstore/events"
	"petstore/store"
	"petstore/store/postgres"
	"petstore/store/postgres/pgtest"
)

// keptEvents is how many events the cost tests keep: enough that a plan
// which reads the whole table costs thousands of pages, and that the
// planner's statistics (ANALYZE) describe a table of some size.
const keptEvents = 200_000

// withKeptEvents fills the outbox of the database at url with keptEvents
// events already fanned out, as a week of writes leaves it, and has the
// planner's statistics read them.
func withKeptEvents(t *testing.T, conn *pgx.Conn) {
	t.Helper()
	ctx := context.Background()
	// In several transactions, as writes record them: ids of several tx.
	const perTx = keptEvents / 20
	for range keptEvents / perTx {
		if _, err := conn.Exec(ctx, `INSERT INTO events (type, created_at, data)
			SELECT 'pet.updated', now(), convert_to('{"id":' || g || ',"name":"a pet kept for the week","status":"available"}', 'UTF8')
			FROM generate_series(1, $1) g`, perTx); err != nil {
			t.Fatal(err)
		}
	}
	for _, sql := range []string{
		`UPDATE event_dispatch SET (tx, seq) = (SELECT tx, seq FROM events ORDER BY tx DESC, seq DESC LIMIT 1) WHERE id = 1`,
		`VACUUM ANALYZE events`,
		`VACUUM ANALYZE event_dispatch`,
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
}

// planNode is a node of EXPLAIN (FORMAT JSON)'s plan.
type planNode struct {
	NodeType     string     `json:"Node Type"`
	RelationName string     `json:"Relation Name"`
	IndexName    string     `json:"Index Name"`
	SharedHit    int64      `json:"Shared Hit Blocks"`
	SharedRead   int64      `json:"Shared Read Blocks"`
	Plans        []planNode `json:"Plans"`
}

// explain runs EXPLAIN (ANALYZE, BUFFERS) of sql and returns its plan.
func explain(t *testing.T, conn *pgx.Conn, sql string, args ...any) planNode {
	t.Helper()
	var raw []byte
	if err := conn.QueryRow(context.Background(), `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) `+sql, args...).Scan(&raw); err != nil {
		t.Fatalf("EXPLAIN %s: %v", sql, err)
	}
	var out []struct{ Plan planNode }
	if err := json.Unmarshal(raw, &out); err != nil || len(out) != 1 {
		t.Fatalf("EXPLAIN's answer %s: %v", raw, err)
	}
	return out[0].Plan
}

// seqScans lists the relations a plan reads whole.
func seqScans(p planNode) []string {
	var out []string
	if p.NodeType == "Seq Scan" {
		out = append(out, p.RelationName)
	}
	for _, c := range p.Plans {
		out = append(out, seqScans(c)...)
	}
	return out
}

func (p planNode) String() string {
	b, _ := json.MarshalIndent(p, "", " ")
	return string(b)
}

// The check every instance's engine makes at each poll, whether events
// were recorded past the fan-out's mark, reads the events index from the
// mark on, not the table: with a week of events kept and none new, it
// reads a few pages, where reading the table costs thousands.
func TestNewEventsCheckReadsFromTheMarkOnly(t *testing.T) {
	url := pgtest.URL(t)
	db := openAt(t, url)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	withKeptEvents(t, conn)

	plan := explain(t, conn, postgres.NewEventsQuery)
	t.Logf("with %d events kept and none new, the check reads %d pages", keptEvents, plan.SharedHit+plan.SharedRead)
	if scans := seqScans(plan); len(scans) != 0 {
		for _, s := range scans {
			if s == "events" {
				t.Errorf("the check reads all of events (Seq Scan):\n%s", plan)
			}
		}
	}
	// The mark's row, and the index's root and the leaf at the mark.
	if pages := plan.SharedHit + plan.SharedRead; pages > 20 {
		t.Errorf("the check read %d pages with no new event:\n%s", pages, plan)
	}

	// And it still finds what is new: the fan-out takes the one event
	// recorded after the mark, then has nothing left.
	if _, err := conn.Exec(ctx, `INSERT INTO events (type, created_at, data) VALUES ('pet.created', now(), '{"id":1}')`); err != nil {
		t.Fatal(err)
	}
	for i, want := range []int{1, 0} {
		n, err := db.FanOut(ctx, time.Now(), 500)
		if err != nil || n != want {
			t.Fatalf("fan-out %d after one new event: %d events, %v; want %d", i+1, n, err, want)
		}
	}
}

// polled is the engine's store, counting the polls of the outbox.
type polled struct {
	events.Store
	polls chan struct{}
}

func (p *polled) FanOut(ctx context.Context, now time.Time, limit int) (int, error) {
	n, err := p.Store.FanOut(ctx, now, limit)
	select {
	case p.polls <- struct{}{}:
	default:
	}
	return n, err
}

// idlePolls is how many polls of each instance the idle test watches
// (the engine polls ten times a second).
const idlePolls = 50

// Idle instances, each with its engine and stream hub polling the outbox,
// read nothing of the events table but what is new: with a week of events
// kept and none coming, PostgreSQL's statistics count no row of events
// read by a sequential scan while they poll. The CPU time the server spent
// meanwhile is printed (go test -v -run TestIdleInstancesReadNoKeptEvent
// ./store/postgres/), not judged: it depends on the machine.
func TestIdleInstancesReadNoKeptEvent(t *testing.T) {
	if testing.Short() {
		t.Skip("loads a week of events")
	}
	ctx := context.Background()
	cluster := pgtest.Private(t)
	url, err := cluster.NewDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)

	const instances = 2
	var dbs []*postgres.DB
	for range instances {
		db, err := postgres.Open(ctx, url, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		dbs = append(dbs, db)
	}
	// A webhook with a week of finished deliveries, beside the events.
	w := store.Webhook{URL: "https://receiver.example/hook", Events: []string{"*"}, Enabled: true, Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}
	if err := dbs[0].CreateWebhook(ctx, &w, nil); err != nil {
		t.Fatal(err)
	}
	withKeptEvents(t, conn)
	if _, err := conn.Exec(ctx, `INSERT INTO deliveries (webhook_id, event_tx, event_seq, state, scheduled_at, value)
		SELECT $1, tx, seq, 'succeeded', created_at, '{}' FROM events`, w.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `VACUUM ANALYZE deliveries`); err != nil {
		t.Fatal(err)
	}

	runCtx, stop := context.WithCancel(ctx)
	var running sync.WaitGroup
	var stores []*polled
	for _, db := range dbs {
		p := &polled{Store: db, polls: make(chan struct{})}
		stores = append(stores, p)
		e := events.New(events.Config{Store: p, Retention: 7 * 24 * time.Hour})
		running.Add(1)
		go func() { defer running.Done(); e.Run(runCtx) }()
		// A stream opened and closed: its hub took the outbox's newest
		// and, with no subscriber left, reads nothing more.
		sub, err := e.Hub().Subscribe(ctx)
		if err != nil {
			t.Fatal(err)
		}
		sub.Close()
		<-p.polls
	}
	// A start reads no kept event: a hub starts from the outbox's newest
	// (one row through the primary key), and the engine's fan-out from
	// its mark. Each backend reports what it read at most once a second:
	// the count is taken once it stayed the same for several seconds of
	// polls.
	var read, same int64
	for deadline := time.Now().Add(2 * time.Minute); same < 3; {
		for range 10 {
			for _, p := range stores {
				<-p.polls
			}
		}
		was := read
		if _, err := conn.Exec(ctx, `SELECT pg_stat_clear_snapshot()`); err != nil {
			t.Fatal(err)
		}
		if err := conn.QueryRow(ctx, `SELECT COALESCE(idx_tup_fetch, 0) FROM pg_stat_user_tables WHERE relname = 'events'`).Scan(&read); err != nil {
			t.Fatal(err)
		}
		if same++; read != was {
			same = 0
		}
		if time.Now().After(deadline) {
			t.Fatalf("PostgreSQL's statistics of the instances' starts did not settle in two minutes: %d rows read", read)
		}
	}
	t.Logf("events read through indexes as %d instances started and subscribed: %d, with %d kept", instances, read, keptEvents)
	if read > 10*instances {
		t.Errorf("the starts read %d rows of events through indexes, with %d kept: a start must not read the events kept", read, keptEvents)
	}
	if _, err := conn.Exec(ctx, `SELECT pg_stat_reset()`); err != nil {
		t.Fatal(err)
	}
	cpu0, err := cluster.CPU()
	if err != nil {
		t.Fatal(err)
	}
	// The instances' polls, counted side by side: each instance polls
	// all along, and one counted after the other took twice as long.
	start := time.Now()
	var watched sync.WaitGroup
	for _, p := range stores {
		watched.Go(func() {
			for range idlePolls {
				<-p.polls
			}
		})
	}
	watched.Wait()
	elapsed := time.Since(start)
	cpu1, err := cluster.CPU()
	if err != nil {
		t.Fatal(err)
	}
	stop()
	running.Wait()
	// The instances' backends report their statistics as they end.
	for _, db := range dbs {
		db.Close()
	}
	for {
		var others int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&others); err != nil {
			t.Fatal(err)
		}
		if others == 0 {
			break
		}
		runtime.Gosched()
	}
	if _, err := conn.Exec(ctx, `SELECT pg_stat_clear_snapshot()`); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"events", "deliveries"} {
		var seqScans, seqRead, idxFetched int64
		if err := conn.QueryRow(ctx, `SELECT COALESCE(seq_scan, 0), COALESCE(seq_tup_read, 0), COALESCE(idx_tup_fetch, 0)
			FROM pg_stat_user_tables WHERE relname = $1`, table).Scan(&seqScans, &seqRead, &idxFetched); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s while idle: %d sequential scans reading %d rows, %d rows fetched through indexes", table, seqScans, seqRead, idxFetched)
		if table == "events" && seqRead > 0 {
			t.Errorf("idle instances read %d rows of events in %d sequential scans, with %d events kept", seqRead, seqScans, keptEvents)
		}
	}
	cpu := cpu1 - cpu0
	t.Logf("PostgreSQL's CPU with %d idle instances and %d events kept: %v in %v (%.3f of a core)",
		instances, keptEvents, cpu, elapsed.Round(time.Millisecond), cpu.Seconds()/elapsed.Seconds())
}

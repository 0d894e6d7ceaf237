package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"petstore/store/postgres/pgtest"
)

// TestFailoverToAPromotedReplica: two instances write through a
// multi-host URL with target_session_attrs=read-write while the primary
// stops and its streaming replica is promoted. No acknowledged write is
// lost; every failed request gets 503 JSON, never a 500 or a dropped
// connection; the instances find the new primary by themselves.
func TestFailoverToAPromotedReplica(t *testing.T) {
	primary := pgtest.Private(t)
	databaseURL, err := primary.NewDatabase(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	standby := primary.NewStandby(t)
	u, err := url.Parse(databaseURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = primary.Addr() + "," + standby.Addr()
	q := u.Query()
	q.Set("target_session_attrs", "read-write")
	u.RawQuery = q.Encode()
	a := start(t, nil, pgFlags(u.String())...)
	b := start(t, nil, pgFlags(u.String())...)
	key := createKey(t, a, "failover")

	var (
		mu      sync.Mutex
		acked   []int64
		statusN = map[int]int{}
		stop    = make(chan struct{})
		wg      sync.WaitGroup
		okCount atomic.Int64
	)
	client := &http.Client{Timeout: 30 * time.Second}
	for w := range 4 {
		in := a
		if w%2 == 1 {
			in = b
		}
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				code, body, err := in.do(client, "POST", "/categories", `{"name":"kept"}`, "X-API-Key", key)
				if err != nil {
					t.Errorf("a write during the failover: %v (a dropped connection)", err)
					return
				}
				var res struct {
					ID   int64
					Code string
				}
				_ = json.Unmarshal([]byte(body), &res)
				mu.Lock()
				statusN[code]++
				if code == 201 {
					acked = append(acked, res.ID)
				}
				mu.Unlock()
				switch {
				case code == 201:
					okCount.Add(1)
				case code == 503 && res.Code == "database_unavailable":
					time.Sleep(20 * time.Millisecond) // as Retry-After asks, shortened
				default:
					t.Errorf("a write during the failover: %d %s", code, body)
				}
			}
		})
	}
	waitFor(t, "writes before the failover", 20*time.Second, func() bool { return okCount.Load() >= 50 })
	t0 := time.Now()
	if err := primary.Halt(); err != nil {
		t.Fatal(err)
	}
	if err := standby.Promote(); err != nil {
		t.Fatal(err)
	}
	promoted := okCount.Load()
	waitFor(t, "writes on the promoted replica", 30*time.Second, func() bool { return okCount.Load() >= promoted+50 })
	t.Logf("writes resumed %v after the halt", time.Since(t0))
	close(stop)
	wg.Wait()

	conn := pgtest.Connect(t, strings.Replace(databaseURL, primary.Addr(), standby.Addr(), 1))
	stored, err := conn.Int64s(context.Background(), `SELECT id FROM categories`)
	if err != nil {
		t.Fatal(err)
	}
	have := map[int64]bool{}
	for _, id := range stored {
		have[id] = true
	}
	lost := 0
	for _, id := range acked {
		if !have[id] {
			lost++
		}
	}
	t.Logf("answers during the failover: %v; %d acknowledged writes, %d stored", statusN, len(acked), len(stored))
	if lost > 0 {
		t.Errorf("%d of %d acknowledged writes are not on the new primary", lost, len(acked))
	}
}

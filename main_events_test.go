package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"petstore/domains/domaintest"
	"petstore/store/postgres/pgtest"
)

// Two instances on one database: each event is delivered once, by one of
// them, and the stream on B shows what A wrote within a second.
func TestTwoInstancesShareEvents(t *testing.T) {
	databaseURL := pgtest.URL(t)
	common := []string{"--database", databaseURL, "--webhook-allow-private", "--rate-limit", "0", "--admin-token", domaintest.AdminToken}
	a := start(t, nil, common...)
	b := start(t, nil, common...)

	rcv, rcvURL := newEventReceiver(t)
	code, body := a.call(t, "POST", "/admin/webhooks", fmt.Sprintf(`{"url":%q,"events":["*"]}`, rcvURL), adminAuth...)
	var hook struct{ Secret string }
	if err := json.Unmarshal([]byte(body), &hook); code != 201 || err != nil {
		t.Fatalf("creating the webhook: %d %s", code, body)
	}
	rcv.trust(t, hook.Secret)
	key := createKey(t, a, "events")

	// B's stream, open before A writes.
	req, _ := http.NewRequest("GET", b.base+"/events", nil)
	req.Header.Set("Accept", "text/event-stream")
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("B's stream: %v %v", res, err)
	}
	defer res.Body.Close()
	lines := make(chan string, 1000)
	go func() {
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	if code, body := a.call(t, "POST", "/categories", `{"name":"dogs"}`, "X-API-Key", key); code != 201 {
		t.Fatalf("POST /categories on A: %d %s", code, body)
	}
	began := time.Now()
	deadline := time.After(time.Second)
wait:
	for {
		select {
		case l := <-lines:
			if l == "event: category.created" {
				t.Logf("B's stream showed A's event %s after the write", time.Since(began))
				break wait
			}
		case <-deadline:
			t.Fatal("B's stream did not show A's category.created within 1 s")
		}
	}

	// Writes through both: every event delivered, each once.
	const n = 40
	for i := range n {
		in := a
		if i%2 == 1 {
			in = b
		}
		if code, body := in.call(t, "POST", "/pets", fmt.Sprintf(`{"name":"p%d","categoryId":1}`, i), "X-API-Key", key); code != 201 {
			t.Fatalf("POST /pets: %d %s", code, body)
		}
	}
	domaintest.WaitFor(t, 30*time.Second, 20*time.Millisecond, func() error {
		rcv.mu.Lock()
		defer rcv.mu.Unlock()
		if len(rcv.pets) != n {
			return fmt.Errorf("%d of %d pet.created received", len(rcv.pets), n)
		}
		return nil
	})
	// A moment for a duplicate to arrive before counting: the wait can
	// only make the check catch more, never fail a correct run.
	time.Sleep(500 * time.Millisecond)
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if rcv.dups != 0 {
		t.Errorf("%d deliveries were made twice", rcv.dups)
	}
	var types []string
	for _, b := range rcv.bodies {
		var e struct{ Type string }
		_ = json.Unmarshal([]byte(b), &e)
		types = append(types, e.Type)
	}
	if got := strings.Count(strings.Join(types, " "), "pet.created"); got != n {
		t.Errorf("pet.created delivered: %d, want %d", got, n)
	}
}

package handlers_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"petstore/domains/domaintest"
	"petstore/events"
	"petstore/events/webhooktest"
	"petstore/handlers"
	"petstore/store"
)

// withEvents gives the server a webhook engine (private receivers allowed,
// for the test's own), run until the test ends.
func withEvents(tb testing.TB) serverOption {
	return func(c *handlers.Config) {
		policy := events.Policy{AllowPrivate: true}
		e := events.New(events.Config{Store: c.Store.(events.Store), Policy: policy, Poll: 10 * time.Millisecond, Retention: time.Hour})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { e.Run(ctx); close(done) }()
		tb.Cleanup(func() { cancel(); <-done })
		c.Events, c.WebhookPolicy = e, policy
	}
}

type webhookJSON struct {
	ID      int64  `json:"id"`
	Secret  string `json:"secret"`
	Enabled bool   `json:"enabled"`
}

// A scripted session of API and admin calls reaches a receiver of the
// test's own as exactly the expected events, each verified, with the
// resources as the API answered them.
func TestWebhookSession(t *testing.T) {
	ts := newTestServer(t, withEvents(t))
	rcv := webhooktest.Start(t, webhooktest.Options{})
	ts.adminDo("PATCH", "/admin/project", `{"plan":"pro"}`).wantStatus(200)

	ts.adminDo("POST", "/admin/webhooks", `{"url":"ftp://example.com/","events":["*"]}`).wantError(422, store.EUNPROCESSABLE)
	ts.adminDo("POST", "/admin/webhooks", `{"url":"`+rcv.URL+`","events":["pet.eaten"]}`).wantError(400, store.EINVALID)
	var w webhookJSON
	res := ts.adminDo("POST", "/admin/webhooks", `{"url":"`+rcv.URL+`","events":["*"],"description":"all"}`).wantStatus(201)
	res.decode(&w)
	if !strings.HasPrefix(w.Secret, "whsec_") || !w.Enabled {
		t.Fatalf("created webhook: %s", res.body)
	}
	rcv.Trust(w.Secret)
	path := fmt.Sprint("/admin/webhooks/", w.ID)
	if body := string(ts.adminDo("GET", path, "").wantStatus(200).body); strings.Contains(body, "whsec_") {
		t.Errorf("GET shows the secret: %s", body)
	}
	if body := string(ts.adminDo("GET", "/admin/webhooks", "").wantStatus(200).body); strings.Contains(body, "whsec_") || !strings.Contains(body, `"description":"all"`) {
		t.Errorf("the list: %s", body)
	}
	ts.adminDo("PATCH", path, `{"description":"everything"}`).wantStatus(200)

	// The script.
	var cat, pet, order, order2 struct {
		ID int64 `json:"id"`
	}
	catRes := ts.do("POST", "/categories", `{"name":"dogs"}`).wantStatus(201)
	catRes.decode(&cat)
	petRes := ts.do("POST", "/pets", fmt.Sprintf(`{"name":"Rex","categoryId":%d}`, cat.ID)).wantStatus(201)
	petRes.decode(&pet)
	stockRes := ts.do("PUT", fmt.Sprint("/store/inventory/", pet.ID), `{"quantity":5}`).wantStatus(200)
	orderRes := ts.do("POST", "/store/orders", fmt.Sprintf(`{"petId":%d,"quantity":2}`, pet.ID)).wantStatus(201)
	orderRes.decode(&order)
	doneRes := ts.do("PUT", fmt.Sprint("/store/orders/", order.ID), `{"complete":true}`).wantStatus(200)
	ts.do("POST", "/store/orders", fmt.Sprintf(`{"petId":%d}`, pet.ID)).wantStatus(201).decode(&order2)
	ts.do("DELETE", fmt.Sprint("/store/orders/", order2.ID), "").wantStatus(204)
	ts.do("POST", "/pets", `{"name":"Ghost","categoryId":999}`).wantError(422, store.EUNPROCESSABLE) // refused: no event
	domRes := ts.adminDo("POST", "/admin/domains", `{"name":"shop.example.test"}`).wantStatus(201)
	ts.adminDo("DELETE", "/admin/domains/shop.example.test", "").wantStatus(204)
	ts.do("DELETE", fmt.Sprint("/pets/", pet.ID), "").wantStatus(204)

	compact := func(b []byte) string {
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		out, _ := json.Marshal(v)
		return string(out)
	}
	withoutTroubleshooting := func(b []byte) []byte {
		var v map[string]any
		_ = json.Unmarshal(b, &v)
		delete(v, "troubleshooting")
		out, _ := json.Marshal(v)
		return out
	}
	want := []struct{ typ, data string }{
		{store.EventCategoryCreated, compact(catRes.body)},
		{store.EventPetCreated, compact(petRes.body)},
		{store.EventInventory, compact(stockRes.body)},
		{store.EventInventory, fmt.Sprintf(`{"petId":%d,"quantity":3,"status":"available"}`, pet.ID)},
		{store.EventOrderPlaced, compact(orderRes.body)},
		{store.EventOrderCompleted, compact(doneRes.body)},
		{store.EventInventory, fmt.Sprintf(`{"petId":%d,"quantity":2,"status":"available"}`, pet.ID)},
		{store.EventOrderPlaced, ""},
		{store.EventInventory, fmt.Sprintf(`{"petId":%d,"quantity":3,"status":"available"}`, pet.ID)},
		{store.EventOrderCancelled, fmt.Sprintf(`{"id":%d}`, order2.ID)},
		{store.EventDomainAdded, compact(withoutTroubleshooting(domRes.body))},
		{store.EventDomainRemoved, `{"name":"shop.example.test"}`},
		{store.EventPetDeleted, fmt.Sprintf(`{"id":%d}`, pet.ID)},
	}
	var got []webhooktest.Event
	domaintest.WaitFor(t, 20*time.Second, 10*time.Millisecond, func() error {
		got = rcv.Events()
		if len(got) < len(want) {
			return fmt.Errorf("%d events received, want %d", len(got), len(want))
		}
		return nil
	})
	// Delivery promises no order: sort by id, which is creation order.
	slices.SortFunc(got, func(a, b webhooktest.Event) int { return strings.Compare(a.ID, b.ID) })
	if len(got) != len(want) {
		t.Errorf("received %d events, want %d: %v", len(got), len(want), got)
	}
	for i := range min(len(got), len(want)) {
		if got[i].Type != want[i].typ || want[i].data != "" && compact(got[i].Data) != want[i].data {
			t.Errorf("event %d: got %s %s, want %s %s", i, got[i].Type, got[i].Data, want[i].typ, want[i].data)
		}
	}

	// The other operations: test, rotate, deliveries, retry, events pages.
	var test webhooktest.Event
	ts.adminDo("POST", path+"/test", "").wantStatus(202).decode(&test)
	var deliveries []struct {
		ID      int64  `json:"id"`
		EventID string `json:"eventId"`
		State   string `json:"state"`
	}
	domaintest.WaitFor(t, 20*time.Second, 10*time.Millisecond, func() error {
		for _, e := range rcv.Events() {
			if e.ID == test.ID && e.Type == store.EventWebhookTest {
				return nil
			}
		}
		return fmt.Errorf("no webhook.test received")
	})
	// The receiver has answered; the attempt's record follows.
	domaintest.WaitFor(t, 20*time.Second, 10*time.Millisecond, func() error {
		ts.adminDo("GET", path+"/deliveries?limit=5", "").wantStatus(200).decode(&deliveries)
		if len(deliveries) != 5 || deliveries[0].State != store.DeliverySucceeded || deliveries[0].EventID != test.ID {
			return fmt.Errorf("deliveries: %+v", deliveries)
		}
		return nil
	})
	// A new secret signs from now on: the retry verifies with it.
	var rotated webhookJSON
	ts.adminDo("POST", path+"/rotate-secret", "").wantStatus(200).decode(&rotated)
	if rotated.Secret == w.Secret || !strings.HasPrefix(rotated.Secret, "whsec_") {
		t.Errorf("rotated secret: %q", rotated.Secret)
	}
	rcv.Trust(rotated.Secret)
	ts.adminDo("POST", fmt.Sprintf("%s/deliveries/%d/retry", path, deliveries[0].ID), "").wantStatus(202)
	domaintest.WaitFor(t, 20*time.Second, 10*time.Millisecond, func() error {
		ts.adminDo("GET", path+"/deliveries?limit=1", "").wantStatus(200).decode(&deliveries)
		if len(deliveries) != 1 || deliveries[0].State != store.DeliverySucceeded || deliveries[0].EventID != test.ID {
			return fmt.Errorf("the retry: %+v", deliveries)
		}
		return nil
	})
	ts.adminDo("POST", fmt.Sprintf("/admin/webhooks/%d/deliveries/%d/retry", w.ID+100, deliveries[0].ID), "").wantError(404, store.ENOTFOUND)
	ts.adminDo("GET", "/admin/events?limit=2", "").wantStatus(200)
	ts.do("GET", "/events?limit=3", "").wantStatus(200)
	ts.adminDo("PATCH", path, `{"enabled":false}`).wantStatus(200)
	// A disabled webhook is sent nothing: its test is refused, not queued for no one.
	if body := ts.adminDo("POST", path+"/test", "").wantError(409, store.ECONFLICT).body; !strings.Contains(string(body), "is disabled") {
		t.Errorf("the test of a disabled webhook: %s", body)
	}
	ts.adminDo("DELETE", path, "").wantStatus(204)
	ts.adminDo("GET", path, "").wantError(404, store.ENOTFOUND)
}

// sseClient reads a Server-Sent Events stream.
type sseClient struct {
	resp *http.Response
	r    *bufio.Reader
}

func openStream(t *testing.T, url, lastID string) *sseClient {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Accept", "text/event-stream")
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	t.Cleanup(func() { resp.Body.Close() })
	return &sseClient{resp: resp, r: bufio.NewReader(resp.Body)}
}

// next reads the next event's id and type, skipping comments.
func (c *sseClient) next(t *testing.T) (id, typ string) {
	t.Helper()
	for {
		line, err := c.r.ReadString('\n')
		if err != nil {
			t.Fatalf("stream ended: %v", err)
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case strings.HasPrefix(line, "id: "):
			id = line[4:]
		case strings.HasPrefix(line, "event: "):
			typ = line[7:]
		case line == "" && id != "":
			return id, typ
		}
	}
}

// An SSE client that reconnects with Last-Event-ID gets exactly the events
// it missed; ?after= older than what is kept is 410 naming the oldest id.
func TestEventStreamResumes(t *testing.T) {
	ts := newTestServer(t, withEvents(t))
	var cat struct{ ID int64 }
	ts.do("POST", "/categories", `{"name":"dogs"}`).wantStatus(201).decode(&cat)
	first := openStream(t, ts.http.URL+"/events", "")
	id1, typ := first.next(t)
	if typ != store.EventCategoryCreated {
		t.Fatalf("first event: %s", typ)
	}
	// Live: an event written while the stream is open arrives.
	ts.do("POST", "/pets", fmt.Sprintf(`{"name":"a","categoryId":%d}`, cat.ID)).wantStatus(201)
	id2, typ := first.next(t)
	if typ != store.EventPetCreated || id2 <= id1 {
		t.Fatalf("live event: %s %s", id2, typ)
	}
	first.resp.Body.Close()
	// Missed while away.
	var missed []string
	for i := range 5 {
		ts.do("POST", "/pets", fmt.Sprintf(`{"name":"m%d","categoryId":%d}`, i, cat.ID)).wantStatus(201)
	}
	var page []webhooktest.Event
	ts.do("GET", "/events?after="+id2, "").wantStatus(200).decode(&page)
	for _, e := range page {
		missed = append(missed, e.ID)
	}
	if len(missed) != 5 {
		t.Fatalf("JSON page after %s: %d events", id2, len(missed))
	}
	again := openStream(t, ts.http.URL+"/events", id2)
	for i, want := range missed {
		if id, _ := again.next(t); id != want {
			t.Fatalf("resumed event %d: %s, want %s", i, id, want)
		}
	}
	ts.do("POST", "/pets", fmt.Sprintf(`{"name":"after","categoryId":%d}`, cat.ID)).wantStatus(201)
	if id, typ := again.next(t); id <= missed[len(missed)-1] || typ != store.EventPetCreated {
		t.Fatalf("after the missed ones: %s %s", id, typ)
	}

	// Past retention.
	if _, err := ts.db.PruneEvents(context.Background(), time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	ts.do("POST", "/categories", `{"name":"cats"}`).wantStatus(201)
	res := ts.do("GET", "/events?after="+id1, "").wantError(410, store.EGONE)
	oldest, _ := ts.db.OldestEvent(context.Background())
	if !strings.Contains(res.message(), oldest.String()) {
		t.Errorf("410 does not name the oldest id %s: %s", oldest, res.message())
	}
	ts.do("GET", "/events?after=evt_nope", "").wantError(400, store.EINVALID)
}

// Past the cap on streams, another is refused with 503 and Retry-After;
// a JSON page is still served, and a stream ended frees its place.
func TestEventStreamCap(t *testing.T) {
	var logs domaintest.SyncBuffer
	ts := newTestServer(t, withEvents(t), func(c *handlers.Config) {
		c.MaxStreams = 1
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	first := openStream(t, ts.http.URL+"/events", "")
	h := http.Header{"Accept": {"text/event-stream"}}
	for range 5 {
		res := ts.request("GET", "/events", nil, h).wantError(503, "unavailable")
		if res.header.Get("Retry-After") == "" {
			t.Error("503 without Retry-After")
		}
	}
	// Any client can make these: the log counts them rather than a line each.
	if n := strings.Count(logs.String(), "msg=\"request failed\""); n != 1 {
		t.Errorf("5 streams refused: %d failure lines, want 1 and a count:\n%s", n, logs.String())
	}
	ts.do("GET", "/events", "").wantStatus(200)
	first.resp.Body.Close()
	domaintest.WaitFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		req, _ := http.NewRequest("GET", ts.http.URL+"/admin/events", nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Authorization", "Bearer "+ts.admin)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("after the first stream ended: %d", resp.StatusCode)
		}
		return nil
	})
}

// petstore_event_streams_open counts the streams open, public and admin,
// and follows them as they end; one refused past the cap is not counted.
func TestEventStreamsGauge(t *testing.T) {
	ts := newTestServer(t, withEvents(t), func(c *handlers.Config) { c.MaxStreams = 2 })
	const gauge = "petstore_event_streams_open"
	ts.scrape().want(t, 0, gauge)
	public := openStream(t, ts.http.URL+"/events", "")
	req, _ := http.NewRequest("GET", ts.http.URL+"/admin/events", nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+ts.admin)
	admin, err := http.DefaultClient.Do(req)
	if err != nil || admin.StatusCode != 200 {
		t.Fatalf("admin stream: %v %v", admin, err)
	}
	defer admin.Body.Close()
	e := ts.scrape()
	e.want(t, 2, gauge)
	if typ := e.types[gauge]; typ != "gauge" {
		t.Errorf("%s is a %s", gauge, typ)
	}
	ts.request("GET", "/events", nil, http.Header{"Accept": {"text/event-stream"}}).wantError(503, "unavailable")
	ts.scrape().want(t, 2, gauge)
	public.resp.Body.Close()
	domaintest.WaitFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		if got, _ := ts.scrape().get(gauge); got != 1 {
			return fmt.Errorf("%s = %v after one stream ended, want 1", gauge, got)
		}
		return nil
	})
	admin.Body.Close()
	domaintest.WaitFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		if got, _ := ts.scrape().get(gauge); got != 0 {
			return fmt.Errorf("%s = %v after both ended, want 0", gauge, got)
		}
		return nil
	})
}

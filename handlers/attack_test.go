package handlers_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"petstore/store/postgres/pgtest"
)

// TestShipDateIsAnsweredAsKept: a shipDate finer than the microsecond is
// kept to the microsecond on both stores, and the answer to the write says
// so: it is the body a later GET answers under the same ETag.
func TestShipDateIsAnsweredAsKept(t *testing.T) {
	t.Run("bbolt", func(t *testing.T) { testShipDateAsKept(t, newTestServer(t)) })
	t.Run("postgres", func(t *testing.T) { testShipDateAsKept(t, startOnPostgres(t, pgtest.URL(t))) })
}

func testShipDateAsKept(t *testing.T, ts *testServer) {
	_, pet := ts.addRex(1)
	placed := ts.do("POST", "/store/orders", fmt.Sprintf(`{"petId":%d,"shipDate":"2026-12-01T10:00:00.123456789+01:00"}`, pet.ID)).wantStatus(201)
	var o struct {
		ID       int64
		ShipDate string
	}
	placed.decode(&o)
	if o.ShipDate != "2026-12-01T09:00:00.123456Z" {
		t.Errorf("placed with shipDate %s, want 2026-12-01T09:00:00.123456Z", o.ShipDate)
	}
	path := fmt.Sprintf("/store/orders/%d", o.ID)
	sameAsRead := func(write *response) {
		t.Helper()
		read := ts.do("GET", path, "").wantStatus(200)
		if string(read.body) != string(write.body) || read.header.Get("ETag") != write.header.Get("ETag") {
			t.Errorf("written as %s (ETag %s), read as %s (ETag %s)", write.body, write.header.Get("ETag"), read.body, read.header.Get("ETag"))
		}
	}
	sameAsRead(placed)
	updated := ts.do("PUT", path, `{"shipDate":"2026-12-02T00:00:00.9999999Z"}`).wantStatus(200)
	updated.decode(&o)
	if o.ShipDate != "2026-12-02T00:00:00.999999Z" {
		t.Errorf("updated to shipDate %s, want 2026-12-02T00:00:00.999999Z", o.ShipDate)
	}
	sameAsRead(updated)
}

// TestOneCredentialPerRequest: a write that carries its API key (or an
// admin request its Authorization) twice is refused whichever comes first,
// as a second Idempotency-Key is: a proxy that reads the other one would
// check another credential than the service. Nothing is written.
func TestOneCredentialPerRequest(t *testing.T) {
	ts, cat, _ := newServerWithRex(t, 0)
	body := fmt.Sprintf(`{"name":"Twice","categoryId":%d}`, cat.ID)
	for _, keys := range [][]string{{ts.apiKey, "junk"}, {"junk", ts.apiKey}, {ts.apiKey, ts.apiKey}} {
		r := ts.send("POST", "/pets", body, http.Header{"X-Api-Key": keys}).wantError(401, "unauthorized")
		if want := "send one API key in X-API-Key, not 2"; r.message() != want {
			t.Errorf("message %q, want %q", r.message(), want)
		}
	}
	for _, tokens := range [][]string{{"Bearer " + ts.admin, "Bearer junk"}, {"Bearer " + ts.admin, "Bearer " + ts.admin}} {
		ts.send("GET", "/admin/project", "", http.Header{"Authorization": tokens}).wantError(401, "unauthorized")
	}
	if r := ts.do("GET", "/pets?status=available", "").wantStatus(200); strings.Contains(string(r.body), "Twice") {
		t.Errorf("a pet was created: %s", r.body)
	}
}

package handlers_test

import (
	"fmt"
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

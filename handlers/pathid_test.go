package handlers_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"petstore/store"
)

// percentDigits writes id with every digit percent-encoded: 12 is %31%32.
func percentDigits(id int64) string {
	var b strings.Builder
	for _, d := range strconv.FormatInt(id, 10) {
		fmt.Fprintf(&b, "%%%X", d)
	}
	return b.String()
}

// TestPathIDsArePercentDecoded: a path id is the text its segment decodes
// to (RFC 3986 section 6.2.2.2: %31 is 1), so /pets/%31 answers as
// /pets/1 does, on reads and writes alike; leading zeros stay accepted
// (/pets/01 is pet 1). The deprecated read's successor Link carries the
// decoded id, query-escaped once, on its 400s too.
func TestPathIDsArePercentDecoded(t *testing.T) {
	ts, cat, pet := newServerWithRex(t, 3)
	ctx := context.Background()
	plain := fmt.Sprintf("/pets/%d", pet.ID)
	want := ts.do("GET", plain, "").wantStatus(200)
	id := strconv.FormatInt(pet.ID, 10)
	// Each form of the id, and the id the successor's Link names: the
	// segment decoded, as sent.
	for path, decoded := range map[string]string{
		"/pets/" + percentDigits(pet.ID):   id,
		"/pets/0" + id:                     "0" + id,
		"/pets/00" + percentDigits(pet.ID): "00" + id,
	} {
		res := ts.do("GET", path, "").wantStatus(200)
		if string(res.body) != string(want.body) || res.header.Get("ETag") != want.header.Get("ETag") {
			t.Errorf("GET %s: %s ETag %q; GET %s: %s ETag %q", path, res.body, res.header.Get("ETag"), plain, want.body, want.header.Get("ETag"))
		}
		successor := "/pets?id=" + decoded
		if link := res.header.Get("Link"); !strings.Contains(link, "<"+successor+`>; rel="successor-version"`) {
			t.Errorf("GET %s: Link %q, want the successor %s", path, link, successor)
		}
		// The successor reads the same pet.
		if got := ts.do("GET", successor, "").wantStatus(200); string(got.body) != "["+strings.TrimSpace(string(want.body))+"]\n" {
			t.Errorf("GET %s: %s, want [%s]", successor, got.body, want.body)
		}
	}
	for _, path := range []string{"/categories/%d", "/store/inventory/%d"} {
		got := ts.do("GET", strings.Replace(path, "%d", percentDigits(pet.ID), 1), "").wantStatus(200)
		if want := ts.do("GET", fmt.Sprintf(path, pet.ID), "").wantStatus(200); string(got.body) != string(want.body) {
			t.Errorf("GET %s percent-encoded: %s, plain: %s", path, got.body, want.body)
		}
	}

	// Writes reach the record the decoded id names.
	ts.do("PUT", "/pets/"+percentDigits(pet.ID), fmt.Sprintf(`{"name":"Rex II","categoryId":%d}`, cat.ID)).wantStatus(200)
	if p, err := ts.db.Pet(ctx, pet.ID); err != nil || p.Name != "Rex II" {
		t.Errorf("after PUT /pets/%s: %+v, %v", percentDigits(pet.ID), p, err)
	}
	ts.do("PUT", "/store/inventory/"+percentDigits(pet.ID), `{"quantity":9}`).wantStatus(200)
	if it, err := ts.db.InventoryItem(ctx, pet.ID); err != nil || it.Quantity != 9 {
		t.Errorf("after PUT /store/inventory/%s: %+v, %v", percentDigits(pet.ID), it, err)
	}

	// A 400's successor Link escapes the decoded id once.
	for path, link := range map[string]string{
		"/pets/x%2Fy":                          `</pets?id=x%2Fy>; rel="successor-version"`,
		"/pets/" + percentDigits(pet.ID) + "x": fmt.Sprintf(`</pets?id=%dx>; rel="successor-version"`, pet.ID),
		"/pets/a%20b":                          `</pets?id=a+b>; rel="successor-version"`,
	} {
		res := ts.do("GET", path, "").wantError(400, "invalid_request")
		if got := res.header.Get("Link"); !strings.Contains(got, link) || strings.Contains(got, "%25") {
			t.Errorf("GET %s: Link %q, want %s", path, got, link)
		}
	}

	// Decoded once: %2531 is the text %31, no id, not 1.
	ts.do("GET", "/pets/%25"+percentDigits(pet.ID)[1:], "").wantError(400, "invalid_request")
	ts.adminDo("GET", "/admin/domains/%252A.shop.example.com", "").wantError(404, "not_found")

	ts.do("DELETE", "/pets/0"+percentDigits(pet.ID), "").wantStatus(204)
	if _, err := ts.db.Pet(ctx, pet.ID); store.ErrorCode(err) != store.ENOTFOUND {
		t.Errorf("after DELETE: %v, want not found", err)
	}
}

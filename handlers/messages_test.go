package handlers_test

import (
	"testing"
)

// TestValidationMessages pins the message of every case of issue 21's list
// and their neighbours: integers named with the field's own range (not the
// Go format's), fractions and exponents told in words, one message for one
// overflow however it is written, bounds in digits, dates with a human
// hint, every missing required field in one message, and nothing shaped
// like a regular expression.
func TestValidationMessages(t *testing.T) {
	ts := newTestServer(t)
	ts.do("POST", "/categories", `{"name":"dogs"}`).wantStatus(201)
	ts.do("POST", "/pets", `{"name":"Rex","categoryId":1}`).wantStatus(201)
	const (
		quantity = `body.quantity: must be a whole number from 1 to 10000`
		noFrac   = `, written in digits only: no fraction, no exponent`
		petID    = `body.petId: must be a whole number from 1 to 9223372036854775807`
		category = `body.categoryId: must be a whole number from 1 to 9223372036854775807`
		dateTime = `body.shipDate: must be a date-time in RFC 3339, for example 2026-12-01T10:00:00Z`
	)
	for _, c := range []struct{ method, path, body, message string }{
		// An exponent, beyond the range of the field and of int64.
		{"POST", "/store/orders", `{"petId":1,"quantity":1e30}`, quantity + noFrac},
		{"POST", "/store/orders", `{"petId":1,"quantity":99999999999999999999}`, quantity},
		{"POST", "/store/orders", `{"petId":1,"quantity":2147483648}`, quantity},
		{"POST", "/store/orders", `{"petId":1,"quantity":20000}`, quantity},
		{"POST", "/store/orders", `{"petId":1,"quantity":0}`, quantity},
		{"POST", "/store/orders", `{"petId":1,"quantity":1.5}`, quantity + noFrac},
		{"POST", "/store/orders", `{"petId":1,"quantity":2.0}`, quantity + noFrac},
		{"POST", "/store/orders", `{"petId":1,"quantity":1e2}`, quantity + noFrac},
		{"POST", "/store/orders", `{"petId":1,"quantity":"2"}`, quantity},
		// One overflow, one message, however it is written.
		{"POST", "/store/orders", `{"petId":99999999999999999999}`, petID},
		{"POST", "/store/orders", `{"petId":9223372036854775808}`, petID},
		{"POST", "/store/orders", `{"petId":1e30}`, petID + noFrac},
		// 1.0 is not "beyond int64": it is written with a fraction.
		{"POST", "/pets", `{"name":"a","categoryId":1.0}`, category + noFrac},
		{"POST", "/pets", `{"name":"a","categoryId":0}`, category},
		{"POST", "/pets", `{"name":"a","categoryId":"1"}`, category},
		// Bounds in digits, not 1e+06.
		{"PUT", "/store/inventory/1", `{"quantity":2000000}`, `body.quantity: must be a whole number from 0 to 1000000`},
		{"PUT", "/store/inventory/1", `{"quantity":-1}`, `body.quantity: must be a whole number from 0 to 1000000`},
		// Dates: a hint and an example, no regular expression.
		{"POST", "/store/orders", `{"petId":1,"shipDate":"tomorrow"}`, dateTime},
		{"POST", "/store/orders", `{"petId":1,"shipDate":"2026-13-01T00:00:00Z"}`, dateTime},
		{"POST", "/store/orders", `{"petId":1,"shipDate":5}`, dateTime},
		// Every missing required field, in one message.
		{"POST", "/pets", `{}`, `body: missing the required fields "name" and "categoryId"`},
		{"POST", "/pets", `{"categoryId":1}`, `body: missing the required field "name"`},
		{"POST", "/store/orders", `{}`, `body: missing the required field "petId"`},
		{"PUT", "/store/inventory/1", `{}`, `body: missing the required field "quantity"`},
		// Strings and enums.
		{"POST", "/pets", `{"name":"","categoryId":1}`, `body.name: must not be empty`},
		{"POST", "/pets", `{"name":"a","categoryId":1,"status":"lost"}`, `body.status: must be one of available, pending, sold`},
		{"POST", "/categories", `{"name":"x","description":5}`, `body.description: must be a string`},
		// Parameters: the same words.
		{"GET", "/pets?limit=1.5", "", `query parameter "limit": must be a whole number from 1 to 100` + noFrac},
		{"GET", "/pets?limit=1e2", "", `query parameter "limit": must be a whole number from 1 to 100` + noFrac},
		{"GET", "/pets?limit=1000", "", `query parameter "limit": must be a whole number from 1 to 100`},
		{"GET", "/pets?categoryId=99999999999999999999", "", `query parameter "categoryId": must be a whole number from 1 to 9223372036854775807`},
		{"GET", "/pets/1.0", "", `path parameter "petId": must be a whole number from 1 to 9223372036854775807` + noFrac},
		{"GET", "/pets?status=lost", "", `query parameter "status": must be one of available, pending, sold`},
		{"GET", "/store/orders?complete=maybe", "", `query parameter "complete": must be true or false`},
		{"GET", "/pets?cursor=a.b", "", `query parameter "cursor": is not in the form this field takes (see its description in the API reference)`},
	} {
		res := ts.do(c.method, c.path, c.body)
		if res.status != 400 || res.message() != c.message {
			t.Errorf("%s %s %s:\n got %d %q\nwant 400 %q", c.method, c.path, c.body, res.status, res.message(), c.message)
		}
	}
}

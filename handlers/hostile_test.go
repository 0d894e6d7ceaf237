package handlers_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"petstore/server"
	"petstore/store"
)

// hostileCase is one hostile request through the real server and the
// harness, which validates the answer against the spec and holds every
// non-2xx to the Error contract.
type hostileCase struct {
	name         string
	method, path string
	body         string
	// header is sent as is. "Content-Type" defaults to application/json when
	// there is a body; noContentType sends none. "Host" sets the request's
	// Host. The API key is sent unless header sets X-API-Key itself.
	header        map[string]string
	noContentType bool
	status        int
	code          string // for non-2xx: the Error code
	mentions      string // for non-2xx: a word the message must contain
	check         func(t *testing.T, r *response)
}

func deepArray(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

func deepObject(n int) string { return strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n) }

func gzipped(s string) string {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	_, _ = io.WriteString(w, s)
	_ = w.Close()
	return b.String()
}

// cursorFor makes the cursor of handlers/cursor.go for the list at path,
// without filters, as a client that forged one would.
func cursorFor(path string, after uint64) string {
	h := fnv.New32a()
	h.Write([]byte(path + "\x00"))
	b := binary.BigEndian.AppendUint64(nil, after)
	b = binary.BigEndian.AppendUint32(append(b, 0xff), h.Sum32())
	return base64.RawURLEncoding.EncodeToString(b)
}

// wantName checks that a created pet or category kept its name exactly.
func wantName(name string) func(t *testing.T, r *response) {
	return func(t *testing.T, r *response) {
		var v struct{ Name string }
		r.decode(&v)
		if v.Name != name {
			t.Errorf("name came back as %q, want %q", v.Name, name)
		}
	}
}

func wantHeader(name, contains string) func(t *testing.T, r *response) {
	return func(t *testing.T, r *response) {
		if got := r.header.Get(name); !strings.Contains(got, contains) {
			t.Errorf("%s: %q, want it to contain %q", name, got, contains)
		}
	}
}

// TestHostileRequests sends requests crafted to break parsers, validators
// and routers through the real server. Each case states its status and
// code; none may get a 5xx, and the harness checks every non-2xx answer
// against the Error contract and every answer against the spec.
func TestHostileRequests(t *testing.T) {
	ts, cat, pet := newServerWithRex(t, 3)

	newPet := func(name string) string {
		b, _ := json.Marshal(map[string]any{"name": name, "categoryId": cat.ID})
		return string(b)
	}
	petBody := newPet("a")
	petPath := fmt.Sprintf("/pets/%d", pet.ID)
	invPath := fmt.Sprintf("/store/inventory/%d", pet.ID)
	cid := cat.ID
	dogs100 := strings.Repeat("🐶", 100)           // 100 characters, 400 bytes
	accents100 := strings.Repeat("é", 100)        // 100 characters, 200 bytes
	combining100 := strings.Repeat("e\u0301", 50) // 100 code points, 50 graphemes
	manyParams := "/pets?" + strings.Repeat("a=1&", 10001) + "limit=1"
	manyHeaders := map[string]string{}
	for i := range 200 {
		manyHeaders[fmt.Sprintf("X-Junk-%03d", i)] = strings.Repeat("j", 40)
	}

	cases := []hostileCase{
		// JSON that parsers disagree on.
		{name: "duplicate keys", method: "POST", path: "/pets", body: fmt.Sprintf(`{"name":"a","name":"b","categoryId":%d}`, cid), status: 400, code: "invalid_request", mentions: "name"},
		{name: "duplicate keys, the first over the limit", method: "POST", path: "/pets", body: fmt.Sprintf(`{"name":"%s","name":"ok","categoryId":%d}`, strings.Repeat("n", 101), cid), status: 400, code: "invalid_request", mentions: "name"},
		{name: "duplicate keys, the last over the limit", method: "POST", path: "/pets", body: fmt.Sprintf(`{"name":"ok","name":"%s","categoryId":%d}`, strings.Repeat("n", 101), cid), status: 400, code: "invalid_request", mentions: "name"},
		{name: "duplicate key differing in case", method: "POST", path: "/pets", body: fmt.Sprintf(`{"name":"a","NAME":"b","categoryId":%d}`, cid), status: 400, code: "invalid_request", mentions: "NAME"},
		{name: "NaN", method: "POST", path: "/pets", body: fmt.Sprintf(`{"name":NaN,"categoryId":%d}`, cid), status: 400, code: "invalid_request", mentions: "JSON"},
		{name: "Infinity", method: "POST", path: "/pets", body: `{"name":"a","categoryId":Infinity}`, status: 400, code: "invalid_request", mentions: "JSON"},
		{name: "-Infinity quantity", method: "POST", path: "/store/orders", body: fmt.Sprintf(`{"petId":%d,"quantity":-Infinity}`, pet.ID), status: 400, code: "invalid_request", mentions: "JSON"},
		{name: "float for an integer", method: "POST", path: "/pets", body: fmt.Sprintf(`{"name":"a","categoryId":%d.0}`, cid), status: 400, code: "invalid_request", mentions: "categoryId"},
		{name: "exponent for an integer", method: "PUT", path: invPath, body: `{"quantity":2e0}`, status: 400, code: "invalid_request", mentions: "quantity"},
		{name: "1e400 quantity", method: "POST", path: "/store/orders", body: fmt.Sprintf(`{"petId":%d,"quantity":1e400}`, pet.ID), status: 400, code: "invalid_request", mentions: "quantity"},
		{name: "1e400 stock", method: "PUT", path: invPath, body: `{"quantity":1e400}`, status: 400, code: "invalid_request", mentions: "quantity"},
		{name: "minus zero id", method: "POST", path: "/pets", body: `{"name":"a","categoryId":-0}`, status: 400, code: "invalid_request", mentions: "categoryId"},
		{name: "5000-deep array as an unknown member", method: "POST", path: "/pets", body: fmt.Sprintf(`{"name":"a","categoryId":%d,"x":%s}`, cid, deepArray(5000)), status: 400, code: "invalid_request", mentions: "x"},
		{name: "5000-deep array as the body", method: "POST", path: "/pets", body: deepArray(5000), status: 400, code: "invalid_request", mentions: "body"},
		{name: "5000-deep array as the name", method: "POST", path: "/pets", body: fmt.Sprintf(`{"name":%s,"categoryId":%d}`, deepArray(5000), cid), status: 400, code: "invalid_request", mentions: "name"},
		{name: "5000-deep objects as the body", method: "PUT", path: invPath, body: deepObject(5000), status: 400, code: "invalid_request", mentions: "body"},
		{name: "30000-deep array (past the decoder's depth limit)", method: "POST", path: "/pets", body: deepArray(30000), status: 400, code: "invalid_request", mentions: "JSON"},
		{name: "invalid UTF-8 in a string", method: "POST", path: "/pets", body: fmt.Sprintf("{\"name\":\"a\xff\xfeb\",\"categoryId\":%d}", cid), status: 400, code: "invalid_request", mentions: "UTF-8"},
		{name: "overlong UTF-8 encoding of /", method: "POST", path: "/categories", body: "{\"name\":\"a\xc0\xafb\"}", status: 400, code: "invalid_request", mentions: "UTF-8"},
		{name: "invalid UTF-8 in a member name", method: "POST", path: "/pets", body: fmt.Sprintf("{\"na\xffme\":\"a\",\"categoryId\":%d}", cid), status: 400, code: "invalid_request", mentions: "body"},
		{name: "unpaired surrogate escape", method: "POST", path: "/pets", body: fmt.Sprintf(`{"name":"a\ud800b","categoryId":%d}`, cid), status: 400, code: "invalid_request", mentions: "UTF-8"},
		{name: "raw NUL in a string", method: "POST", path: "/pets", body: fmt.Sprintf("{\"name\":\"a\x00b\",\"categoryId\":%d}", cid), status: 400, code: "invalid_request", mentions: "JSON"},
		{name: "escaped NUL in a name is refused (PostgreSQL cannot keep it)", method: "POST", path: "/pets", body: fmt.Sprintf(`{"name":"a\u0000b","categoryId":%d}`, cid), status: 400, code: "invalid_request"},
		{name: "NUL byte after the JSON", method: "POST", path: "/pets", body: petBody + "\x00", status: 400, code: "invalid_request", mentions: "JSON"},
		{name: "BOM before the JSON", method: "POST", path: "/pets", body: "\ufeff" + petBody, status: 400, code: "invalid_request", mentions: "JSON"},
		{name: "trailing garbage", method: "POST", path: "/pets", body: petBody + " xyz", status: 400, code: "invalid_request", mentions: "body"},
		{name: "trailing whitespace is fine", method: "POST", path: "/pets", body: petBody + " \r\n\t ", status: 201, check: wantName("a")},
		{name: "two JSON values", method: "POST", path: "/pets", body: petBody + petBody, status: 400, code: "invalid_request", mentions: "body"},

		// Bodies of the wrong shape.
		{name: "empty body", method: "POST", path: "/pets", header: map[string]string{"Content-Type": "application/json"}, status: 400, code: "invalid_request", mentions: "body"},
		{name: "no body, no Content-Type", method: "POST", path: "/pets", status: 400, code: "invalid_request", mentions: "body"},
		{name: "array body", method: "POST", path: "/pets", body: `[]`, status: 400, code: "invalid_request", mentions: "body"},
		{name: "null body", method: "PUT", path: invPath, body: `null`, status: 400, code: "invalid_request", mentions: "body"},
		{name: "string body", method: "POST", path: "/categories", body: `"dogs"`, status: 400, code: "invalid_request", mentions: "body"},
		{name: "number body", method: "POST", path: "/store/orders", body: `42`, status: 400, code: "invalid_request", mentions: "body"},
		{name: "boolean body", method: "POST", path: "/pets", body: `true`, status: 400, code: "invalid_request", mentions: "body"},
		{name: "empty object", method: "POST", path: "/pets", body: `{}`, status: 400, code: "invalid_request", mentions: "name"},
		{name: "body on a GET", method: "GET", path: "/pets", body: petBody, status: 400, code: "invalid_request", mentions: "body"},
		{name: "body on a GET without Content-Type", method: "GET", path: petPath, body: "hello", noContentType: true, status: 400, code: "invalid_request", mentions: "body"},

		// Encodings and content types.
		{name: "gzip body", method: "POST", path: "/pets", body: gzipped(petBody), header: map[string]string{"Content-Encoding": "gzip"}, status: 415, code: "unsupported_media_type", mentions: "Content-Encoding"},
		{name: "Content-Encoding br on plain JSON", method: "PUT", path: invPath, body: `{"quantity":3}`, header: map[string]string{"Content-Encoding": "br"}, status: 415, code: "unsupported_media_type", mentions: "br"},
		{name: "Content-Encoding identity", method: "POST", path: "/pets", body: petBody, header: map[string]string{"Content-Encoding": "identity"}, status: 201},
		{name: "charset=utf-8 works", method: "POST", path: "/pets", body: newPet("charset"), header: map[string]string{"Content-Type": "application/json; charset=utf-8"}, status: 201, check: wantName("charset")},
		{name: "charset=UTF-8 without a space works", method: "POST", path: "/categories", body: `{"name":"cats"}`, header: map[string]string{"Content-Type": "application/json;charset=UTF-8"}, status: 201},
		{name: "media type in capitals works", method: "PUT", path: invPath, body: `{"quantity":3}`, header: map[string]string{"Content-Type": "APPLICATION/JSON"}, status: 200},
		{name: "charset=latin1 (RFC 8259: no effect, JSON is UTF-8)", method: "POST", path: "/pets", body: petBody, header: map[string]string{"Content-Type": "application/json; charset=latin1"}, status: 201},
		{name: "text/plain", method: "POST", path: "/pets", body: petBody, header: map[string]string{"Content-Type": "text/plain"}, status: 415, code: "unsupported_media_type", mentions: "application/json"},
		{name: "application/xml", method: "POST", path: "/categories", body: `<name>x</name>`, header: map[string]string{"Content-Type": "application/xml"}, status: 415, code: "unsupported_media_type", mentions: "application/xml"},
		{name: "multipart", method: "POST", path: "/pets", body: "--x\r\n\r\n--x--", header: map[string]string{"Content-Type": "multipart/form-data; boundary=x"}, status: 415, code: "unsupported_media_type", mentions: "multipart"},
		{name: "a JSON-like media type", method: "POST", path: "/pets", body: petBody, header: map[string]string{"Content-Type": "application/problem+json"}, status: 415, code: "unsupported_media_type", mentions: "application/json"},
		{name: "garbage Content-Type", method: "POST", path: "/pets", body: petBody, header: map[string]string{"Content-Type": ";;;"}, status: 415, code: "unsupported_media_type", mentions: "application/json"},
		{name: "body without Content-Type", method: "POST", path: "/pets", body: petBody, noContentType: true, status: 415, code: "unsupported_media_type", mentions: "Content-Type"},

		// Names are 1..100 characters: characters, not bytes.
		{name: "100 emoji (400 bytes) are accepted", method: "POST", path: "/pets", body: newPet(dogs100), status: 201, check: wantName(dogs100)},
		{name: "100 accented letters (200 bytes) are accepted", method: "POST", path: "/categories", body: fmt.Sprintf(`{"name":%q}`, accents100), status: 201, check: wantName(accents100)},
		{name: "100 code points with combining marks are accepted", method: "PUT", path: petPath, body: newPet(combining100), status: 200, check: wantName(combining100)},
		{name: "101 emoji are refused", method: "POST", path: "/pets", body: newPet(dogs100 + "🐶"), status: 400, code: "invalid_request", mentions: "name"},
		{name: "101 accented letters are refused", method: "POST", path: "/categories", body: fmt.Sprintf(`{"name":%q}`, accents100+"é"), status: 400, code: "invalid_request", mentions: "name"},
		{name: "description of 1000 umlauts is accepted", method: "POST", path: "/categories", body: fmt.Sprintf(`{"name":"u","description":%q}`, strings.Repeat("ü", 1000)), status: 201},

		// Negative and huge numbers.
		{name: "negative id in the path", method: "GET", path: "/store/orders/-1", status: 400, code: "invalid_request", mentions: "orderId"},
		{name: "negative id in the body", method: "POST", path: "/pets", body: `{"name":"a","categoryId":-1}`, status: 400, code: "invalid_request", mentions: "categoryId"},
		{name: "negative petId in an order", method: "POST", path: "/store/orders", body: `{"petId":-1}`, status: 400, code: "invalid_request", mentions: "petId"},
		{name: "negative id in the query", method: "GET", path: "/pets?categoryId=-5", status: 400, code: "invalid_request", mentions: "categoryId"},
		{name: "limit=1e400", method: "GET", path: "/pets?limit=1e400", status: 400, code: "invalid_request", mentions: "limit"},
		{name: "limit=1.5", method: "GET", path: "/store/orders?limit=1.5", status: 400, code: "invalid_request", mentions: "limit"},
		{name: "id over int64 in the query", method: "GET", path: "/store/orders?petId=99999999999999999999", status: 400, code: "invalid_request", mentions: "petId"},
		{name: "shipDate beyond year 9999 in UTC", method: "POST", path: "/store/orders", body: fmt.Sprintf(`{"petId":%d,"shipDate":"9999-12-31T23:59:59-23:59"}`, pet.ID), status: 400, code: "invalid_request", mentions: "shipDate"},
		{name: "shipDate before year 0000 in UTC", method: "POST", path: "/store/orders", body: fmt.Sprintf(`{"petId":%d,"shipDate":"0000-01-01T00:00:00+01:00"}`, pet.ID), status: 400, code: "invalid_request", mentions: "shipDate"},
		{name: "leap second shipDate", method: "POST", path: "/store/orders", body: fmt.Sprintf(`{"petId":%d,"shipDate":"2026-12-31T23:59:60Z"}`, pet.ID), status: 400, code: "invalid_request", mentions: "shipDate"},

		// Query strings and cursors.
		{name: "broken escape in the query", method: "GET", path: "/pets?limit=%zz", status: 400, code: "invalid_request", mentions: "query"},
		{name: "semicolon in the query", method: "GET", path: "/pets?limit=1;cursor=x", status: 400, code: "invalid_request", mentions: "semicolon"},
		{name: "more than 10000 query parameters", method: "GET", path: manyParams, status: 400, code: "invalid_request", mentions: "query"},
		{name: "NUL in the query", method: "GET", path: "/pets?status=%00", status: 400, code: "invalid_request", mentions: "status"},
		{name: "cursor of zero", method: "GET", path: "/pets?cursor=" + cursorFor("/pets", 0), status: 400, code: "invalid_request", mentions: "cursor"},
		{name: "cursor of a negative id", method: "GET", path: "/pets?cursor=" + cursorFor("/pets", 1<<63), status: 400, code: "invalid_request", mentions: "cursor"},
		{name: "cursor with padding", method: "GET", path: "/pets?cursor=" + cursorFor("/pets", 1) + "%3D", status: 400, code: "invalid_request", mentions: "cursor"},
		{name: "cursor of 10 KB", method: "GET", path: "/store/orders?cursor=" + strings.Repeat("A", 10<<10), status: 400, code: "invalid_request", mentions: "cursor"},
		{name: "cursor with invalid UTF-8", method: "GET", path: "/store/inventory?cursor=%FF%FE", status: 400, code: "invalid_request", mentions: "cursor"},
		{name: "cursor past the end", method: "GET", path: "/categories?cursor=" + cursorFor("/categories", 1<<62), status: 200, check: func(t *testing.T, r *response) {
			if strings.TrimSpace(string(r.body)) != "[]" {
				t.Errorf("body %s, want []", r.body)
			}
		}},

		// Paths.
		{name: "NUL in the path", method: "GET", path: "/pets/%00", status: 400, code: "invalid_request", mentions: "petId"},
		{name: "invalid UTF-8 in the path", method: "GET", path: "/pets/%FF%FE", status: 400, code: "invalid_request", mentions: "petId"},
		{name: "invalid UTF-8 in an unknown path", method: "GET", path: "/%FF", status: 404, code: "not_found"},
		{name: "encoded traversal", method: "GET", path: "/pets/%2e%2e/admin/project", status: 404, code: "not_found"},
		{name: "encoded traversal with encoded slashes", method: "GET", path: "/pets/..%2F..%2Fadmin%2Fproject", status: 400, code: "invalid_request", mentions: "petId"},
		{name: "encoded slash inside an id", method: "DELETE", path: "/pets/1%2F..", status: 400, code: "invalid_request", mentions: "petId"},
		// Decoded, the path is the admin API's: no token, no answer about it.
		{name: "encoded slash into the admin API", method: "GET", path: "/admin%2Fproject", status: 401, code: "unauthorized"},
		{name: "traversal to a file", method: "GET", path: "/%2e%2e/%2e%2e/etc/passwd", status: 404, code: "not_found"},
		{name: "double slash", method: "GET", path: "//pets", status: 404, code: "not_found"},
		{name: "20 KB id", method: "GET", path: "/pets/" + strings.Repeat("9", 20<<10), status: 400, code: "invalid_request", mentions: "petId"},
		{name: "20 KB unknown path", method: "GET", path: "/" + strings.Repeat("p", 20<<10), status: 404, code: "not_found"},
		{name: "20 KB query value", method: "GET", path: "/pets?x=" + strings.Repeat("q", 20<<10), status: 400, code: "invalid_request", mentions: `"x"`},

		// Methods.
		{name: "BREW", method: "BREW", path: "/pets", status: 405, code: "method_not_allowed", mentions: "BREW", check: wantHeader("Allow", "GET")},
		{name: "PROPFIND", method: "PROPFIND", path: petPath, status: 405, code: "method_not_allowed", mentions: "PROPFIND", check: wantHeader("Allow", "DELETE")},
		{name: "lower-case get", method: "get", path: "/pets", status: 405, code: "method_not_allowed", mentions: "get"},
		{name: "TRACE", method: "TRACE", path: "/categories", status: 405, code: "method_not_allowed", mentions: "TRACE"},
		{name: "HEAD on a list", method: "HEAD", path: "/pets", status: 200},
		{name: "HEAD on an item", method: "HEAD", path: petPath, status: 200},
		{name: "HEAD on an unknown path", method: "HEAD", path: "/nope", status: 404},
		{name: "OPTIONS on a route", method: "OPTIONS", path: "/pets", status: 204, check: wantHeader("Allow", "POST")},
		{name: "OPTIONS on an unknown path", method: "OPTIONS", path: "/nope", status: 404, code: "not_found"},
		{name: "method override header is ignored", method: "POST", path: "/pets", body: petBody, header: map[string]string{"X-HTTP-Method-Override": "DELETE"}, status: 201},

		// Headers.
		{name: "200 headers", method: "GET", path: "/pets", header: manyHeaders, status: 200},
		{name: "60 KB header value", method: "GET", path: "/categories", header: map[string]string{"X-Junk": strings.Repeat("h", 60<<10)}, status: 200},
		{name: "50 KB API key", method: "POST", path: "/pets", body: petBody, header: map[string]string{"X-API-Key": strings.Repeat("k", 50<<10)}, status: 401, code: "unauthorized", mentions: "X-API-Key"},
		{name: "admin token of junk", method: "GET", path: "/admin/project", header: map[string]string{"Authorization": "Bearer " + strings.Repeat("j", 10<<10)}, status: 401, code: "unauthorized"},
		{name: "hostile X-Request-Id is not echoed", method: "GET", path: "/pets", header: map[string]string{"X-Request-Id": "<script>alert(1)</script>"}, status: 200, check: func(t *testing.T, r *response) {
			if strings.ContainsAny(r.header.Get("X-Request-Id"), "<>()") {
				t.Errorf("X-Request-Id echoed: %q", r.header.Get("X-Request-Id"))
			}
		}},
		{name: "Host of another site", method: "GET", path: "/pets", header: map[string]string{"Host": "evil.example"}, status: 421, code: "unknown_host"},
		{name: "Host with junk around a port", method: "GET", path: "/pets", header: map[string]string{"Host": "x.invalid:99999"}, status: 421, code: "unknown_host"},
	}
	if len(cases) < 40 {
		t.Fatalf("only %d cases", len(cases))
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			if tc.method != "GET" && tc.method != "HEAD" {
				h.Set("X-API-Key", ts.apiKey)
			}
			for k, v := range tc.header {
				h.Set(k, v)
			}
			var r *response
			if tc.noContentType {
				var body io.Reader
				if tc.body != "" {
					body = strings.NewReader(tc.body)
				}
				r = ts.with(t).request(tc.method, tc.path, body, h)
			} else {
				r = ts.with(t).send(tc.method, tc.path, tc.body, h)
			}
			if r.status >= 500 {
				t.Fatalf("got %d, a server error: %s", r.status, r.body)
			}
			if r.status != tc.status {
				t.Fatalf("status %d, want %d; body: %.300s", r.status, tc.status, r.body)
			}
			if r.status >= 300 && tc.method != "HEAD" {
				var e struct{ Code, Message string }
				r.decode(&e)
				if tc.code != "" && e.Code != tc.code {
					t.Errorf("code %q, want %q; message %q", e.Code, tc.code, e.Message)
				}
				if !strings.Contains(e.Message, tc.mentions) {
					t.Errorf("message %q does not mention %q", e.Message, tc.mentions)
				}
			}
			if tc.method == "HEAD" && len(r.body) > 0 {
				t.Errorf("HEAD answered with a body: %.200s", r.body)
			}
			if tc.check != nil {
				tc.check(t, r)
			}
		})
	}

	// The pet the cases aimed at is intact (the override and traversal
	// cases did not delete it), and its stock is what it was set to.
	res := ts.do("GET", fmt.Sprintf("/store/inventory/%d", pet.ID), "").wantStatus(200)
	var inv store.InventoryItem
	res.decode(&inv)
	if inv.Quantity != 3 {
		t.Errorf("stock of pet %d is %d, want 3", pet.ID, inv.Quantity)
	}
}

// productionServer serves the same handler as ts with the http.Server
// settings of main.go (header limit and timeouts), which decide what
// net/http answers by itself before any handler runs.
func productionServer(t *testing.T, ts *testServer) string {
	t.Helper()
	s := httptest.NewUnstartedServer(ts.srv)
	s.Config = server.NewHTTPServer(ts.srv, nil, nil, server.DefaultHeaderTimeout)
	s.Start()
	t.Cleanup(s.Close)
	return s.Listener.Addr().String()
}

// rawExchange writes raw bytes to addr and reads one response.
func rawExchange(t *testing.T, addr, raw string) (*http.Response, []byte) {
	t.Helper()
	return exchange(t, addr, raw, false, 5*time.Second)
}

// exchange writes raw to addr, closes its write side when cut is set, and
// reads the one answer, all within the given time.
func exchange(t *testing.T, addr, raw string, cut bool, within time.Duration) (*http.Response, []byte) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(within))
	// Write concurrently: the server may answer (431, 413) and close before
	// it has read all of a large request.
	go func() {
		_, _ = io.WriteString(conn, raw)
		if cut {
			_ = conn.(*net.TCPConn).CloseWrite()
		}
	}()
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("reading the answer's body: %v", err)
	}
	return res, body
}

// TestHostileRawRequests sends what a Go client cannot: raw bytes over TCP,
// to a server configured as main.go configures it. Some of these never
// reach Echo: net/http answers them itself with a plain-text body. Those
// cases are marked netHTTP and pin that answer, so that a change shows;
// they are the documented exceptions to "every non-2xx is an Error body"
// (headers between 64 KiB and net/http's 68 KiB get the service's own 431
// Error).
func TestHostileRawRequests(t *testing.T) {
	ts := newTestServer(t)
	ts.do("POST", "/categories", `{"name":"dogs"}`).wantStatus(201)
	ts.do("POST", "/pets", `{"name":"Rex","categoryId":1}`).wantStatus(201)
	addr := productionServer(t, ts)
	big := strings.Repeat("v", 100<<10)
	const host = "Host: 127.0.0.1\r\n"

	cases := []struct {
		name    string
		raw     string
		status  int
		code    string
		netHTTP bool // net/http's own plain-text answer
	}{
		// Reach Echo: Error bodies.
		{name: "raw invalid UTF-8 in an id", raw: "GET /pets/\xff\xfe HTTP/1.1\r\n" + host + "\r\n", status: 400, code: "invalid_request"},
		{name: "raw invalid UTF-8 in a path", raw: "GET /\xff HTTP/1.1\r\n" + host + "\r\n", status: 404, code: "not_found"},
		{name: "raw traversal", raw: "GET /pets/../admin/project HTTP/1.1\r\n" + host + "\r\n", status: 404, code: "not_found"},
		{name: "absolute-form target for this server", raw: "GET http://" + addr + "/pets HTTP/1.1\r\nHost: " + addr + "\r\n\r\n", status: 200},
		{name: "absolute-form target for another host", raw: "GET http://evil.example/pets HTTP/1.1\r\nHost: evil.example\r\n\r\n", status: 421, code: "unknown_host"},
		{name: "absolute-form target overriding a served Host", raw: "GET http://evil.example/pets HTTP/1.1\r\n" + host + "\r\n", status: 421, code: "unknown_host"},
		{name: "asterisk target on GET", raw: "GET * HTTP/1.1\r\n" + host + "\r\n", status: 404, code: "not_found"},
		{name: "OPTIONS * (net/http answers 200 itself)", raw: "OPTIONS * HTTP/1.1\r\n" + host + "\r\n", status: 200, netHTTP: true},
		{name: "lower-case method", raw: "get /pets HTTP/1.1\r\n" + host + "\r\n", status: 405, code: "method_not_allowed"},
		{name: "CONNECT to a path", raw: "CONNECT /pets HTTP/1.1\r\n" + host + "\r\n", status: 405, code: "method_not_allowed"},
		{name: "both Content-Length and chunked", raw: "POST /categories HTTP/1.1\r\n" + host + "Content-Type: application/json\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", status: 401, code: "unauthorized"},
		{name: "obsolete line folding", raw: "GET /pets HTTP/1.1\r\n" + host + "X-A: a\r\n folded\r\n\r\n", status: 200},
		{name: "HTTP/1.0 with a Host", raw: "GET /pets HTTP/1.0\r\n" + host + "\r\n", status: 200},
		{name: "60 KB of headers within the limit", raw: "GET /pets HTTP/1.1\r\n" + host + "X-Big: " + strings.Repeat("v", 60<<10) + "\r\n\r\n", status: 200},

		// net/http answers these itself, before any handler: plain text.
		{name: "NUL in the path", raw: "GET /pets/\x00 HTTP/1.1\r\n" + host + "\r\n", status: 400, netHTTP: true},
		{name: "broken escape in the path", raw: "GET /pets/%zz HTTP/1.1\r\n" + host + "\r\n", status: 400, netHTTP: true},
		{name: "path without a slash", raw: "GET pets HTTP/1.1\r\n" + host + "\r\n", status: 400, netHTTP: true},
		{name: "method with a separator", raw: "GE(T /pets HTTP/1.1\r\n" + host + "\r\n", status: 400, netHTTP: true},
		{name: "garbage request line", raw: "GARBAGE\r\n\r\n", status: 400, netHTTP: true},
		{name: "Host with a space", raw: "GET /pets HTTP/1.1\r\nHost: a b\r\n\r\n", status: 400, netHTTP: true},
		{name: "Host with a control byte", raw: "GET /pets HTTP/1.1\r\nHost: \x01\r\n\r\n", status: 400, netHTTP: true},
		{name: "two Host headers", raw: "GET /pets HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", status: 400, netHTTP: true},
		{name: "HTTP/1.1 without Host", raw: "GET /pets HTTP/1.1\r\n\r\n", status: 400, netHTTP: true},
		{name: "header name with a space", raw: "GET /pets HTTP/1.1\r\n" + host + "Bad Header: x\r\n\r\n", status: 400, netHTTP: true},
		{name: "NUL in a header value", raw: "GET /pets HTTP/1.1\r\n" + host + "X-A: a\x00b\r\n\r\n", status: 400, netHTTP: true},
		{name: "two different Content-Lengths", raw: "POST /categories HTTP/1.1\r\n" + host + "Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello!", status: 400, netHTTP: true},
		{name: "negative Content-Length", raw: "POST /categories HTTP/1.1\r\n" + host + "Content-Length: -1\r\n\r\n", status: 400, netHTTP: true},
		{name: "unknown Transfer-Encoding", raw: "POST /categories HTTP/1.1\r\n" + host + "Transfer-Encoding: gzip\r\n\r\n", status: 501, netHTTP: true},
		{name: "HTTP/3.0 on this port", raw: "GET /pets HTTP/3.0\r\n" + host + "\r\n", status: 505, netHTTP: true},
		{name: "66 KB header value", raw: "GET /pets HTTP/1.1\r\n" + host + "X-Big: " + big[:66<<10] + "\r\n\r\n", status: 431, code: "headers_too_large"},
		{name: "66 KB URL", raw: "GET /pets?x=" + big[:66<<10] + " HTTP/1.1\r\n" + host + "\r\n", status: 431, code: "headers_too_large"},
		{name: "1320 headers", raw: "GET /pets HTTP/1.1\r\n" + host + strings.Repeat("X-Many: 0123456789012345678901234567890123456789\r\n", 1320) + "\r\n", status: 431, code: "headers_too_large"},
		{name: "100 KB header value (over net/http's own limit)", raw: "GET /pets HTTP/1.1\r\n" + host + "X-Big: " + big + "\r\n\r\n", status: 431, netHTTP: true},
		{name: "2 MiB header value (over net/http's own limit)", raw: "GET /pets HTTP/1.1\r\n" + host + "X-Big: " + strings.Repeat("v", 2<<20) + "\r\n\r\n", status: 431, netHTTP: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, body := rawExchange(t, addr, tc.raw)
			if res.StatusCode >= 500 && !tc.netHTTP {
				t.Fatalf("got %d, a server error: %s", res.StatusCode, body)
			}
			if res.StatusCode != tc.status {
				t.Fatalf("status %d, want %d; body: %.300s", res.StatusCode, tc.status, body)
			}
			if tc.netHTTP {
				// Pinned so that a change (such as a fix) shows here.
				if ct := res.Header.Get("Content-Type"); res.StatusCode >= 300 && !strings.HasPrefix(ct, "text/plain") {
					t.Errorf("net/http's own answer changed: Content-Type %q, body %q", ct, body)
				}
				t.Logf("net/http answers by itself, not an Error body: %d %q", res.StatusCode, body)
				return
			}
			if res.Header.Get("X-Request-Id") == "" {
				t.Error("no X-Request-Id: the answer did not come through Echo")
			}
			// Validate as the harness does: the request as the server parsed it.
			req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(tc.raw)))
			if err != nil {
				t.Fatalf("parsing the raw request: %v", err)
			}
			reqBody, _ := io.ReadAll(req.Body)
			r := &response{tb: t, status: res.StatusCode, header: res.Header, body: body}
			ts.with(t).validate(req, reqBody, r)
			if tc.code != "" {
				var e struct{ Code string }
				r.decode(&e)
				if e.Code != tc.code {
					t.Errorf("code %q, want %q", e.Code, tc.code)
				}
			}
		})
	}
}

// TestBodyErrorsAreNotCredentialErrors sends bodies that cannot be read
// whole (chunked past the limit, cut short, with broken chunk framing, too
// slow), each with a valid credential, over TCP to the server as main.go
// configures it. Such a body is judged as a body: 413, 400 or 408, never
// 401, which would send the client looking for a key that is fine.
func TestBodyErrorsAreNotCredentialErrors(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	ts.do("POST", "/categories", `{"name":"dogs"}`).wantStatus(201)
	addr := productionServer(t, ts)
	// A server whose read timeout is short enough to wait for: its only
	// client sends half a body and stops.
	slow := httptest.NewUnstartedServer(ts.srv)
	slow.Config = server.NewHTTPServer(ts.srv, nil, nil, server.DefaultHeaderTimeout)
	slow.Config.ReadTimeout = time.Second
	slow.Start()
	t.Cleanup(slow.Close)

	pet := `{"name":"Rex","categoryId":1}`
	big := `{"name":"` + strings.Repeat("x", 70<<10) + `","categoryId":1}`
	chunked := func(chunks ...string) string {
		var b strings.Builder
		for _, c := range chunks {
			fmt.Fprintf(&b, "%x\r\n%s\r\n", len(c), c)
		}
		return b.String() + "0\r\n\r\n"
	}
	apiKey := "X-API-Key: " + ts.apiKey
	admin := "Authorization: Bearer " + ts.admin
	for _, tc := range []struct {
		name, addr, method, path, credential string
		framing                              string // Content-Length or Transfer-Encoding header
		body                                 string
		// cut: the client stops sending after the body and closes its
		// write side (true), or keeps the connection open (false).
		cut  bool
		want int
	}{
		{"chunked, within the limit", addr, "POST", "/pets", apiKey, "Transfer-Encoding: chunked", chunked(pet[:10], pet[10:]), false, 201},
		{"chunked, past the limit", addr, "POST", "/pets", apiKey, "Transfer-Encoding: chunked", chunked(big[:40<<10], big[40<<10:]), false, 413},
		{"declared past the limit", addr, "POST", "/pets", apiKey, fmt.Sprintf("Content-Length: %d", len(big)), big, false, 413},
		{"admin, chunked past the limit", addr, "POST", "/admin/api-keys", admin, "Transfer-Encoding: chunked", chunked(big), false, 413},
		{"malformed chunk size", addr, "POST", "/pets", apiKey, "Transfer-Encoding: chunked", "zz\r\n" + pet + "\r\n0\r\n\r\n", false, 400},
		{"chunk longer than sent", addr, "POST", "/pets", apiKey, "Transfer-Encoding: chunked", "100\r\n" + pet, true, 400},
		{"shorter than its Content-Length", addr, "PUT", "/categories/1", apiKey, "Content-Length: 100", `{"name":"cats"}`, true, 400},
		{"admin, shorter than its Content-Length", addr, "PATCH", "/admin/project", admin, "Content-Length: 100", `{"plan":"pro"}`, true, 400},
		{"too slow", slow.Listener.Addr().String(), "POST", "/pets", apiKey, "Content-Length: 100", pet, false, 408},
		// Within the read timeout of main.go's server (30 s): the body's
		// own deadline, its grace and the bytes that came, ends it first.
		{"below the minimum rate", addr, "POST", "/pets", apiKey, "Content-Length: 100", pet, false, 408},
		{"no body taken, chunked past the limit", addr, "DELETE", "/pets/999", apiKey, "Transfer-Encoding: chunked", chunked(big[:40<<10], big[40<<10:]), false, 400},
		{"wrong key, readable body", addr, "POST", "/pets", "X-API-Key: psk_wrong", fmt.Sprintf("Content-Length: %d", len(pet)), pet, false, 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			head := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n%s\r\n%s\r\n\r\n", tc.method, tc.path, tc.credential, tc.framing)
			start := time.Now()
			res, got := sendBody(t, tc.addr, head, tc.body, tc.cut)
			if res.StatusCode != tc.want {
				t.Fatalf("status %d, want %d: %s", res.StatusCode, tc.want, got)
			}
			// The body's own deadline (its grace of 5 s and more for each
			// byte) never outlasts the server's read timeout of 1 s.
			if took := time.Since(start); tc.addr == slow.Listener.Addr().String() && took >= 4*time.Second {
				t.Errorf("the answer took %v: the body's deadline outlasted the server's read timeout", took)
			}
			if res.StatusCode >= 400 && tc.want != http.StatusUnauthorized && !res.Close {
				t.Errorf("a body that could not be used leaves the connection open")
			}
			req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(head)))
			if err != nil {
				t.Fatal(err)
			}
			req.Body = http.NoBody
			ts.with(t).validate(req, nil, &response{tb: t, status: res.StatusCode, header: res.Header, body: got})
		})
	}
}

// sendBody writes a request's head and body to addr, closes its write side
// when cut is set, and reads the one answer.
func sendBody(t *testing.T, addr, head, body string, cut bool) (*http.Response, []byte) {
	t.Helper()
	res, got := exchange(t, addr, head+body, cut, 20*time.Second)
	return res, bytes.TrimSpace(got)
}

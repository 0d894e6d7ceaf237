package handlers_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http/httpguts"

	"petstore/domains"
	"petstore/domains/dnscheck"
	"petstore/domains/domaintest"
	"petstore/handlers"
	"petstore/store"
)

// fuzzRequestTimeout is how long one fuzzed request may take; they take
// about a millisecond.
const fuzzRequestTimeout = 10 * time.Second

// validHost is a host name with an optional port, as a Location must have.
var validHost = regexp.MustCompile(`^[a-z0-9]([a-z0-9.-]*[a-z0-9])?(:[0-9]+)?$`)

// Credentials a fuzzed request carries.
const (
	authNone uint8 = iota
	authAPIKey
	authAdmin
	authWrongKey
	authModes
)

// FuzzRequest sends fuzzed requests (method, request target, Content-Type,
// credentials, one more header, body) through the whole Echo stack, in
// process, on a server holding some data. Requests are built as bytes and
// parsed by net/http as the server parses them; what net/http refuses by
// itself never reaches the handler (TestHostileRawRequests covers those).
// Whatever reaches it must get no 5xx, an Error body on every non-2xx and
// an answer that matches the spec.
//
//	go test -run XXX -fuzz FuzzRequest -fuzztime 60s ./handlers/
func FuzzRequest(f *testing.F) {
	// Custom domains with a platform domain, and DNS answered by nothing
	// (a closed loopback port), so that a verify fails fast and offline.
	var manager *domains.Manager
	ts := newTestServer(f, func(c *handlers.Config) {
		manager = domaintest.NewManager(f, domains.Config{
			Store:         c.Store.(store.Store),
			Platform:      dnscheck.Platform{Domain: "petstore.test", CNAMETarget: "cname.petstore.test"},
			Checker:       &dnscheck.Checker{Resolvers: []string{"127.0.0.1:9"}, Timeout: 100 * time.Millisecond},
			AllowTestTLDs: true,
		})
		c.Domains = manager
	})
	ts.adminDo("PATCH", "/admin/project", `{"plan":"pro"}`).wantStatus(200)
	ts.adminDo("POST", "/admin/domains", `{"name":"shop.example.com"}`).wantStatus(201)
	ts.adminDo("POST", "/admin/domains", `{"name":"old.example.com"}`).wantStatus(201)
	ts.adminDo("POST", "/admin/domains", `{"name":"pending.example.com"}`).wantStatus(201)
	for _, name := range []string{"shop.example.com", "old.example.com"} {
		if _, err := ts.db.UpdateDomain(context.Background(), name, func(d *store.Domain) error {
			now := time.Now().UTC()
			d.State, d.VerifiedAt, d.NextCheckAt = store.DomainVerified, &now, nil
			return nil
		}); err != nil {
			f.Fatal(err)
		}
	}
	if err := manager.Refresh(context.Background()); err != nil {
		f.Fatal(err)
	}
	ts.adminDo("PUT", "/admin/settings", `{"domains":{"primary":"shop.example.com","redirects":[{"from":"old.example.com","to":"shop.example.com","status":308}]}}`).wantStatus(200)
	ts.do("POST", "/categories", `{"name":"dogs"}`).wantStatus(201)
	ts.do("POST", "/pets", `{"name":"Rex","categoryId":1}`).wantStatus(201)
	ts.do("POST", "/pets", `{"name":"Tom","categoryId":1,"status":"sold"}`).wantStatus(201)
	ts.do("PUT", "/store/inventory/1", `{"quantity":1000000}`).wantStatus(200)
	ts.do("POST", "/store/orders", `{"petId":1,"quantity":2}`).wantStatus(201)
	ts.do("POST", "/store/orders", `{"petId":1,"complete":true}`).wantStatus(201)
	pub, _ := specs(f)
	codes := pub.doc.Components.Schemas["Error"].Value.Properties["code"].Value.Enum

	for _, s := range fuzzSeeds {
		f.Add(s.method, s.target, s.contentType, s.auth, s.header, []byte(s.body))
	}
	// The corpus of the body scanner's fuzz test, from when the service had
	// a scanner of its own: each body operation's example and awkward
	// bodies, with a valid credential (TestBodiesFollowTheValidator replays
	// them all against kin-openapi's verdicts).
	_, admin := specs(f)
	for _, bo := range bodyOperations(f) {
		auth := authAPIKey
		if bo.doc == admin {
			auth = authAdmin
		}
		f.Add(bo.method, bo.path, "application/json", auth, "", exampleBody(f, bo.op))
		for _, b := range awkwardBodies(f, bo.op)[:40] {
			f.Add(bo.method, bo.path, "application/json", auth, "", b)
		}
	}
	f.Fuzz(func(t *testing.T, method, target, contentType string, auth uint8, header string, body []byte) {
		raw, ok := rawRequest(ts, method, target, contentType, auth, header, body)
		if !ok {
			return
		}
		// A hung request fails too: the panic crashes the worker, and the
		// fuzzer keeps the input.
		watchdog := time.AfterFunc(fuzzRequestTimeout, func() {
			stacks := make([]byte, 1<<20)
			stacks = stacks[:runtime.Stack(stacks, true)]
			panic(fmt.Sprintf("%q %q took over %s:\n%s", method, target, fuzzRequestTimeout, stacks))
		})
		defer watchdog.Stop()
		req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(raw)))
		if err != nil {
			return // net/http's own 400, before any handler
		}
		req.RemoteAddr = "127.0.0.1:40000"
		rec := httptest.NewRecorder()
		ts.srv.ServeHTTP(rec, req)

		res := rec.Result()
		got, _ := io.ReadAll(res.Body)
		where := fmt.Sprintf("%q %q (Content-Type %q, auth %d, header %q, body %q)", method, target, contentType, auth, header, body)
		if res.StatusCode >= 500 {
			t.Fatalf("%s -> %d: %s", where, res.StatusCode, got)
		}
		if res.Header.Get("X-Request-Id") == "" {
			t.Errorf("%s -> %d: no X-Request-Id", where, res.StatusCode)
		}
		if res.StatusCode >= 200 && res.StatusCode < 300 {
			// Successes are checked against the spec below.
		} else if res.StatusCode/100 == 3 {
			// A customer domain's redirect (PRODUCT 4): no body, and a
			// Location on HTTPS with the same path and query. The one other
			// redirect is the dashboard's own, to its URL with the slash.
			loc := res.Header.Get("Location")
			dashboard := req.URL.Path == "/dashboard" && loc == "/dashboard/"
			if u, err := url.Parse(loc); !dashboard && (err != nil || u.Scheme != "https" || !validHost.MatchString(u.Host) || u.Path != "" && !strings.HasPrefix(u.Path, "/")) {
				t.Fatalf("%s -> %d: bad Location %q", where, res.StatusCode, loc)
			}
			if len(got) > 0 {
				t.Fatalf("%s -> %d: a redirect with a body: %q", where, res.StatusCode, got)
			}
		} else if req.Method == http.MethodHead {
			if len(got) > 0 {
				t.Errorf("%s -> %d: HEAD answered with a body: %q", where, res.StatusCode, got)
			}
		} else {
			checkFuzzedError(t, where, res, got, codes)
		}
		// Against the spec, as the harness validates every answer, except
		// what the host routing answers before any operation (redirects,
		// 421, the admin API asked for on a customer domain).
		route := manager.Route(req.Host)
		hostLevel := res.StatusCode == http.StatusMisdirectedRequest || res.StatusCode/100 == 3 ||
			route.Decision == domains.Redirect ||
			route.Decision == domains.ServePublic && (strings.HasPrefix(req.URL.Path, "/admin") || strings.HasPrefix(req.URL.Path, "/dashboard"))
		if hostLevel {
			return
		}
		if _, err := matchSpec(req, body, res.StatusCode, res.Header, got); err != nil {
			t.Fatalf("%s -> %d does not match the spec: %v\nbody: %s", where, res.StatusCode, err, got)
		}
	})
}

// checkFuzzedError holds a non-2xx answer to the Error contract.
func checkFuzzedError(t *testing.T, where string, res *http.Response, got []byte, codes []any) {
	t.Helper()
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("%s -> %d: Content-Type %q, body %q", where, res.StatusCode, ct, got)
	}
	var e struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Status  int    `json:"status"`
	}
	dec := json.NewDecoder(bytes.NewReader(got))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		t.Fatalf("%s -> %d: not an Error body (%v): %q", where, res.StatusCode, err, got)
	}
	if e.Status != res.StatusCode || e.Code == "" || e.Message == "" || !slices.Contains(codes, any(e.Code)) {
		t.Fatalf("%s -> %d: bad Error body %q", where, res.StatusCode, got)
	}
}

// rawRequest builds the bytes of an HTTP/1.1 request. It reports false for
// inputs that would only test this function: header injection through the
// Content-Type or extra header, and framing headers, which it sets itself.
func rawRequest(ts *testServer, method, target, contentType string, auth uint8, header string, body []byte) ([]byte, bool) {
	if strings.ContainsAny(method+target+contentType+header, "\r\n") {
		return nil, false
	}
	var b bytes.Buffer
	host := "127.0.0.1"
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\n", method, target)
	if contentType != "" {
		fmt.Fprintf(&b, "Content-Type: %s\r\n", contentType)
	}
	switch auth % authModes {
	case authAPIKey:
		fmt.Fprintf(&b, "X-API-Key: %s\r\n", ts.apiKey)
	case authAdmin:
		fmt.Fprintf(&b, "Authorization: Bearer %s\r\n", ts.admin)
	case authWrongKey:
		b.WriteString("X-API-Key: psk_wrong\r\nAuthorization: Bearer wrong\r\n")
	}
	if header != "" {
		name, value, _ := strings.Cut(header, ":")
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "host": // replaces the Host above
			value = strings.TrimSpace(value)
			if !httpguts.ValidHostHeader(value) {
				return nil, false // net/http's own 400
			}
			host = value
		case "content-length", "transfer-encoding", "connection":
			return nil, false
		default:
			fmt.Fprintf(&b, "%s\r\n", header)
		}
	}
	if len(body) > 0 {
		fmt.Fprintf(&b, "Content-Length: %d\r\n", len(body))
	}
	fmt.Fprintf(&b, "Host: %s\r\n\r\n", host)
	b.Write(body)
	return b.Bytes(), true
}

type fuzzSeed struct {
	method, target, contentType string
	auth                        uint8
	header, body                string
}

// fuzzSeeds start the fuzzer on every route family with valid and broken
// requests; testdata/fuzz/FuzzRequest holds more, and the regressions.
var fuzzSeeds = []fuzzSeed{
	{"GET", "/pets", "", authNone, "", ""},
	{"GET", "/pets?limit=1&status=available&categoryId=1", "", authNone, "", ""},
	{"GET", "/pets?cursor=AAAAAAAAAAE&limit=100", "", authNone, "", ""},
	{"GET", "/pets/1", "", authNone, "", ""},
	{"GET", "/pets/abc", "", authNone, "", ""},
	{"POST", "/pets", "application/json", authAPIKey, "", `{"name":"Rex","categoryId":1,"status":"pending"}`},
	{"POST", "/pets", "application/json; charset=utf-8", authAPIKey, "", `{"name":"a","name":"b","categoryId":1}`},
	{"POST", "/pets", "application/json", authWrongKey, "", `{"name":"Rex","categoryId":1}`},
	{"PUT", "/pets/2", "application/json", authAPIKey, "", `{"name":"Tom","categoryId":1,"status":"sold"}`},
	{"DELETE", "/pets/999", "", authAPIKey, "", ""},
	{"GET", "/categories", "", authNone, "", ""},
	{"POST", "/categories", "application/json", authAPIKey, "", `{"name":"cats","description":"Independent"}`},
	{"PUT", "/categories/1", "application/json", authAPIKey, "", `{"name":"dogs"}`},
	{"GET", "/store/orders?petId=1&complete=false", "", authNone, "", ""},
	{"POST", "/store/orders", "application/json", authAPIKey, "", `{"petId":1,"quantity":1,"shipDate":"2026-12-24T10:00:00Z"}`},
	{"PUT", "/store/orders/1", "application/json", authAPIKey, "", `{"complete":true,"shipDate":"2026-12-24T10:00:00+02:00"}`},
	{"DELETE", "/store/orders/1", "", authAPIKey, "", ""},
	{"GET", "/store/inventory?status=available", "", authNone, "", ""},
	{"PUT", "/store/inventory/1", "application/json", authAPIKey, "", `{"quantity":1e400}`},
	{"GET", "/admin/project", "", authAdmin, "", ""},
	{"PATCH", "/admin/project", "application/json", authAdmin, "", `{"plan":"pro"}`},
	{"GET", "/admin/api-keys", "", authAdmin, "", ""},
	{"POST", "/admin/api-keys", "application/json", authAdmin, "", `{"name":"ci"}`},
	{"GET", "/openapi.json", "", authNone, "", ""},
	{"GET", "/healthz", "", authNone, "", ""},
	{"HEAD", "/pets", "", authNone, "", ""},
	{"OPTIONS", "/store/orders", "", authNone, "", ""},
	{"BREW", "/pets", "", authNone, "", ""},
	{"POST", "/pets", "application/json", authAPIKey, "Content-Encoding: gzip", "\x1f\x8b\x08\x00"},
	{"GET", "/pets?limit=%zz", "", authNone, "X-Request-Id: <x>", ""},
	{"GET", "http://evil.example/pets/%2e%2e/admin", "", authNone, "", ""},
	{"POST", "/store/orders", "application/json", authAPIKey, "", "{\"petId\":1,\"shipDate\":\"2026-01-01T00:00:00Z\",\"x\":\"\xff\"}"},
	{"GET", "/pets", "", authNone, "Host: shop.example.com", ""},
	{"GET", "/admin/project", "", authAdmin, "Host: shop.example.com:443", ""},
	{"HEAD", "/pets?x=1", "", authNone, "Host: old.example.com", ""},
	{"GET", "/", "", authNone, "Host: pending.example.com", ""},
	{"GET", "/dashboard/", "", authAdmin, "Host: localhost:8080", ""},
	{"GET", "/pets", "", authNone, "Host: [::1]:80", ""},
	{"GET", "/healthz", "", authNone, "Host: stranger.example", ""},
	{"POST", "/admin/domains", "application/json", authAdmin, "", `{"name":"Bücher.example"}`},
	{"POST", "/admin/domains/pending.example.com/verify", "", authAdmin, "", ""},
	{"GET", "/admin/domains/shop.example.com", "", authAdmin, "", ""},
	{"DELETE", "/admin/domains/nope.example.com", "", authAdmin, "", ""},
	{"PUT", "/admin/settings", "application/json", authAdmin, "", `{"domains":{"redirects":[{"from":"shop.example.com","to":"old.example.com"},{"from":"old.example.com","to":"shop.example.com"}]}}`},
}

package handlers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"petstore/domains"
	"petstore/domains/dnscheck"
	"petstore/domains/domaintest"
	"petstore/handlers"
	"petstore/metrics"
	"petstore/store"
	"petstore/store/boltstore"
	"petstore/store/postgres"
	"petstore/store/postgres/pgtest"
)

// specDoc is a parsed OpenAPI document with a router, as a client of the
// API would use it: the tests route every request through it independently
// of the server, so the server's routing is checked too.
type specDoc struct {
	doc    *openapi3.T
	router routers.Router
}

var (
	loadSpecsOnce sync.Once
	publicSpec    []byte
	publicDoc     *specDoc
	adminDoc      *specDoc
	loadSpecsErr  error
)

// loadSpecDoc parses a document and builds the router the harness checks
// responses with.
func loadSpecDoc(data []byte) (*specDoc, error) {
	doc, err := openapi3.NewLoader().LoadFromData(data)
	if err != nil {
		return nil, err
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, err
	}
	r, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, err
	}
	return &specDoc{doc: doc, router: r}, nil
}

// specs loads ../openapi.yaml (the file main embeds) and the admin document.
func specs(tb testing.TB) (pub, admin *specDoc) {
	loadSpecsOnce.Do(func() {
		if publicSpec, loadSpecsErr = os.ReadFile(filepath.Join("..", "openapi.yaml")); loadSpecsErr != nil {
			return
		}
		if publicDoc, loadSpecsErr = loadSpecDoc(publicSpec); loadSpecsErr != nil {
			return
		}
		var adminSpec []byte
		if adminSpec, loadSpecsErr = os.ReadFile("openapi-admin.yaml"); loadSpecsErr != nil {
			return
		}
		adminDoc, loadSpecsErr = loadSpecDoc(adminSpec)
	})
	if loadSpecsErr != nil {
		if tb == nil {
			panic(loadSpecsErr)
		}
		tb.Fatalf("loading the OpenAPI documents: %v", loadSpecsErr)
	}
	return publicDoc, adminDoc
}

// testServer is the real server on a loopback port with a fresh store, an
// admin token and an API key, and a record of the operations that tests
// exercised.
type testServer struct {
	tb     testing.TB
	db     *boltstore.DB
	srv    *handlers.Server
	http   *httptest.Server
	admin  string // admin token
	apiKey string

	// hostLevel marks requests answered by the host routing before any
	// operation (a customer domain asking for the admin API): only their
	// Error body is checked.
	hostLevel bool
}

// beforeOperations returns the same server for requests that the host
// routing answers before any operation.
func (ts *testServer) beforeOperations() *testServer {
	c := *ts
	c.hostLevel = true
	return &c
}

// with returns the same server reporting to t, for use in subtests.
func (ts *testServer) with(t testing.TB) *testServer {
	c := *ts
	c.tb = t
	return &c
}

type serverOption func(*handlers.Config)

// withDomains gives the server a domains manager made from cfg on the
// server's store, closed when the test ends.
func withDomains(tb testing.TB, cfg domains.Config) serverOption {
	return func(c *handlers.Config) {
		cfg.Store = c.Store.(store.Store)
		c.Domains = domaintest.NewManager(tb, cfg)
	}
}

// serverConfig is what every test server needs on db: the spec, a metrics
// registry of its own, and, unless an option gives one, a domains manager
// with a CNAME target, so that domains can be added, and no DNS (a closed
// loopback port), so that a verify fails fast and offline.
func serverConfig(tb testing.TB, db store.Store, opts ...serverOption) handlers.Config {
	tb.Helper()
	specs(tb)
	cfg := handlers.Config{Store: db, Spec: publicSpec, Metrics: metrics.New()}
	// Webhook URLs' names are looked up offline too: the system's resolver
	// may be unreachable and take its whole timeout to say so.
	cfg.WebhookPolicy.Resolver = offlineResolver
	// What the store is beyond handlers.Store, as main says it.
	switch db := db.(type) {
	case *boltstore.DB:
		cfg.File = db
	case *postgres.DB:
		cfg.Shared = db
	}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.Prepared == nil && bytes.Equal(cfg.Spec, publicSpec) {
		cfg.Prepared = sharedPrepared(tb)
	}
	if cfg.Domains == nil {
		cfg.Domains = domaintest.NewManager(tb, domains.Config{
			Store:         db,
			Platform:      dnscheck.Platform{CNAMETarget: "cname.petstore.test"},
			Checker:       &dnscheck.Checker{Resolvers: []string{"127.0.0.1:9"}, Timeout: 100 * time.Millisecond},
			AllowTestTLDs: true,
		})
	}
	return cfg
}

// offlineResolver asks a closed loopback port, so that every name fails to
// resolve at once, as a name under .example does where DNS answers.
var offlineResolver = &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, network, "127.0.0.1:9")
}}

// prepared is handlers.Prepare(publicSpec), made once for every server of
// the tests that serves that document: parsing both documents and
// rendering the site is most of what New costs, and a Prepared is made to
// be handed to New (main prepares it before its store is open).
var prepared struct {
	once sync.Once
	p    *handlers.Prepared
	err  error
}

func sharedPrepared(tb testing.TB) *handlers.Prepared {
	tb.Helper()
	prepared.once.Do(func() { prepared.p, prepared.err = handlers.Prepare(publicSpec) })
	if prepared.err != nil {
		tb.Fatal(prepared.err)
	}
	return prepared.p
}

func newTestServer(tb testing.TB, opts ...serverOption) *testServer {
	tb.Helper()
	return startTestServer(tb, handlers.New, opts...)
}

// startTestServer is newTestServer with the server built by build.
func startTestServer(tb testing.TB, build func(handlers.Config) (*handlers.Server, error), opts ...serverOption) *testServer {
	tb.Helper()
	db := domaintest.OpenStore(tb)
	if _, err := db.EnsureAdminToken(context.Background(), domaintest.AdminToken); err != nil {
		tb.Fatal(err)
	}
	srv, err := build(serverConfig(tb, db, opts...))
	if err != nil {
		tb.Fatal(err)
	}
	ts := &testServer{tb: tb, db: db, srv: srv, admin: domaintest.AdminToken}
	ts.http = httptest.NewServer(srv)
	tb.Cleanup(ts.http.Close)
	if err := srv.RecordDeploy(context.Background()); err != nil {
		tb.Fatal(err)
	}
	ts.useNewAPIKey()
	return ts
}

// useNewAPIKey makes the API requests of ts carry a key created now.
func (ts *testServer) useNewAPIKey() {
	ts.tb.Helper()
	var key struct{ Secret string }
	ts.adminDo(http.MethodPost, "/admin/api-keys", `{"name":"tests"}`).wantStatus(http.StatusCreated).decode(&key)
	ts.apiKey = key.Secret
}

// noRedirects is a client that shows redirects instead of following them.
var noRedirects = &http.Client{
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	Timeout:       30 * time.Second,
}

// response is an answer that was already validated against the spec.
type response struct {
	tb     testing.TB
	status int
	header http.Header
	body   []byte
}

// request sends a request and validates the answer against the OpenAPI
// document that describes the route, or, for any non-2xx answer outside
// the documents, against the Error schema.
func (ts *testServer) request(method, path string, body io.Reader, header http.Header) *response {
	ts.tb.Helper()
	req, err := http.NewRequest(method, ts.http.URL+path, body)
	if err != nil {
		ts.tb.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if h := header.Get("Host"); h != "" {
		req.Host = h
	}
	var reqBody []byte
	if req.GetBody != nil {
		rc, _ := req.GetBody()
		reqBody, _ = io.ReadAll(rc)
	}
	res, err := noRedirects.Do(req)
	if err != nil {
		ts.tb.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		ts.tb.Fatal(err)
	}
	r := &response{tb: ts.tb, status: res.StatusCode, header: res.Header, body: data}
	ts.validate(req, reqBody, r)
	return r
}

func (ts *testServer) validate(req *http.Request, reqBody []byte, r *response) {
	ts.tb.Helper()
	if r.header.Get("X-Request-Id") == "" {
		ts.tb.Errorf("%s %s: no X-Request-Id", req.Method, req.URL.Path)
	}
	if r.status >= 400 && req.Method != http.MethodHead {
		checkErrorBody(ts.tb, req, r)
	}
	// Redirects, 408, 421 and 431 are decided from the request's envelope
	// before any operation, so no operation documents them; their Error
	// body was checked above.
	if ts.hostLevel || r.status == http.StatusMisdirectedRequest || r.status == http.StatusRequestHeaderFieldsTooLarge ||
		r.status == http.StatusRequestTimeout ||
		r.status >= 300 && r.status < 400 {
		return
	}
	specs(ts.tb)
	opID, err := matchSpec(req, reqBody, r.status, r.header, r.body)
	if err != nil {
		ts.tb.Errorf("%s %s -> %d does not match the spec: %v\nbody: %s", req.Method, req.URL, r.status, err, r.body)
		return
	}
	if opID != "" {
		exercisedMu.Lock()
		exercised[opID] = true
		exercisedMu.Unlock()
	}
}

// matchSpec validates an answer against its operation in whichever OpenAPI
// document routes the request, and returns the operation's id ("" when
// neither does: then the Error check is all there is). The documents must
// be loaded (specs).
func matchSpec(req *http.Request, reqBody []byte, status int, header http.Header, body []byte) (string, error) {
	doc := publicDoc
	if strings.HasPrefix(req.URL.Path, "/admin/") || req.URL.Path == "/metrics" {
		doc = adminDoc
	}
	route, pathParams, err := doc.router.FindRoute(req)
	if err != nil {
		return "", nil
	}
	req.Body = io.NopCloser(bytes.NewReader(reqBody))
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request: req, PathParams: pathParams, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
		},
		Status:  status,
		Header:  header,
		Options: &openapi3filter.Options{IncludeResponseStatus: true},
	}
	in.SetBodyBytes(body)
	return route.Operation.OperationID, openapi3filter.ValidateResponse(context.Background(), in)
}

// exercised records, across all tests of the package, the operations whose
// answers were validated against the spec.
var (
	exercisedMu sync.Mutex
	exercised   = map[string]bool{}
)

// TestMain fails the package when a full run leaves an operation of either
// document unexercised: a new operation cannot arrive without a test.
func TestMain(m *testing.M) {
	flag.Parse()
	// The parallel tests wait (on timeouts, stopped databases, slow
	// clients) far more than they compute.
	domaintest.WaitingParallel(8)
	generated.startEarly()
	code := m.Run()
	generated.stop()
	pgtest.Stop()
	if f := flag.Lookup("test.run"); code != 0 || f == nil || f.Value.String() != "" || testing.Short() {
		os.Exit(code)
	}
	pub, admin := specs(nil)
	var missed []string
	for _, d := range []*specDoc{pub, admin} {
		for _, item := range d.doc.Paths.Map() {
			for _, op := range item.Operations() {
				if !exercised[op.OperationID] {
					missed = append(missed, op.OperationID)
				}
			}
		}
	}
	if len(missed) > 0 {
		sort.Strings(missed)
		fmt.Fprintf(os.Stderr, "FAIL: operations never exercised by any test: %v\n", missed)
		code = 1
	}
	os.Exit(code)
}

// checkErrorBody holds every non-2xx answer to the Error contract: JSON,
// the three fields, status equal to the HTTP status, a documented code.
func checkErrorBody(tb testing.TB, req *http.Request, r *response) {
	tb.Helper()
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		tb.Errorf("%s %s -> %d: Content-Type %q, want application/json", req.Method, req.URL.Path, r.status, ct)
	}
	var e handlers.Error
	dec := json.NewDecoder(bytes.NewReader(r.body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		tb.Errorf("%s %s -> %d: body is not an Error: %v: %s", req.Method, req.URL.Path, r.status, err, r.body)
		return
	}
	if e.Status != r.status || e.Code == "" || e.Message == "" {
		tb.Errorf("%s %s -> %d: bad Error body %+v", req.Method, req.URL.Path, r.status, e)
	}
	doc, _ := specs(tb)
	if p := req.URL.Path; strings.HasPrefix(p, "/admin/") || p == "/metrics" {
		_, doc = specs(tb)
	}
	codes := doc.doc.Components.Schemas["Error"].Value.Properties["code"].Value.Enum
	if !slices.Contains(codes, any(e.Code)) {
		tb.Errorf("%s %s -> %d: code %q is not in the Error schema's enum of its document", req.Method, req.URL.Path, r.status, e.Code)
	}
}

// orderedQuantity adds up the quantities of every order of a pet, through
// every page.
func orderedQuantity(t testing.TB, db store.Store, petID int64) int {
	t.Helper()
	total := 0
	for f := (store.OrderFilter{PetID: petID, Page: store.Page{Limit: store.MaxPageSize}}); ; {
		orders, next, err := db.ListOrders(context.Background(), f)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range orders {
			total += o.Quantity
		}
		if next == 0 {
			return total
		}
		f.After = next
	}
}

// newServerWithRex is newTestServer with addRex's category and pet in its
// store: the set-up of the tests of one pet.
func newServerWithRex(tb testing.TB, stock int) (*testServer, store.Category, store.Pet) {
	tb.Helper()
	ts := newTestServer(tb)
	cat, pet := ts.addRex(stock)
	return ts, cat, pet
}

// addRex adds the category "dogs" and the pet Rex in it, with stock in the
// inventory when stock is above 0: the data most tests start from.
func (ts *testServer) addRex(stock int) (store.Category, store.Pet) {
	var cat store.Category
	ts.do("POST", "/categories", `{"name":"dogs"}`).wantStatus(201).decode(&cat)
	var pet store.Pet
	ts.do("POST", "/pets", fmt.Sprintf(`{"name":"Rex","categoryId":%d}`, cat.ID)).wantStatus(201).decode(&pet)
	if stock > 0 {
		ts.do("PUT", fmt.Sprintf("/store/inventory/%d", pet.ID), fmt.Sprintf(`{"quantity":%d}`, stock)).wantStatus(200)
	}
	return cat, pet
}

// do sends a public API request; writes carry the API key.
func (ts *testServer) do(method, path, body string) *response {
	ts.tb.Helper()
	h := http.Header{}
	if method != http.MethodGet && method != http.MethodHead {
		h.Set("X-API-Key", ts.apiKey)
	}
	return ts.send(method, path, body, h)
}

// adminDo sends an admin API request with the admin token.
func (ts *testServer) adminDo(method, path, body string) *response {
	ts.tb.Helper()
	h := http.Header{"Authorization": {"Bearer " + ts.admin}}
	return ts.send(method, path, body, h)
}

func (ts *testServer) send(method, path, body string, h http.Header) *response {
	ts.tb.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
		if h.Get("Content-Type") == "" {
			h.Set("Content-Type", "application/json")
		}
	}
	return ts.request(method, path, rd, h)
}

func (r *response) wantStatus(want int) *response {
	r.tb.Helper()
	if r.status != want {
		r.tb.Fatalf("status %d, want %d; body: %s", r.status, want, r.body)
	}
	return r
}

// wantError checks status and code of an Error answer.
func (r *response) wantError(status int, code string) *response {
	r.tb.Helper()
	r.wantStatus(status)
	var e handlers.Error
	r.decode(&e)
	if e.Code != code {
		r.tb.Fatalf("code %q, want %q; body: %s", e.Code, code, r.body)
	}
	return r
}

func (r *response) decode(v any) {
	r.tb.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		r.tb.Fatalf("decoding %s: %v", r.body, err)
	}
}

func (r *response) message() string {
	var e handlers.Error
	_ = json.Unmarshal(r.body, &e)
	return e.Message
}

// withNow sets the server's clock.
func withNow(t time.Time) serverOption {
	return func(c *handlers.Config) { c.Now = func() time.Time { return t } }
}

// verifiedDomain attaches a domain (on plan pro) and marks it verified in
// the store, without DNS: for tests of what a verified domain is served.
func (ts *testServer) verifiedDomain(name string) {
	ts.tb.Helper()
	ctx := context.Background()
	ts.adminDo("PATCH", "/admin/project", `{"plan":"pro"}`).wantStatus(200)
	ts.adminDo("POST", "/admin/domains", `{"name":"`+name+`"}`).wantStatus(201)
	if _, err := ts.db.UpdateDomain(ctx, name, func(d *store.Domain) error { d.State = store.DomainVerified; return nil }); err != nil {
		ts.tb.Fatal(err)
	}
	if err := ts.srv.RefreshDomains(ctx); err != nil {
		ts.tb.Fatal(err)
	}
}

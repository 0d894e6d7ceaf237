package handlers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"petstore/buildinfo"
	"petstore/store"
)

// TestRoutesMatchSpec fails when a route exists that no OpenAPI document
// describes, or a documented operation has no route.
func TestRoutesMatchSpec(t *testing.T) {
	ts := newTestServer(t)
	pub, admin := specs(t)
	// Routes outside the API documents, on purpose: the documents themselves,
	// the probes and the site.
	outside := []string{"GET /openapi.yaml", "GET /openapi.json", "GET /admin/openapi.yaml", "GET /admin/openapi.json", "GET /healthz", "GET /readyz", "GET /", "GET /favicon.ico", "GET /dashboard", "GET /dashboard/"}

	documented := map[string]bool{}
	for _, d := range []*specDoc{pub, admin} {
		for path, item := range d.doc.Paths.Map() {
			for method := range item.Operations() {
				documented[method+" "+echoStyle(path)] = true
			}
		}
	}
	registered := map[string]bool{}
	for _, r := range ts.srv.Routes() {
		if strings.HasSuffix(r, "/*") { // Echo's own catch-alls for 404/405
			continue
		}
		registered[r] = true
		if twin, ok := strings.CutPrefix(r, "HEAD "); ok {
			r = "GET " + twin // HEAD is served wherever GET is
		}
		if !documented[r] && !slices.Contains(outside, r) {
			t.Errorf("route %s is in no OpenAPI document", r)
		}
	}
	for op := range documented {
		if !registered[op] {
			t.Errorf("operation %s has no route", op)
		}
	}
	// The README promises HEAD wherever GET is answered.
	for r := range registered {
		if path, ok := strings.CutPrefix(r, "GET "); ok && !registered["HEAD "+path] {
			t.Errorf("GET %s has no HEAD twin", path)
		}
	}
}

var templateParam = regexp.MustCompile(`\{([^}]+)\}`)

func echoStyle(path string) string { return templateParam.ReplaceAllString(path, ":$1") }

// TestEveryOperation walks the whole API as a client would and checks
// every answer against the spec and the stored state after writes.
// (TestMain checks that the package's tests together exercise every
// operation.)
func TestEveryOperation(t *testing.T) {
	ts := newTestServer(t)
	ctx := context.Background()

	// Categories.
	var dogs, cats store.Category
	res := ts.do("POST", "/categories", `{"name":"dogs","description":"Loyal"}`).wantStatus(201)
	res.decode(&dogs)
	if got := res.header.Get("Location"); got != fmt.Sprintf("/categories/%d", dogs.ID) {
		t.Errorf("Location %q", got)
	}
	ts.do("POST", "/categories", `{"name":"cats"}`).wantStatus(201).decode(&cats)
	ts.do("GET", fmt.Sprintf("/categories/%d", dogs.ID), "").wantStatus(200)
	ts.do("PUT", fmt.Sprintf("/categories/%d", cats.ID), `{"name":"felines"}`).wantStatus(200)
	if c, err := ts.db.Category(ctx, cats.ID); err != nil || c.Name != "felines" {
		t.Errorf("stored category after PUT: %+v, %v", c, err)
	}
	var cs []store.Category
	ts.do("GET", "/categories", "").wantStatus(200).decode(&cs)
	if len(cs) != 2 {
		t.Errorf("listed %d categories, want 2", len(cs))
	}

	// Pets: created with an inventory entry of quantity 0.
	var rex store.Pet
	res = ts.do("POST", "/pets", fmt.Sprintf(`{"name":"Rex","categoryId":%d}`, dogs.ID)).wantStatus(201)
	res.decode(&rex)
	if rex.Status != store.StatusAvailable || rex.Name != "Rex" || rex.ID == 0 {
		t.Errorf("created pet %+v", rex)
	}
	if got := res.header.Get("Location"); got != fmt.Sprintf("/pets?id=%d", rex.ID) {
		t.Errorf("Location %q", got)
	}
	if inv, err := ts.db.InventoryItem(ctx, rex.ID); err != nil || inv.Quantity != 0 || inv.Status != store.StatusAvailable {
		t.Errorf("inventory of a new pet: %+v, %v", inv, err)
	}
	res = ts.do("GET", fmt.Sprintf("/pets/%d", rex.ID), "").wantStatus(200)
	if res.header.Get("Deprecation") == "" || res.header.Get("Sunset") == "" || !strings.Contains(res.header.Get("Link"), `rel="sunset"`) {
		t.Errorf("deprecated operation headers missing: %v", res.header)
	}
	ts.do("PUT", fmt.Sprintf("/pets/%d", rex.ID), fmt.Sprintf(`{"name":"Rex","categoryId":%d,"status":"pending"}`, dogs.ID)).wantStatus(200)
	if inv, _ := ts.db.InventoryItem(ctx, rex.ID); inv.Status != store.StatusPending {
		t.Errorf("inventory status did not follow the pet: %+v", inv)
	}
	var pets []store.Pet
	ts.do("GET", "/pets?status=pending", "").wantStatus(200).decode(&pets)
	if len(pets) != 1 || pets[0].ID != rex.ID {
		t.Errorf("status filter: %+v", pets)
	}
	ts.do("GET", fmt.Sprintf("/pets?categoryId=%d&status=available", dogs.ID), "").wantStatus(200).decode(&pets)
	if len(pets) != 0 {
		t.Errorf("category+status filter: %+v", pets)
	}

	// Inventory.
	var item store.InventoryItem
	ts.do("PUT", fmt.Sprintf("/store/inventory/%d", rex.ID), `{"quantity":5}`).wantStatus(200).decode(&item)
	if item.Quantity != 5 {
		t.Errorf("stock %+v", item)
	}
	ts.do("GET", fmt.Sprintf("/store/inventory/%d", rex.ID), "").wantStatus(200)
	var items []store.InventoryItem
	ts.do("GET", "/store/inventory?status=pending", "").wantStatus(200).decode(&items)
	if len(items) != 1 || items[0].Quantity != 5 {
		t.Errorf("inventory list: %+v", items)
	}

	// Orders take stock; cancelling gives it back; complete ones stay.
	var o1, o2 store.Order
	ts.do("POST", "/store/orders", fmt.Sprintf(`{"petId":%d,"quantity":3}`, rex.ID)).wantStatus(201).decode(&o1)
	ts.do("POST", "/store/orders", fmt.Sprintf(`{"petId":%d}`, rex.ID)).wantStatus(201).decode(&o2)
	if o2.Quantity != 1 || o2.Complete {
		t.Errorf("defaults of a placed order: %+v", o2)
	}
	if inv, _ := ts.db.InventoryItem(ctx, rex.ID); inv.Quantity != 1 {
		t.Errorf("stock after orders of 3 and 1 from 5: %d", inv.Quantity)
	}
	ts.do("POST", "/store/orders", fmt.Sprintf(`{"petId":%d,"quantity":2}`, rex.ID)).wantError(409, "insufficient_stock")
	ts.do("GET", fmt.Sprintf("/store/orders/%d", o1.ID), "").wantStatus(200)
	ts.do("PUT", fmt.Sprintf("/store/orders/%d", o1.ID), `{"shipDate":"2026-12-24T10:00:00Z","complete":true}`).wantStatus(200).decode(&o1)
	if !o1.Complete || o1.ShipDate == nil || o1.Quantity != 3 {
		t.Errorf("updated order %+v", o1)
	}
	ts.do("PUT", fmt.Sprintf("/store/orders/%d", o1.ID), `{"quantity":4}`).wantError(400, "invalid_request")
	var orders []store.Order
	ts.do("GET", fmt.Sprintf("/store/orders?petId=%d&complete=false", rex.ID), "").wantStatus(200).decode(&orders)
	if len(orders) != 1 || orders[0].ID != o2.ID {
		t.Errorf("order filters: %+v", orders)
	}
	ts.do("DELETE", fmt.Sprintf("/store/orders/%d", o1.ID), "").wantError(409, "conflict")
	ts.do("DELETE", fmt.Sprintf("/store/orders/%d", o2.ID), "").wantStatus(204)
	if inv, _ := ts.db.InventoryItem(ctx, rex.ID); inv.Quantity != 2 {
		t.Errorf("stock after cancelling an order of 1: %d, want 2", inv.Quantity)
	}
	ts.do("GET", fmt.Sprintf("/store/orders/%d", o2.ID), "").wantError(404, "not_found")

	// A category with pets cannot go; a pet takes its inventory with it.
	ts.do("DELETE", fmt.Sprintf("/categories/%d", dogs.ID), "").wantError(409, "conflict")
	ts.do("DELETE", fmt.Sprintf("/pets/%d", rex.ID), "").wantStatus(204)
	ts.do("GET", fmt.Sprintf("/store/inventory/%d", rex.ID), "").wantError(404, "not_found")
	ts.do("DELETE", fmt.Sprintf("/categories/%d", dogs.ID), "").wantStatus(204)

	// Admin: project and keys.
	ts.adminDo("GET", "/admin/project", "").wantStatus(200)
	var project struct {
		Plan, DefaultAddress string
	}
	ts.adminDo("PATCH", "/admin/project", `{"plan":"pro","name":"My shop"}`).wantStatus(200).decode(&project)
	if project.Plan != "pro" || project.DefaultAddress != "localhost" {
		t.Errorf("project after PATCH: %+v", project)
	}
	// A blank name is named as such, and changes nothing.
	if res := ts.adminDo("PATCH", "/admin/project", `{"name":"   "}`).wantError(400, "invalid_request"); !strings.Contains(string(res.body), "must not be blank") {
		t.Errorf("blank name: %s", res.body)
	}
	var keys []store.APIKey
	ts.adminDo("GET", "/admin/api-keys", "").wantStatus(200).decode(&keys)
	if len(keys) != 1 {
		t.Fatalf("keys: %+v", keys)
	}
	if strings.Contains(string(ts.adminDo("GET", "/admin/api-keys", "").body), ts.apiKey) {
		t.Error("the key list shows a secret")
	}
	ts.adminDo("DELETE", fmt.Sprintf("/admin/api-keys/%d", keys[0].ID), "").wantStatus(204)
	ts.do("POST", "/categories", `{"name":"after revoke"}`).wantError(401, "unauthorized")
}

func TestPaginationFollowsLinkHeaders(t *testing.T) {
	ts := newTestServer(t)
	var cat store.Category
	ts.do("POST", "/categories", `{"name":"fish"}`).wantStatus(201).decode(&cat)
	const total = 45
	for i := range total {
		status := "available"
		if i%3 == 0 {
			status = "sold"
		}
		ts.do("POST", "/pets", fmt.Sprintf(`{"name":"fish %d","categoryId":%d,"status":"%s"}`, i, cat.ID, status)).wantStatus(201)
	}
	walk := func(first string) (ids []int64, pages int) {
		next := first
		for next != "" {
			res := ts.do("GET", next, "").wantStatus(200)
			var page []store.Pet
			res.decode(&page)
			for _, p := range page {
				ids = append(ids, p.ID)
			}
			pages++
			next = ""
			if link := res.header.Get("Link"); link != "" {
				m := regexp.MustCompile(`^<([^>]+)>; rel="next"$`).FindStringSubmatch(link)
				if m == nil {
					t.Fatalf("Link header %q", link)
				}
				next = m[1]
			}
			if pages > 10 {
				t.Fatal("pagination does not end")
			}
		}
		return ids, pages
	}
	ids, pages := walk("/pets?limit=20")
	if len(ids) != total || pages != 3 || !slices.IsSorted(ids) {
		t.Errorf("walked %d ids in %d pages (sorted %v), want %d in 3", len(ids), pages, slices.IsSorted(ids), total)
	}
	ids, _ = walk(fmt.Sprintf("/pets?limit=7&status=sold&categoryId=%d", cat.ID))
	if len(ids) != 15 {
		t.Errorf("sold pets through the filter: %d, want 15", len(ids))
	}
	res := ts.do("GET", "/pets", "").wantStatus(200)
	var page []store.Pet
	res.decode(&page)
	if len(page) != store.DefaultPageSize {
		t.Errorf("default page size %d", len(page))
	}
}

func TestWritesNeedAValidAPIKey(t *testing.T) {
	ts := newTestServer(t)
	for _, h := range []http.Header{
		{},
		{"X-Api-Key": {"psk_not-a-key"}},
		{"X-Api-Key": {ts.admin}},
	} {
		res := ts.send("POST", "/categories", `{"name":"x"}`, h).wantError(401, "unauthorized")
		if !strings.Contains(res.message(), "X-API-Key") {
			t.Errorf("message does not say what is needed: %q", res.message())
		}
	}
	ts.send("GET", "/categories", "", http.Header{}).wantStatus(200)
	if _, next, _ := ts.db.ListCategories(context.Background(), store.Page{}); next != 0 {
		t.Error("unexpected state")
	}
	if cs, _, _ := ts.db.ListCategories(context.Background(), store.Page{}); len(cs) != 0 {
		t.Errorf("a refused write was stored: %+v", cs)
	}
}

func TestAdminNeedsTheToken(t *testing.T) {
	ts := newTestServer(t, withoutCredentialLimit)
	for _, h := range []http.Header{
		{},
		{"Authorization": {"Bearer wrong"}},
		{"Authorization": {"Basic " + ts.admin}},
		{"X-Api-Key": {ts.apiKey}},
	} {
		for _, r := range []struct{ method, path, body string }{
			{"GET", "/admin/project", ""},
			{"PATCH", "/admin/project", `{"plan":"pro"}`},
			{"GET", "/admin/api-keys", ""},
			{"POST", "/admin/api-keys", `{"name":"x"}`},
			{"DELETE", "/admin/api-keys/1", ""},
			{"GET", "/admin/openapi.yaml", ""},
			{"GET", "/admin/openapi.json", ""},
		} {
			ts.send(r.method, r.path, r.body, h.Clone()).wantError(401, "unauthorized")
		}
	}
	if p, _ := ts.db.Project(context.Background()); p.Plan != store.PlanFree {
		t.Errorf("a refused PATCH changed the plan to %q", p.Plan)
	}
}

// TestHealthzNamesTheBuild: /healthz's version is the running build, in
// the shape of the admin document's Build schema.
func TestHealthzNamesTheBuild(t *testing.T) {
	ts := newTestServer(t)
	_, admin := specs(t)
	res := ts.do(http.MethodGet, "/healthz", "").wantStatus(http.StatusOK)
	var body struct {
		Status  string
		Version json.RawMessage
	}
	res.decode(&body)
	var version any
	if err := json.Unmarshal(body.Version, &version); err != nil {
		t.Fatal(err)
	}
	if err := admin.doc.Components.Schemas["Build"].Value.VisitJSON(version); err != nil {
		t.Errorf("/healthz's version %s is not a Build: %v", body.Version, err)
	}
	var got buildinfo.Build
	_ = json.Unmarshal(body.Version, &got)
	if body.Status != "ok" || got != buildinfo.Running || got.Version == "" || got.GoVersion == "" {
		t.Errorf("/healthz: %s; want status ok and the version %+v", res.body, buildinfo.Running)
	}
}

// TestDeploysRecordTheBuild: a start records the build that started beside
// the spec; a restart of the same build is no new deploy; a start of
// another build (here: a deploy recorded by an older one) is.
func TestDeploysRecordTheBuild(t *testing.T) {
	ts := newTestServer(t)
	project := func() (p struct{ Deploys []store.Deploy }) {
		ts.adminDo(http.MethodGet, "/admin/project", "").wantStatus(http.StatusOK).decode(&p)
		return p
	}
	p := project()
	if len(p.Deploys) != 1 || p.Deploys[0].Build != store.DeployBuild(buildinfo.Running) {
		t.Fatalf("deploys after the first start: %+v; want one with the build %+v", p.Deploys, buildinfo.Running)
	}
	if err := ts.srv.RecordDeploy(context.Background()); err != nil {
		t.Fatal(err)
	}
	if p := project(); len(p.Deploys) != 1 {
		t.Errorf("a restart of the same build recorded a deploy: %+v", p.Deploys)
	}

	older := p.Deploys[0]
	older.Build = store.DeployBuild{Version: "v0.9.0", Revision: "0123456789abcdef0123456789abcdef01234567", GoVersion: "go1.26.0"}
	if _, err := ts.db.RecordDeploy(context.Background(), older); err != nil {
		t.Fatal(err)
	}
	if err := ts.srv.RecordDeploy(context.Background()); err != nil {
		t.Fatal(err)
	}
	p = project()
	if len(p.Deploys) != 3 || p.Deploys[0].Build != store.DeployBuild(buildinfo.Running) || p.Deploys[1].Build.Version != "v0.9.0" {
		t.Errorf("deploys after another build started: %+v", p.Deploys)
	}
}

// TestAdminDocumentAsJSON: the admin document is served as JSON too, behind
// the token, and it is the same document as the YAML one.
func TestAdminDocumentAsJSON(t *testing.T) {
	ts := newTestServer(t)
	ts.send("GET", "/admin/openapi.json", "", nil).wantError(401, "unauthorized")
	r := ts.adminDo("GET", "/admin/openapi.json", "").wantStatus(200)
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Content-Type %q", ct)
	}
	doc, err := openapi3.NewLoader().LoadFromData(r.body)
	if err != nil {
		t.Fatal(err)
	}
	_, admin := specs(t)
	if doc.Info.Title != admin.doc.Info.Title || doc.Paths.Len() != admin.doc.Paths.Len() {
		t.Errorf("the JSON document is %q with %d paths, the YAML one %q with %d", doc.Info.Title, doc.Paths.Len(), admin.doc.Info.Title, admin.doc.Paths.Len())
	}
	// A client finds the base URL in both documents.
	pub, _ := specs(t)
	for _, d := range []*openapi3.T{pub.doc, admin.doc} {
		if len(d.Servers) == 0 || d.Servers[0].URL != "/" {
			t.Errorf("%s: servers %v, want the relative /", d.Info.Title, d.Servers)
		}
	}
}

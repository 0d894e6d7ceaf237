package web

import (
	"bytes"
	"compress/gzip"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"regexp"
	"strings"
	"testing"

	"petstore/domains/domaintest"

	"golang.org/x/net/html"
)

func mustRender(t *testing.T, spec []byte) []byte {
	t.Helper()
	doc, err := ParseSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	page, err := RenderReference(doc)
	if err != nil {
		t.Fatal(err)
	}
	return page
}

func petstoreSpec(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("../openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkCSPFriendly fails for anything a Content-Security-Policy of
// script-src 'self' and style-src 'self' would block, and for anything
// loaded from another origin: the pages must work offline.
func checkCSPFriendly(t *testing.T, name string, page []byte) {
	t.Helper()
	z := html.NewTokenizer(bytes.NewReader(page))
	inScript := false
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			if z.Err() != io.EOF {
				t.Fatalf("%s: %v", name, z.Err())
			}
			return
		case html.TextToken:
			if inScript && strings.TrimSpace(string(z.Text())) != "" {
				t.Errorf("%s: inline script %q", name, z.Text())
			}
		case html.EndTagToken:
			inScript = false
		case html.StartTagToken, html.SelfClosingTagToken:
			tok := z.Token()
			attrs := map[string]string{}
			for _, a := range tok.Attr {
				attrs[a.Key] = a.Val
				if strings.HasPrefix(a.Key, "on") {
					t.Errorf("%s: inline event handler %s on <%s>", name, a.Key, tok.Data)
				}
				if a.Key == "style" {
					t.Errorf("%s: inline style on <%s>", name, tok.Data)
				}
				if (a.Key == "href" || a.Key == "src") && strings.HasPrefix(strings.TrimSpace(strings.ToLower(a.Val)), "javascript:") {
					t.Errorf("%s: javascript: URL on <%s>", name, tok.Data)
				}
			}
			switch tok.Data {
			case "script":
				inScript = tt == html.StartTagToken
				if !strings.HasPrefix(attrs["src"], "/") || strings.HasPrefix(attrs["src"], "//") {
					t.Errorf("%s: script %q is not a file of this server", name, attrs["src"])
				}
			case "style":
				t.Errorf("%s: inline <style>", name)
			case "link", "img", "iframe", "object", "embed", "source", "audio", "video":
				for _, k := range []string{"href", "src"} {
					if v, ok := attrs[k]; ok && (!strings.HasPrefix(v, "/") || strings.HasPrefix(v, "//")) {
						t.Errorf("%s: <%s %s=%q> loads from elsewhere", name, tok.Data, k, v)
					}
				}
			}
		}
	}
}

func TestReferenceRendersTheSpec(t *testing.T) {
	page := string(mustRender(t, petstoreSpec(t)))
	checkCSPFriendly(t, "reference", []byte(page))

	articles := regexp.MustCompile(`<article class="operation[^"]*" id="([^"]+)"`).FindAllStringSubmatch(page, -1)
	var ids []string
	for _, m := range articles {
		ids = append(ids, m[1])
	}
	want := []string{
		// In the document's order, grouped by tag (Pets, Store, Events).
		"listPets", "createPet", "getPetById", "replacePet", "deletePet",
		"listCategories", "createCategory", "getCategory", "replaceCategory", "deleteCategory",
		"listOrders", "placeOrder", "getOrder", "updateOrder", "cancelOrder",
		"listInventory", "getInventoryItem", "setInventory",
		"listEvents",
	}
	if !strings.Contains(page, `id="tag-Events"`) && !strings.Contains(page, ">Events<") {
		t.Error("the reference has no Events section")
	}
	if strings.Join(ids, " ") != strings.Join(want, " ") {
		t.Errorf("operations on the page:\n%v\nwant:\n%v", ids, want)
	}

	article := func(id string) string {
		start := strings.Index(page, `id="`+id+`"`)
		if start < 0 {
			t.Fatalf("no #%s", id)
		}
		end := strings.Index(page[start:], "</article>")
		return page[start : start+end]
	}
	if a := article("listOrders"); strings.Contains(a, `class="tryit"`) {
		t.Errorf("GET /store/orders has a try-it panel despite x-hideTryItPanel")
	}
	if a := article("listPets"); !strings.Contains(a, `class="tryit"`) || strings.Contains(a, "tryit-key") {
		t.Errorf("GET /pets should have a try-it panel without an API key field")
	}
	if a := article("createPet"); !strings.Contains(a, `data-header="X-API-Key"`) {
		t.Errorf("POST /pets should ask for the API key in its try-it panel")
	}
	if a := article("updateOrder"); !strings.Contains(a, `badge-beta`) {
		t.Errorf("PUT /store/orders/{orderId} lacks its beta badge")
	}
	if a := article("setInventory"); !strings.Contains(a, `badge-experimental`) {
		t.Errorf("PUT /store/inventory/{petId} lacks its experimental badge")
	}
	a := article("getPetById")
	for _, s := range []string{"badge-deprecated", `datetime="2027-06-30"`, `datetime="2026-11-01"`, "410 gone"} {
		if !strings.Contains(a, s) {
			t.Errorf("GET /pets/{petId} lacks %q", s)
		}
	}
	// Resolved schemas: the request body of POST /pets shows NewPet's
	// fields, limits and enum, with required marks.
	a = article("createPet")
	for _, s := range []string{
		`<a href="#schema-NewPet">NewPet</a>`, `<code class="prop-name">name</code>`,
		`1 to 100 characters`, `<span class="req">required</span>`,
		`one of <code>available</code>, <code>pending</code>, <code>sold</code>`,
		`<span class="format">int64</span>`, `No other properties are accepted.`,
	} {
		if !strings.Contains(a, s) {
			t.Errorf("POST /pets lacks %s", s)
		}
	}
	for _, s := range []string{"/admin/", "AdminToken", "openapi-admin"} {
		if strings.Contains(page, s) {
			t.Errorf("the reference mentions %q: the admin API must not be published", s)
		}
	}
	// Every component schema has its section.
	for _, name := range []string{"PetStatus", "NewPet", "Pet", "Pets", "NewCategory", "Category", "NewOrder", "OrderUpdate", "Order", "InventoryItem", "InventoryUpdate", "Error"} {
		if !strings.Contains(page, `id="schema-`+name+`"`) {
			t.Errorf("no section for the schema %s", name)
		}
	}
}

// A spec with what the Petstore's does not have: recursion, composition,
// path-level parameters, a missing operationId, a server path, and hostile
// descriptions.
const oddSpec = `openapi: 3.0.3
info:
  title: Odd <b>API</b>
  version: "2"
  description: |
    Text with <script>alert(1)</script> and [a link](javascript:alert(1)) and [a good one](https://example.com).
servers:
  - url: /v2
paths:
  /nodes/{id}:
    parameters:
      - name: id
        in: path
        required: true
        schema: {type: string}
    get:
      summary: A node
      x-stability: alpha
      responses:
        "200":
          description: The node.
          content:
            application/json:
              schema: {$ref: "#/components/schemas/Node"}
        default:
          description: Anything else.
components:
  schemas:
    Node:
      type: object
      properties:
        children:
          type: array
          items: {$ref: "#/components/schemas/Node"}
        kind:
          allOf:
            - {$ref: "#/components/schemas/Kind"}
          description: What it is.
    Kind:
      type: string
      enum: [leaf, branch]
`

func TestReferenceOddSpec(t *testing.T) {
	page := string(mustRender(t, []byte(oddSpec)))
	checkCSPFriendly(t, "odd reference", []byte(page))
	for _, s := range []string{
		`id="get-nodes-id"`,           // no operationId: an id all the same
		`data-path="/v2/nodes/{id}"`,  // the server's path
		`badge-alpha`,                 // an unknown stability still shows
		`See <a href="#schema-Node">`, // recursion stops
		`all of`,                      // composition
		`&lt;script&gt;alert(1)&lt;/script&gt;`,
		`<a href="https://example.com" rel="noopener noreferrer">a good one</a>`,
		`Odd &lt;b&gt;API&lt;/b&gt;`,
		`any other status`,
	} {
		if !strings.Contains(page, s) {
			t.Errorf("the page lacks %s", s)
		}
	}
	if strings.Contains(page, "javascript:") || strings.Contains(page, "<script>alert") {
		t.Errorf("hostile markup got through")
	}
}

func TestParseSpecRefusesABrokenSpec(t *testing.T) {
	for name, spec := range map[string]string{
		"not YAML":    "openapi: [",
		"not OpenAPI": "openapi: 3.0.3\ninfo: {title: x}\npaths: {}\n",
	} {
		if _, err := ParseSpec([]byte(spec)); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
}

func TestDashboardPageIsCSPFriendly(t *testing.T) {
	page, err := execute(dashboardTemplate, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkCSPFriendly(t, "dashboard", page)
	// The views are chosen by the URL's fragment (#domains); an element
	// with that id would make the browser scroll to it instead.
	for _, view := range []string{"project", "api-keys", "domains"} {
		if bytes.Contains(page, []byte(`id="`+view+`"`)) {
			t.Errorf("an element has the id %q, which is also a view's fragment", view)
		}
	}
	// The dashboard never holds the token in a form that could be posted
	// somewhere, nor in a cookie.
	scripts := map[string][]byte{"dashboard.js": siteAssetBody(t, dashboardAssets, "dashboard.js")}
	maps.Copy(scripts, dashboardAssets.modules)
	var all strings.Builder
	for name, body := range scripts {
		for _, bad := range []string{"document.cookie", "localStorage", "innerHTML", "credentials: 'include'"} {
			if bytes.Contains(body, []byte(bad)) {
				t.Errorf("%s uses %s", name, bad)
			}
		}
		all.Write(body)
	}
	if !strings.Contains(all.String(), "sessionStorage") || !strings.Contains(all.String(), "Authorization: `Bearer ${state.token}`") {
		t.Errorf("the dashboard should keep the token in sessionStorage and send it as a bearer token")
	}
}

// TestDashboardModulesResolve: every import of the dashboard's scripts
// names a module that is served, under a name the browser resolves from
// the importing script's URL.
func TestDashboardModulesResolve(t *testing.T) {
	site, err := NewSite([]byte("<!doctype html>"))
	if err != nil {
		t.Fatal(err)
	}
	importRE := regexp.MustCompile(`(?m)^import \{[^}]*\} from '([^']+)';$`)
	check := func(name, base string, body []byte) int {
		imports := importRE.FindAllSubmatch(body, -1)
		for _, m := range imports {
			target := path.Join(base, string(m[1]))
			res := site.DashboardAsset(target)
			if res == nil {
				t.Errorf("%s imports %s, which is not served under %s", name, m[1], DashboardAssetsPath)
				continue
			}
			w := get(t, res, http.MethodGet, nil)
			if w.Header().Get("Cache-Control") != "no-cache" || w.Header().Get("ETag") == "" || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/javascript") {
				t.Errorf("%s: a module under a fixed name must be revalidated: %v", target, w.Header())
			}
		}
		return len(imports)
	}
	if check("dashboard.js", ".", siteAssetBody(t, dashboardAssets, "dashboard.js")) == 0 {
		t.Error("dashboard.js imports nothing: the test would check nothing")
	}
	for name, body := range dashboardAssets.modules {
		check(name, path.Dir(name), body)
	}
	if len(dashboardAssets.modules) < 2 {
		t.Errorf("only %d modules", len(dashboardAssets.modules))
	}
}

func siteAssetBody(t *testing.T, set *assetSet, name string) []byte {
	t.Helper()
	a, ok := set.byName[name]
	if !ok {
		t.Fatalf("no asset %s", name)
	}
	return a.body
}

func get(t *testing.T, h http.Handler, method string, header map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, "/", nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

func TestResourceServing(t *testing.T) {
	site, err := NewSite(mustRender(t, petstoreSpec(t)))
	if err != nil {
		t.Fatal(err)
	}
	ref := site.Reference

	plain := get(t, ref, http.MethodGet, nil)
	if plain.Code != http.StatusOK || !bytes.Equal(plain.Body.Bytes(), ref.body) {
		t.Fatalf("GET: %d, %d bytes", plain.Code, plain.Body.Len())
	}
	h := plain.Header()
	for k, want := range map[string]string{
		"Content-Type":            "text/html; charset=utf-8",
		"Cache-Control":           "no-cache",
		"Content-Security-Policy": ContentSecurityPolicy,
		"X-Content-Type-Options":  "nosniff",
		"Vary":                    "Accept-Encoding",
		"ETag":                    ref.etag,
	} {
		if got := h.Get(k); got != want {
			t.Errorf("%s: %q, want %q", k, got, want)
		}
	}
	if !strings.Contains(h.Get("Content-Security-Policy"), "script-src 'self'") {
		t.Errorf("the CSP does not restrict scripts to this origin")
	}

	gz := get(t, ref, http.MethodGet, map[string]string{"Accept-Encoding": "br, gzip;q=0.8"})
	if gz.Header().Get("Content-Encoding") != "gzip" || gz.Header().Get("ETag") == ref.etag {
		t.Fatalf("gzip: encoding %q, ETag %q", gz.Header().Get("Content-Encoding"), gz.Header().Get("ETag"))
	}
	zr, err := gzip.NewReader(gz.Body)
	if err != nil {
		t.Fatal(err)
	}
	unzipped, _ := io.ReadAll(zr)
	if !bytes.Equal(unzipped, ref.body) {
		t.Errorf("the gzip variant is not the page")
	}
	if gz.Body.Len() > len(ref.body)/5 {
		t.Logf("gzip: %d of %d bytes", gz.Body.Len(), len(ref.body))
	}

	for _, etag := range []string{ref.etag, gz.Header().Get("ETag"), "W/" + ref.etag, `"other", ` + ref.etag} {
		nm := get(t, ref, http.MethodGet, map[string]string{"If-None-Match": etag, "Accept-Encoding": "gzip"})
		if nm.Code != http.StatusNotModified || nm.Body.Len() != 0 || nm.Header().Get("ETag") == "" {
			t.Errorf("If-None-Match %s: %d with %d bytes", etag, nm.Code, nm.Body.Len())
		}
	}
	if stale := get(t, ref, http.MethodGet, map[string]string{"If-None-Match": `"stale"`}); stale.Code != http.StatusOK {
		t.Errorf("a stale ETag got %d", stale.Code)
	}
	head := get(t, ref, http.MethodHead, nil)
	if head.Code != http.StatusOK || head.Body.Len() != 0 || head.Header().Get("Content-Length") == "" {
		t.Errorf("HEAD: %d, %d bytes, Content-Length %q", head.Code, head.Body.Len(), head.Header().Get("Content-Length"))
	}
}

func TestAssets(t *testing.T) {
	site, err := NewSite(mustRender(t, petstoreSpec(t)))
	if err != nil {
		t.Fatal(err)
	}
	for _, set := range []*assetSet{siteAssets, dashboardAssets} {
		for name := range set.byName {
			url, err := set.url(name)
			if err != nil {
				t.Fatal(err)
			}
			if !regexp.MustCompile(`^/[a-z/]+/[a-z]+\.[0-9a-f]{10}\.(css|js)$`).MatchString(url) {
				t.Errorf("%s: URL %s is not content-hashed", name, url)
			}
		}
	}
	css := site.SiteAsset(siteAssets.byName["site.css"].hashedName)
	if css == nil {
		t.Fatal("site.css is not served")
	}
	w := get(t, css, http.MethodGet, nil)
	if w.Header().Get("Cache-Control") != "public, max-age=31536000, immutable" || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/css") {
		t.Errorf("site.css headers: %v", w.Header())
	}
	if site.SiteAsset("site.css") != nil {
		t.Errorf("an asset is served under its name without the hash: it would be cached for good")
	}
	if site.SiteAsset(dashboardAssets.byName["dashboard.js"].hashedName) != nil {
		t.Errorf("the dashboard's script is served among the site's assets, outside /dashboard/")
	}
	if site.DashboardAsset(dashboardAssets.byName["dashboard.js"].hashedName) == nil {
		t.Errorf("dashboard.js is not served")
	}
	// The pages link the files that are served.
	for page, set := range map[*Resource]*assetSet{site.Reference: siteAssets, site.Dashboard: dashboardAssets} {
		for _, a := range set.byName {
			if !bytes.Contains(page.body, []byte(set.prefix+a.hashedName)) {
				t.Errorf("a page does not link %s%s", set.prefix, a.hashedName)
			}
		}
	}
}

func TestAcceptsGzip(t *testing.T) {
	domaintest.CheckTable(t, "acceptsGzip", acceptsGzip, map[string]bool{
		"":                       false,
		"gzip":                   true,
		"GZIP":                   true,
		"deflate, gzip;q=1.0":    true,
		"br;q=1, gzip;q=0":       false,
		"gzip; q=0.000":          false,
		"gzip;q=0.001":           true,
		"*":                      true,
		"identity":               false,
		"x-gzip":                 true,
		"br, *;q=0.1":            true,
		"gzip;level=9;q=0.5, br": true,
	})
}

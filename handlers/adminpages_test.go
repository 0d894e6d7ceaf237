package handlers_test

import (
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"testing"
)

var nextLink = regexp.MustCompile(`^<([^>]+)>; rel="next"$`)

// adminPages follows the Link headers of an admin list from path and
// returns the value of field in each item, page by page.
func (ts *testServer) adminPages(path, field string) [][]string {
	ts.tb.Helper()
	var pages [][]string
	for path != "" {
		if len(pages) > 50 {
			ts.tb.Fatalf("more than 50 pages: %v", pages)
		}
		r := ts.adminDo(http.MethodGet, path, "").wantStatus(http.StatusOK)
		var items []map[string]any
		r.decode(&items)
		var page []string
		for _, it := range items {
			switch v := it[field].(type) {
			case string:
				page = append(page, v)
			case float64:
				page = append(page, strconv.FormatFloat(v, 'f', -1, 64))
			}
		}
		pages = append(pages, page)
		path = ""
		if link := r.header.Get("Link"); link != "" {
			m := nextLink.FindStringSubmatch(link)
			if m == nil {
				ts.tb.Fatalf("Link %q is not a next-page link", link)
			}
			path = m[1]
		}
	}
	return pages
}

// The admin lists are paginated like the public ones: limit, an opaque
// cursor, and the next page's URL in Link.
func TestAdminListsArePaginated(t *testing.T) {
	ts := newTestServer(t) // it has made one API key, "tests"
	for _, name := range []string{"ci", "deploy", "backup-job", "laptop"} {
		ts.adminDo(http.MethodPost, "/admin/api-keys", `{"name":"`+name+`"}`).wantStatus(http.StatusCreated)
	}
	keys := ts.adminPages("/admin/api-keys?limit=2", "name")
	if want := [][]string{{"tests", "ci"}, {"deploy", "backup-job"}, {"laptop"}}; !slices.EqualFunc(keys, want, slices.Equal) {
		t.Errorf("API key pages of 2: %v, want %v", keys, want)
	}
	if all := ts.adminPages("/admin/api-keys", "name"); len(all) != 1 || len(all[0]) != 5 {
		t.Errorf("API keys without a limit: %v, want one page of 5", all)
	}

	ts.adminDo(http.MethodPatch, "/admin/project", `{"plan":"pro"}`).wantStatus(http.StatusOK)
	for _, name := range []string{"shop.example.com", "api.example.com", "example.org"} {
		ts.adminDo(http.MethodPost, "/admin/domains", `{"name":"`+name+`"}`).wantStatus(http.StatusCreated)
	}
	domains := ts.adminPages("/admin/domains?limit=2", "name")
	var flat []string
	for _, p := range domains {
		flat = append(flat, p...)
	}
	if len(domains) != 2 || len(domains[0]) != 2 || len(flat) != 3 || !slices.Equal(flat, ts.adminPages("/admin/domains", "name")[0]) {
		t.Errorf("domain pages of 2: %v; want 2 pages with the 3 domains in the order of the whole list", domains)
	}

	for _, path := range []string{"/admin/api-keys?cursor=bm9wZQ", "/admin/domains?cursor=bm9wZQ", "/admin/domains?limit=0", "/admin/api-keys?limit=101"} {
		ts.adminDo(http.MethodGet, path, "").wantError(http.StatusBadRequest, "invalid_request")
	}
}

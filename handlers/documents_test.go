package handlers_test

import (
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

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

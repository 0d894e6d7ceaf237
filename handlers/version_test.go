package handlers_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"petstore/handlers/buildinfo"
	"petstore/store"
)

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

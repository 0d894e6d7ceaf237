package boltstore_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"petstore/domains/domaintest"
	"petstore/store"
)

func TestProject(t *testing.T) {
	db := domaintest.OpenStore(t)
	p, err := db.Project(ctx)
	if err != nil || p.Name != "Petstore" || p.Slug != "petstore" || p.Plan != store.PlanFree || p.Deploys == nil || len(p.Deploys) != 0 {
		t.Fatalf("default project: %#v, %v", p, err)
	}

	p, err = db.UpdateProject(ctx, func(p *store.Project) error {
		p.Name, p.Slug, p.Plan = "Shop", "shop-1", store.PlanPro
		return nil
	})
	if err != nil || p.Name != "Shop" || p.Slug != "shop-1" || p.Plan != store.PlanPro {
		t.Fatalf("UpdateProject: %+v, %v", p, err)
	}
	if got, _ := db.Project(ctx); got.Name != "Shop" || got.Plan != store.PlanPro {
		t.Fatalf("stored project: %+v", got)
	}

	boom := errors.New("boom")
	if _, err := db.UpdateProject(ctx, func(p *store.Project) error { p.Name = "Lost"; return boom }); err != boom {
		t.Fatalf("fn's error: got %v, want it as is", err)
	}
	for _, tc := range []struct {
		edit func(*store.Project)
		msg  string
	}{
		{func(p *store.Project) { p.Plan = "gold" }, `plan "gold" is not one of free, pro, enterprise`},
		{func(p *store.Project) { p.Name = "" }, "name is required"},
		{func(p *store.Project) { p.Slug = "Not A Label" }, `slug "Not A Label" is not a DNS label (1 to 63 lowercase letters, digits and inner hyphens)`},
		{func(p *store.Project) { p.Slug = "-x" }, `slug "-x" is not a DNS label (1 to 63 lowercase letters, digits and inner hyphens)`},
	} {
		_, err := db.UpdateProject(ctx, func(p *store.Project) error { tc.edit(p); return nil })
		assertError(t, err, store.EINVALID, tc.msg)
	}
	if got, _ := db.Project(ctx); got.Name != "Shop" || got.Slug != "shop-1" || got.Plan != store.PlanPro {
		t.Fatalf("failed updates changed the project: %+v", got)
	}
}

func TestRecordDeploy_KeepsNewest(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	db := mustOpenAt(t, at)

	for i := 1; i <= store.MaxDeploys+5; i++ {
		d, err := db.RecordDeploy(ctx, store.Deploy{Version: fmt.Sprint(i), Status: "succeeded"})
		if err != nil {
			t.Fatal(err)
		}
		if d.ID != int64(i) || !d.At.Equal(at) {
			t.Fatalf("deploy %d: %+v", i, d)
		}
	}
	p, err := db.Project(ctx)
	if err != nil || len(p.Deploys) != store.MaxDeploys {
		t.Fatalf("%d deploys kept, %v; want %d", len(p.Deploys), err, store.MaxDeploys)
	}
	for i, d := range p.Deploys {
		if want := int64(store.MaxDeploys + 5 - i); d.ID != want || d.Version != fmt.Sprint(want) {
			t.Fatalf("deploys[%d] = %+v, want id %d (newest first)", i, d, want)
		}
	}
	// Updating settings keeps the deploys.
	p, err = db.UpdateProject(ctx, func(p *store.Project) error { p.Name = "X"; return nil })
	if err != nil || len(p.Deploys) != store.MaxDeploys {
		t.Fatalf("deploys after a settings update: %d, %v", len(p.Deploys), err)
	}
}

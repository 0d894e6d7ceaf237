package store_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"petstore/store"
	"petstore/store/storetest"
)

func testAPIKeys(t *testing.T, s store.Store) {
	keys, next := must2(s.APIKeys(ctx, store.Page{}))(t)
	if keys == nil || len(keys) != 0 || next != 0 {
		t.Errorf("no keys yet: %v %d", keys, next)
	}
	var created []store.APIKey
	secrets := map[int64]string{}
	for i := range 5 {
		k, secret, err := s.CreateAPIKey(ctx, fmt.Sprintf("ci %d", i), nil)
		check(t, err)
		if !strings.HasPrefix(secret, store.APIKeyPrefix) || k.Prefix != secret[len(store.APIKeyPrefix):len(store.APIKeyPrefix)+8] {
			t.Errorf("key %+v has secret %q", k, secret)
		}
		if k.CreatedAt.IsZero() || k.CreatedAt.Location() != time.UTC || !k.CreatedAt.Equal(k.CreatedAt.Truncate(time.Second)) {
			t.Errorf("key %d created at %v: want whole seconds in UTC", k.ID, k.CreatedAt)
		}
		created = append(created, k)
		secrets[k.ID] = secret
	}
	for _, k := range created {
		got, ok := s.AuthenticateAPIKey(secrets[k.ID])
		if !ok || got != k {
			t.Errorf("authenticating key %d: %+v %v, want %+v", k.ID, got, ok, k)
		}
	}
	for _, bad := range []string{"", store.APIKeyPrefix, secrets[created[0].ID] + "x", strings.TrimPrefix(secrets[created[0].ID], store.APIKeyPrefix)} {
		if k, ok := s.AuthenticateAPIKey(bad); ok {
			t.Errorf("secret %q authenticated as %+v", bad, k)
		}
	}
	ids := storetest.Walk(t, "API keys", 2, keyID, func(p store.Page) ([]store.APIKey, int64, error) { return s.APIKeys(ctx, p) })
	if want := []int64{created[0].ID, created[1].ID, created[2].ID, created[3].ID, created[4].ID}; !slices.Equal(ids, want) {
		t.Errorf("API key pages: %v, want %v", ids, want)
	}
	page, _ := must2(s.APIKeys(ctx, store.Page{Limit: 1, After: created[2].ID}))(t)
	if len(page) != 1 || page[0] != created[3] {
		t.Errorf("the key page after %d: %+v, want %+v", created[2].ID, page, created[3])
	}
	check(t, s.RevokeAPIKey(ctx, created[1].ID))
	if _, ok := s.AuthenticateAPIKey(secrets[created[1].ID]); ok {
		t.Error("a revoked key still authenticates")
	}
	if _, ok := s.AuthenticateAPIKey(secrets[created[2].ID]); !ok {
		t.Error("revoking one key revoked another")
	}
	wantError(t, "revoking a revoked key", s.RevokeAPIKey(ctx, created[1].ID), store.ENOTFOUND, fmt.Sprintf("api key %d not found", created[1].ID))
	if ids := storetest.Walk(t, "API keys", 0, keyID, func(p store.Page) ([]store.APIKey, int64, error) { return s.APIKeys(ctx, p) }); len(ids) != 4 || slices.Contains(ids, created[1].ID) {
		t.Errorf("keys after revoking %d: %v", created[1].ID, ids)
	}
}

func testAdminToken(t *testing.T, s store.Store) {
	if s.CheckAdminToken("") || s.CheckAdminToken(store.AdminTokenPrefix) {
		t.Error("an admin token checks before there is one")
	}
	generated := must(s.EnsureAdminToken(ctx, ""))(t)
	if !strings.HasPrefix(generated, store.AdminTokenPrefix) || len(generated) < 40 {
		t.Fatalf("generated admin token %q", generated)
	}
	if !s.CheckAdminToken(generated) || s.CheckAdminToken(generated+"x") || s.CheckAdminToken("") {
		t.Error("the generated token does not check, or another does")
	}
	if again := must(s.EnsureAdminToken(ctx, ""))(t); again != "" || !s.CheckAdminToken(generated) {
		t.Errorf("a second start without a token: got %q, the first one checks %v", again, s.CheckAdminToken(generated))
	}
	given := "pat_" + strings.Repeat("g", 40)
	if out := must(s.EnsureAdminToken(ctx, given))(t); out != "" {
		t.Errorf("a given token returned %q", out)
	}
	if !s.CheckAdminToken(given) || s.CheckAdminToken(generated) {
		t.Error("a given token does not replace the earlier one")
	}
	if out := must(s.EnsureAdminToken(ctx, ""))(t); out != "" || !s.CheckAdminToken(given) {
		t.Errorf("a start without a token after a given one: %q", out)
	}
}

func testProject(t *testing.T, s store.Store) {
	if p := must(s.Project(ctx))(t); p.Name != "Petstore" || p.Slug != "petstore" || p.Plan != store.PlanFree || p.Deploys == nil || len(p.Deploys) != 0 {
		t.Errorf("the default project: %+v", p)
	}
	p := must(s.UpdateProject(ctx, func(p *store.Project) error {
		p.Name, p.Slug, p.Plan = "Shop", "shop", store.PlanPro
		return nil
	}))(t)
	if got := must(s.Project(ctx))(t); got.Name != "Shop" || got.Slug != "shop" || got.Plan != store.PlanPro || p.Name != "Shop" {
		t.Errorf("after UpdateProject: %+v (returned %+v)", got, p)
	}
	_, err := s.UpdateProject(ctx, func(p *store.Project) error { p.Slug = "Not A Label"; return nil })
	wantError(t, "an invalid slug", err, store.EINVALID, `slug "Not A Label" is not a DNS label (1 to 63 lowercase letters, digits and inner hyphens)`)
	for _, slug := range []string{"", "-shop", "shop-", "sh_op", "shöp", strings.Repeat("a", 64)} {
		_, err := s.UpdateProject(ctx, func(p *store.Project) error { p.Slug = slug; return nil })
		wantError(t, "slug "+slug, err, store.EINVALID, fmt.Sprintf("slug %q is not a DNS label (1 to 63 lowercase letters, digits and inner hyphens)", slug))
	}
	for _, slug := range []string{"a", "7", "my-shop-2", strings.Repeat("a", 63)} {
		if _, err := s.UpdateProject(ctx, func(p *store.Project) error { p.Slug = slug; return nil }); err != nil {
			t.Errorf("slug %q: %v", slug, err)
		}
	}
	_, err = s.UpdateProject(ctx, func(p *store.Project) error { p.Plan = "gold"; return nil })
	wantError(t, "an unknown plan", err, store.EINVALID, `plan "gold" is not one of free, pro, enterprise`)
	must(s.UpdateProject(ctx, func(p *store.Project) error { p.Slug = "shop"; return nil }))(t)
	_, err = s.UpdateProject(ctx, func(p *store.Project) error { return store.Errorf(store.EPLANREQUIRED, "from fn") })
	wantError(t, "fn's error", err, store.EPLANREQUIRED, "from fn")
	if got := must(s.Project(ctx))(t); got.Slug != "shop" {
		t.Errorf("a refused update was saved: %+v", got)
	}

	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	var deploys []store.Deploy
	for i := range store.MaxDeploys + 3 {
		d := store.Deploy{Version: fmt.Sprintf("v%d", i), SpecSHA256: "abc", Status: "published", At: at.Add(time.Duration(i) * time.Second)}
		if i == 0 {
			d.At = time.Time{} // the store's time
		}
		d = must(s.RecordDeploy(ctx, d))(t)
		if d.ID <= 0 || d.At.IsZero() || d.At.Location() != time.UTC {
			t.Fatalf("recorded %+v: want an id and a UTC time", d)
		}
		deploys = append(deploys, d)
	}
	got := must(s.Project(ctx))(t).Deploys
	if len(got) != store.MaxDeploys || got[0].Version != deploys[len(deploys)-1].Version || got[0].ID != deploys[len(deploys)-1].ID || !got[0].At.Equal(deploys[len(deploys)-1].At) {
		t.Errorf("deploys: %d kept, newest %+v; want %d, newest %+v", len(got), got[0], store.MaxDeploys, deploys[len(deploys)-1])
	}
	if got[len(got)-1].Version != "v3" {
		t.Errorf("the oldest deploy kept is %s, want v3", got[len(got)-1].Version)
	}
}

func testDomains(t *testing.T, s store.Store) {
	if ds := must(s.Domains(ctx))(t); ds == nil || len(ds) != 0 {
		t.Errorf("no domains yet: %#v", ds)
	}
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	for i, name := range []string{"e.example", "c.example", "a.example", "d.example", "b.example"} {
		d := store.Domain{Name: name, State: store.DomainPending, AddedAt: t0.Add(time.Duration(i/2) * time.Second)}
		check(t, s.AddDomain(ctx, &d, nil))
	}
	wantError(t, "adding a domain twice", s.AddDomain(ctx, &store.Domain{Name: "a.example", AddedAt: t0}, nil), store.EDOMAINEXISTS, "a.example is attached already")
	want := []string{"c.example", "e.example", "a.example", "d.example", "b.example"}
	if got := domainNames(must(s.Domains(ctx))(t)); !slices.Equal(got, want) {
		t.Errorf("Domains: %v, want %v", got, want)
	}
	var paged []string
	var after *store.DomainCursor
	for range 10 {
		page, next, err := s.DomainsPage(ctx, 2, after)
		check(t, err)
		paged = append(paged, domainNames(page)...)
		if next == nil {
			break
		}
		after = next
		if next.Name == "e.example" {
			check(t, s.RemoveDomain(ctx, "e.example")) // a cursor outlives its domain
		}
	}
	if want := []string{"c.example", "e.example", "a.example", "d.example", "b.example"}; !slices.Equal(paged, want) {
		t.Errorf("DomainsPage by 2: %v, want %v", paged, want)
	}
	d := must(s.Domain(ctx, "c.example"))(t)
	if d.Name != "c.example" || !d.AddedAt.Equal(t0) || d.Records == nil {
		t.Errorf("Domain: %+v", d)
	}
	_, err := s.Domain(ctx, "e.example")
	wantError(t, "a removed domain", err, store.ENOTFOUND, "domain e.example is not attached")
	wantError(t, "removing it again", s.RemoveDomain(ctx, "e.example"), store.ENOTFOUND, "domain e.example is not attached")

	verifiedAt := time.Date(2030, 2, 3, 4, 5, 6, 0, time.UTC)
	updated := must(s.UpdateDomain(ctx, "c.example", func(d *store.Domain) error {
		d.State, d.VerifiedAt = store.DomainVerified, &verifiedAt
		d.Name = "renamed.example" // the name is the key: it stays
		d.Records = []store.DNSRecord{{Type: "CNAME", Host: "c", Name: "c.example", Value: "shop.petstore.test", TTL: 300}}
		d.Certificate = store.Certificate{State: store.CertIssued, Names: []string{"c.example"}}
		return nil
	}))(t)
	got := must(s.Domain(ctx, "c.example"))(t)
	if updated.Name != "c.example" || got.State != store.DomainVerified || got.VerifiedAt == nil || !got.VerifiedAt.Equal(verifiedAt) ||
		len(got.Records) != 1 || got.Records[0].Value != "shop.petstore.test" || got.Certificate.State != store.CertIssued {
		t.Errorf("after UpdateDomain: %+v (returned %+v)", got, updated)
	}
	_, err = s.UpdateDomain(ctx, "c.example", func(d *store.Domain) error { d.State = "x"; return store.Errorf(store.ECONFLICT, "no") })
	wantError(t, "fn's error", err, store.ECONFLICT, "no")
	if got := must(s.Domain(ctx, "c.example"))(t); got.State != store.DomainVerified {
		t.Errorf("a refused update was saved: %+v", got)
	}
	_, err = s.UpdateDomain(ctx, "gone.example", func(*store.Domain) error { return nil })
	wantError(t, "updating a missing domain", err, store.ENOTFOUND, "domain gone.example is not attached")
}

func domainNames(ds []store.Domain) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.Name)
	}
	return out
}

func testSettings(t *testing.T, s store.Store) {
	if st := must(s.Settings(ctx))(t); st.Domains.Redirects == nil || len(st.Domains.Redirects) != 0 || st.Domains.Primary != "" {
		t.Errorf("no settings yet: %#v", st)
	}
	for _, name := range []string{"a.example", "b.example", "c.example"} {
		check(t, s.AddDomain(ctx, &store.Domain{Name: name, AddedAt: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}, nil))
	}
	st := must(s.UpdateSettings(ctx, func(st *store.Settings, attached map[string]store.Domain) error {
		if len(attached) != 3 || attached["b.example"].Name != "b.example" {
			return fmt.Errorf("attached: %v", attached)
		}
		st.Domains.Primary = "a.example"
		st.Domains.Redirects = []store.Redirect{
			{From: "b.example", To: "a.example", Status: 301},
			{From: "c.example", To: "b.example", Status: 308},
			{From: "c.example", To: "a.example", Status: 302},
		}
		return nil
	}))(t)
	if got := must(s.Settings(ctx))(t); got.Domains.Primary != "a.example" || len(got.Domains.Redirects) != 3 || len(st.Domains.Redirects) != 3 {
		t.Errorf("after UpdateSettings: %+v", got)
	}
	_, err := s.UpdateSettings(ctx, func(st *store.Settings, _ map[string]store.Domain) error {
		st.Domains.Primary = ""
		return store.Errorf(store.EINVALID, "refused")
	})
	wantError(t, "fn's error", err, store.EINVALID, "refused")
	// Removing a domain drops the redirects from or to it; removing the
	// primary clears it.
	check(t, s.RemoveDomain(ctx, "b.example"))
	got := must(s.Settings(ctx))(t)
	if want := []store.Redirect{{From: "c.example", To: "a.example", Status: 302}}; got.Domains.Primary != "a.example" || !slices.Equal(got.Domains.Redirects, want) {
		t.Errorf("after removing b.example: %+v, want primary a.example and %v", got, want)
	}
	check(t, s.RemoveDomain(ctx, "a.example"))
	if got := must(s.Settings(ctx))(t); got.Domains.Primary != "" || got.Domains.Redirects == nil || len(got.Domains.Redirects) != 0 {
		t.Errorf("after removing the primary: %#v", got)
	}
}

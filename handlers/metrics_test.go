package handlers_test

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"petstore/store"
)

// scrape GETs /metrics with the admin token and parses the answer with
// the Prometheus library's own parser (the harness checks it against the
// admin document).
func (ts *testServer) scrape() *exposition {
	ts.tb.Helper()
	res := ts.adminDo(http.MethodGet, "/metrics", "").wantStatus(http.StatusOK)
	if ct := res.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		ts.tb.Errorf("Content-Type %q", ct)
	}
	return parseExposition(ts.tb, res.body)
}

// exposition is a parsed scrape, flattened to samples as they appear in
// the text format (a histogram gives _bucket, _sum and _count samples).
type exposition struct {
	types   map[string]string // family -> TYPE
	helps   map[string]string // family -> HELP
	samples []sample
}

type sample struct {
	name   string
	labels map[string]string
	value  float64
}

func parseExposition(tb testing.TB, body []byte) *exposition {
	tb.Helper()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		tb.Fatalf("parsing the exposition: %v\n%s", err, body)
	}
	e := &exposition{types: map[string]string{}, helps: map[string]string{}}
	for name, f := range families {
		e.types[name] = strings.ToLower(f.GetType().String())
		e.helps[name] = f.GetHelp()
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			with := func(k, v string) map[string]string {
				c := maps.Clone(labels)
				c[k] = v
				return c
			}
			switch {
			case m.Counter != nil:
				e.samples = append(e.samples, sample{name, labels, m.GetCounter().GetValue()})
			case m.Gauge != nil:
				e.samples = append(e.samples, sample{name, labels, m.GetGauge().GetValue()})
			case m.Untyped != nil:
				e.samples = append(e.samples, sample{name, labels, m.GetUntyped().GetValue()})
			case m.Histogram != nil:
				h := m.GetHistogram()
				for _, b := range h.GetBucket() {
					le := strconv.FormatFloat(b.GetUpperBound(), 'g', -1, 64)
					e.samples = append(e.samples, sample{name + "_bucket", with("le", le), float64(b.GetCumulativeCount())})
				}
				e.samples = append(e.samples,
					sample{name + "_bucket", with("le", "+Inf"), float64(h.GetSampleCount())},
					sample{name + "_sum", labels, h.GetSampleSum()},
					sample{name + "_count", labels, float64(h.GetSampleCount())})
			case m.Summary != nil:
				s := m.GetSummary()
				e.samples = append(e.samples,
					sample{name + "_sum", labels, s.GetSampleSum()},
					sample{name + "_count", labels, float64(s.GetSampleCount())})
			}
		}
	}
	return e
}

// get returns the value of the one sample with name and exactly labels
// (name, value pairs), and whether there is one.
func (e *exposition) get(name string, labels ...string) (float64, bool) {
	for _, s := range e.samples {
		if s.name != name || len(s.labels) != len(labels)/2 {
			continue
		}
		match := true
		for i := 0; i+1 < len(labels); i += 2 {
			if v, ok := s.labels[labels[i]]; !ok || v != labels[i+1] {
				match = false
				break
			}
		}
		if match {
			return s.value, true
		}
	}
	return 0, false
}

func (e *exposition) want(tb testing.TB, want float64, name string, labels ...string) {
	tb.Helper()
	got, ok := e.get(name, labels...)
	if !ok {
		tb.Errorf("no sample %s%v", name, labels)
	} else if math.Abs(got-want) > 1e-9 {
		tb.Errorf("%s%v = %v, want %v", name, labels, got, want)
	}
}

// checkHistograms holds every histogram series to the format: buckets
// cumulative, +Inf equal to _count, a _sum. It returns the counts by
// route and method.
func (e *exposition) checkHistograms(tb testing.TB) map[[2]string]float64 {
	tb.Helper()
	const h = "petstore_http_request_duration_seconds"
	counts := map[[2]string]float64{}
	last := map[[2]string]float64{}
	inf := map[[2]string]float64{}
	for _, s := range e.samples {
		k := [2]string{s.labels["route"], s.labels["method"]}
		switch s.name {
		case h + "_bucket":
			if s.value < last[k] {
				tb.Errorf("bucket le=%s of %v goes down: %v after %v", s.labels["le"], k, s.value, last[k])
			}
			last[k] = s.value
			if s.labels["le"] == "+Inf" {
				inf[k] = s.value
			}
		case h + "_count":
			counts[k] = s.value
		case h + "_sum":
			if s.value < 0 {
				tb.Errorf("negative sum for %v", k)
			}
		}
	}
	for k, n := range counts {
		if inf[k] != n {
			tb.Errorf("%v: +Inf bucket %v, _count %v", k, inf[k], n)
		}
	}
	return counts
}

func TestMetrics(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	ts := newTestServer(t, withNow(now))
	ctx := context.Background()

	// Requests of a few kinds, then a scrape.
	for range 3 {
		ts.do("GET", "/pets", "").wantStatus(200)
	}
	for id := range 4 {
		ts.do("GET", fmt.Sprintf("/pets/%d", id+100), "").wantError(404, "not_found")
	}
	ts.do("GET", "/no/such/path", "").wantError(404, "not_found")
	ts.send("BREW", "/pets", "", http.Header{}).wantError(405, "method_not_allowed")

	// Domains in each state, with and without certificates; one stored
	// with a name that needs escaping, to test the label writer.
	ts.adminDo("PATCH", "/admin/project", `{"plan":"pro"}`).wantStatus(200)
	notAfter := now.Add(10*24*time.Hour + 12*time.Hour)
	for _, d := range []struct{ name, state, cert string }{
		{"pending.example.com", store.DomainPending, store.CertNone},
		{"shop.example.com", store.DomainVerified, store.CertIssued},
		{"old.example.com", store.DomainMoved, store.CertIssued},
		{"new.example.com", store.DomainVerified, store.CertPending},
	} {
		ts.adminDo("POST", "/admin/domains", `{"name":"`+d.name+`"}`).wantStatus(201)
		if _, err := ts.db.UpdateDomain(ctx, d.name, func(sd *store.Domain) error {
			sd.State, sd.Certificate.State = d.state, d.cert
			if d.cert == store.CertIssued {
				sd.Certificate.NotAfter = &notAfter
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	weird := "we\"ird\\na\nme"
	expired := now.Add(-36 * time.Hour)
	if err := ts.db.AddDomain(ctx, &store.Domain{Name: weird, State: store.DomainVerified,
		Certificate: store.Certificate{State: store.CertIssued, NotAfter: &expired}}, nil); err != nil {
		t.Fatal(err)
	}

	e := ts.scrape()
	for family, typ := range map[string]string{
		"petstore_http_requests_total":           "counter",
		"petstore_http_request_duration_seconds": "histogram",
		"petstore_store_size_bytes":              "gauge",
		"petstore_domains":                       "gauge",
		"petstore_certificate_expiry_days":       "gauge",
		"petstore_up":                            "gauge",
	} {
		if e.types[family] != typ || e.helps[family] == "" {
			t.Errorf("family %s: TYPE %q HELP %q, want TYPE %s and a HELP", family, e.types[family], e.helps[family], typ)
		}
	}

	const total = "petstore_http_requests_total"
	e.want(t, 3, total, "route", "/pets", "method", "GET", "status", "200")
	// One series for every pet id: the route template, never the URL.
	e.want(t, 4, total, "route", "/pets/:petId", "method", "GET", "status", "404")
	e.want(t, 1, total, "route", "unmatched", "method", "GET", "status", "404")
	e.want(t, 1, total, "route", "/pets", "method", "other", "status", "405")
	for _, s := range e.samples {
		if strings.Contains(s.labels["route"], "100") || s.labels["method"] == "BREW" || s.labels["route"] == "/no/such/path" {
			t.Errorf("a label carries the raw request: %s %v", s.name, s.labels)
		}
	}
	counts := e.checkHistograms(t)
	if got := counts[[2]string{"/pets", "GET"}]; got != 3 {
		t.Errorf("histogram count for GET /pets = %v, want 3", got)
	}
	if got := counts[[2]string{"/pets/:petId", "GET"}]; got != 4 {
		t.Errorf("histogram count for GET /pets/:petId = %v, want 4", got)
	}
	for _, le := range []string{"0.001", "0.01", "0.1", "1", "+Inf"} {
		if _, ok := e.get("petstore_http_request_duration_seconds_bucket", "route", "/pets", "method", "GET", "le", le); !ok {
			t.Errorf("no bucket le=%q", le)
		}
	}
	if sum, _ := e.get("petstore_http_request_duration_seconds_sum", "route", "/pets", "method", "GET"); sum <= 0 {
		t.Errorf("duration sum %v", sum)
	}

	size, err := ts.db.Size(ctx)
	if err != nil {
		t.Fatal(err)
	}
	e.want(t, float64(size), "petstore_store_size_bytes")
	e.want(t, 1, "petstore_domains", "state", "pending")
	e.want(t, 3, "petstore_domains", "state", "verified")
	e.want(t, 1, "petstore_domains", "state", "moved")
	e.want(t, 10.5, "petstore_certificate_expiry_days", "domain", "shop.example.com")
	e.want(t, 10.5, "petstore_certificate_expiry_days", "domain", "old.example.com")
	e.want(t, -1.5, "petstore_certificate_expiry_days", "domain", weird)
	for _, d := range []string{"pending.example.com", "new.example.com"} {
		if _, ok := e.get("petstore_certificate_expiry_days", "domain", d); ok {
			t.Errorf("an expiry for %s, which has no certificate", d)
		}
	}
	e.want(t, 1, "petstore_up")

	// The scrape itself shows in the next one.
	ts.scrape().want(t, 1, total, "route", "/metrics", "method", "GET", "status", "200")
}

func TestMetricsNeedTheAdminToken(t *testing.T) {
	ts := newTestServer(t)
	for _, h := range []http.Header{
		{},
		{"Authorization": {"Bearer nope"}},
		{"X-Api-Key": {ts.apiKey}},
		{"Authorization": {"Basic " + ts.admin}},
	} {
		ts.send("GET", "/metrics", "", h).wantError(401, "unauthorized")
	}
}

func TestMetricsNotOnCustomerDomains(t *testing.T) {
	ts := newTestServer(t)
	ts.verifiedDomain("shop.example.com")
	customer := http.Header{"Host": {"shop.example.com"}, "Authorization": {"Bearer " + ts.admin}}
	ts.send("GET", "/pets", "", customer.Clone()).wantStatus(200) // the domain is served
	for _, p := range []string{"/metrics", "/metrics/", "/admin/backup"} {
		for _, m := range []string{"GET", "HEAD"} {
			res := ts.beforeOperations().send(m, p, "", customer.Clone())
			if res.status != 404 {
				t.Errorf("%s %s on a customer domain: %d, want 404", m, p, res.status)
			}
		}
	}
	ts.scrape() // and on the default address it is served
}

// TestMetricsUnderLoad scrapes while requests are being answered: every
// scrape is a valid exposition whose histograms hold together, and the
// final counts are exact.
func TestMetricsUnderLoad(t *testing.T) {
	ts := newTestServer(t)
	const workers, each = 8, 50
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers}, Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range each {
				res, err := client.Get(ts.http.URL + "/healthz")
				if err != nil {
					t.Error(err)
					return
				}
				res.Body.Close()
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for scrapes := 0; ; scrapes++ {
		select {
		case <-done:
			e := ts.scrape()
			e.want(t, workers*each, "petstore_http_requests_total", "route", "/healthz", "method", "GET", "status", "200")
			if n := e.checkHistograms(t)[[2]string{"/healthz", "GET"}]; n != workers*each {
				t.Errorf("histogram count %v, want %d", n, workers*each)
			}
			t.Logf("%d scrapes during the load", scrapes)
			return
		default:
			ts.scrape().checkHistograms(t)
		}
	}
}

package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"petstore/domains"
	"petstore/domains/domaintest"
	"petstore/events/webhooktest"
)

// TestDevelopmentMode: a start on a loopback address without --domain
// (what `go run .` is) is development: a webhook to a receiver on this
// machine is accepted and delivered, without a flag, and the log says
// why; other private addresses stay refused; a domain can be added and
// shows its records for the placeholder target. With --domain, the same
// webhook is refused as in production.
func TestDevelopmentMode(t *testing.T) {
	in := start(t, nil, "--admin-token", domaintest.AdminToken, "--data", t.TempDir()+"/dev.db")
	admin := []string{"Authorization", "Bearer " + domaintest.AdminToken}
	if log := in.out.String(); !strings.Contains(log, "development mode: webhooks may go to loopback addresses") || !strings.Contains(log, "without --domain") {
		t.Errorf("the log does not say why webhooks may go to loopback:\n%s", log)
	}

	rcv := webhooktest.Start(t, webhooktest.Options{})
	code, body := in.call(t, "POST", "/admin/webhooks", fmt.Sprintf(`{"url":%q,"events":["pet.created"]}`, rcv.URL), admin...)
	if code != 201 {
		t.Fatalf("a webhook to %s in development: %d %s", rcv.URL, code, body)
	}
	var hook struct{ Secret string }
	if err := json.Unmarshal([]byte(body), &hook); err != nil {
		t.Fatal(err)
	}
	rcv.Trust(hook.Secret)
	for _, url := range []string{"http://10.0.0.1/hook", "http://192.168.1.2/hook", "http://169.254.169.254/"} {
		if code, body := in.call(t, "POST", "/admin/webhooks", fmt.Sprintf(`{"url":%q,"events":["pet.created"]}`, url), admin...); code != 422 || !strings.Contains(body, "--webhook-allow-private") {
			t.Errorf("a webhook to %s in development: %d %s, want 422", url, code, body)
		}
	}
	code, body = in.call(t, "POST", "/admin/api-keys", `{"name":"dev"}`, admin...)
	var key struct{ Secret string }
	if code != 201 || json.Unmarshal([]byte(body), &key) != nil {
		t.Fatalf("an API key: %d %s", code, body)
	}
	if code, body := in.call(t, "POST", "/categories", `{"name":"dogs"}`, "X-API-Key", key.Secret); code != 201 {
		t.Fatalf("a category: %d %s", code, body)
	}
	if code, body := in.call(t, "POST", "/pets", `{"name":"Rex","categoryId":1}`, "X-API-Key", key.Secret); code != 201 {
		t.Fatalf("a pet: %d %s", code, body)
	}
	domaintest.WaitFor(t, 30*time.Second, 10*time.Millisecond, func() error {
		if n := len(rcv.Events()); n != 1 {
			return fmt.Errorf("the loopback receiver has %d events, rejected %v", n, rcv.Rejected())
		}
		return nil
	})

	// Domains: added without restart flags, with records for the placeholder.
	code, body = in.call(t, "GET", "/admin/project", "", admin...)
	var project struct {
		CNAMETarget string `json:"cnameTarget"`
		Development bool   `json:"development"`
	}
	if code != 200 || json.Unmarshal([]byte(body), &project) != nil || !project.Development || project.CNAMETarget != domains.DevelopmentTarget {
		t.Errorf("the project in development: %d %s", code, body)
	}
	if code, body := in.call(t, "PATCH", "/admin/project", `{"plan":"pro"}`, admin...); code != 200 {
		t.Fatalf("plan pro: %d %s", code, body)
	}
	code, body = in.call(t, "POST", "/admin/domains", `{"name":"shop.example.com"}`, admin...)
	if code != 201 || !strings.Contains(body, `"CNAME"`) || !strings.Contains(body, domains.DevelopmentTarget) {
		t.Errorf("adding a domain in development: %d %s", code, body)
	}
	in.stop(t)

	// Production: --domain, and a loopback receiver is refused.
	prod := start(t, nil, "--admin-token", domaintest.AdminToken, "--data", t.TempDir()+"/prod.db", "--domain", "petstore.example.com")
	if code, body := prod.call(t, "POST", "/admin/webhooks", fmt.Sprintf(`{"url":%q,"events":["pet.created"]}`, rcv.URL), admin...); code != 422 || !strings.Contains(body, "loopback") {
		t.Errorf("a webhook to %s with --domain: %d %s, want 422", rcv.URL, code, body)
	}
	if strings.Contains(prod.out.String(), "development mode") {
		t.Errorf("a start with --domain logs development mode:\n%s", prod.out)
	}
	code, body = prod.call(t, "GET", "/admin/project", "", admin...)
	if code != 200 || !strings.Contains(body, `"development":false`) {
		t.Errorf("the project with --domain: %d %s", code, body)
	}
}

package events

import (
	"context"
	"testing"
)

// TestAllowLoopbackAllowsLoopbackOnly: development mode's policy lets
// webhooks reach loopback receivers, by address or by name, when saved and
// when connecting, and still refuses every other private range.
func TestAllowLoopbackAllowsLoopbackOnly(t *testing.T) {
	p := Policy{AllowLoopback: true}
	for _, url := range []string{"http://127.0.0.1:9/hook", "http://[::1]:9/", "http://localhost:9/", "http://127.0.0.2/"} {
		if err := p.CheckURL(context.Background(), url); err != nil {
			t.Errorf("%s: %v", url, err)
		}
	}
	for _, url := range []string{"http://10.0.0.1/", "http://192.168.0.1/", "http://169.254.169.254/", "http://[fc00::1]/", "http://0.0.0.0/"} {
		if err := p.CheckURL(context.Background(), url); err == nil {
			t.Errorf("%s was allowed", url)
		}
	}
	if err := p.control("tcp", "127.0.0.1:8080", nil); err != nil {
		t.Errorf("connecting to 127.0.0.1: %v", err)
	}
	if err := p.control("tcp", "10.1.2.3:80", nil); err == nil {
		t.Error("connecting to 10.1.2.3 was allowed")
	}
	if err := (Policy{}).CheckURL(context.Background(), "http://127.0.0.1:9/"); err == nil {
		t.Error("the production policy allowed a loopback receiver")
	}
}

package dnscheck_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestKnowsNoCertificates: DNS checking knows nothing of certificates: no
// package it builds on is certmagic's or its ACME client's, so the CAs it
// judges CAA against can only be given to it.
func TestKnowsNoCertificates(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "petstore/domains/dnscheck").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps listed only %v", deps)
	}
	for _, dep := range deps {
		if strings.Contains(dep, "github.com/caddyserver/certmagic") || strings.Contains(dep, "github.com/mholt/acmez") {
			t.Errorf("petstore/domains/dnscheck depends on %s", dep)
		}
	}
}

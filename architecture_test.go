package main

import (
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// listedPackage is what go list says of one package of the module.
type listedPackage struct {
	ImportPath string
	// Imports are the non-test files' own imports; Deps everything they
	// pull in, transitively.
	Imports, Deps             []string
	TestImports, XTestImports []string
}

// listPackages runs go list on the module's packages; each one's Deps are
// what go list -deps would show for it.
func listPackages(t *testing.T) map[string]listedPackage {
	t.Helper()
	out, err := exec.Command("go", "list", "-json", "./...").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string]listedPackage{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p listedPackage
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs[p.ImportPath] = p
	}
	if len(pkgs) == 0 {
		t.Fatal("go list named no package")
	}
	return pkgs
}

func under(path, tree string) bool { return path == tree || strings.HasPrefix(path, tree+"/") }

// importsAny returns the first of list that is one of (or under one of) forbidden.
func importsAny(list []string, forbidden ...string) string {
	for _, imp := range list {
		for _, f := range forbidden {
			if under(imp, f) {
				return imp
			}
		}
	}
	return ""
}

// TestArchitecture keeps the package map of docs/design.md: each rule
// below is one wall between the rooms.
func TestArchitecture(t *testing.T) {
	pkgs := listPackages(t)

	// The API handlers know nothing of how connections arrive: listeners,
	// the connection guard and the PROXY protocol are server's.
	if api, ok := pkgs["petstore/handlers"]; !ok {
		t.Error("no package petstore/handlers")
	} else if dep := importsAny(api.Deps, "github.com/pires/go-proxyproto"); dep != "" {
		t.Errorf("petstore/handlers depends on %s", dep)
	} else if slices.Contains(api.Deps, "petstore/server") {
		// server/accesslog is the log line handlers write; server itself
		// is the sockets.
		t.Error("petstore/handlers depends on petstore/server")
	}

	// The store knows nothing of HTTP, DNS or TLS. PostgreSQL's driver
	// dials the database over TLS itself, so crypto/tls is checked among
	// the store's own imports, the others among everything it pulls in.
	for path, p := range pkgs {
		if !under(path, "petstore/store") {
			continue
		}
		if dep := importsAny(p.Deps, "net/http", "github.com/miekg/dns"); dep != "" {
			t.Errorf("%s depends on %s", path, dep)
		}
		if imp := importsAny(p.Imports, "crypto/tls"); imp != "" {
			t.Errorf("%s imports %s", path, imp)
		}
	}

	// Persistence is the store's: nothing else, tests included, opens the
	// bbolt file or speaks to PostgreSQL itself. Tests reach bbolt through
	// store/boltstore/bolttest and PostgreSQL through pgtest.Session.
	for path, p := range pkgs {
		if under(path, "petstore/store") {
			continue
		}
		all := slices.Concat(p.Imports, p.TestImports, p.XTestImports)
		if imp := importsAny(all, "go.etcd.io/bbolt", "github.com/jackc/pgx"); imp != "" {
			t.Errorf("%s imports %s", path, imp)
		}
		if imp := importsAny(slices.Concat(p.TestImports, p.XTestImports), "go.etcd.io/bbolt"); imp != "" {
			t.Errorf("the tests of %s import %s", path, imp)
		}
	}

	// DNS checking knows nothing of certificates: the CAs it judges CAA
	// against are given to it.
	if dc, ok := pkgs["petstore/domains/dnscheck"]; !ok {
		t.Error("no package petstore/domains/dnscheck")
	} else if dep := importsAny(dc.Deps, "github.com/caddyserver/certmagic", "github.com/mholt/acmez"); dep != "" {
		t.Errorf("petstore/domains/dnscheck depends on %s", dep)
	}
}

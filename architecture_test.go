package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
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

// listPackages runs go list on the module's packages, once per test
// binary; each one's Deps are what go list -deps would show for it.
func listPackages(t *testing.T) map[string]listedPackage {
	t.Helper()
	listOnce.Do(func() { listed, listErr = goList() })
	if listErr != nil {
		t.Fatal(listErr)
	}
	return listed
}

var (
	listOnce sync.Once
	listed   map[string]listedPackage
	listErr  error
)

func goList() (map[string]listedPackage, error) {
	out, err := exec.Command("go", "list", "-json", "./...").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil, fmt.Errorf("go list: %v\n%s", err, ee.Stderr)
		}
		return nil, fmt.Errorf("go list: %v", err)
	}
	pkgs := map[string]listedPackage{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p listedPackage
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			return nil, err
		}
		pkgs[p.ImportPath] = p
	}
	if len(pkgs) == 0 {
		return nil, errors.New("go list named no package")
	}
	return pkgs, nil
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

	// Every package of the module has its row in docs/design.md's table,
	// and imports, in its non-test files, only the packages of the module
	// that its row allows.
	module := modulePath(t)
	for _, p := range checkPackageTable(module, readDesignTable(t, module), pkgs) {
		t.Error(p)
	}

	// The API handlers know nothing of how connections arrive: listeners,
	// the connection guard and the PROXY protocol are server's.
	if api, ok := pkgs["petstore/handlers"]; !ok {
		t.Error("no package petstore/handlers")
	} else if slices.Contains(api.Deps, "petstore/server") {
		// (server/accesslog, below it, is a package of its own that
		// handlers may import.)
		t.Error("petstore/handlers depends on petstore/server")
	} else if dep := importsAny(api.Deps, "github.com/pires/go-proxyproto"); dep != "" {
		t.Errorf("petstore/handlers depends on %s", dep)
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

// TestOnlyBoundedImportsGolangLRU: every bounded table of the service is a
// bounded.Cache, so that the eviction rule is the one bounded states; no
// other package, tests included, uses golang-lru itself.
func TestOnlyBoundedImportsGolangLRU(t *testing.T) {
	pkgs := listPackages(t)
	if b, ok := pkgs["petstore/bounded"]; !ok {
		t.Fatal("no package petstore/bounded")
	} else if importsAny(b.Imports, "github.com/hashicorp/golang-lru") == "" {
		t.Error("petstore/bounded does not import golang-lru")
	}
	for path, p := range pkgs {
		if path == "petstore/bounded" {
			continue
		}
		all := slices.Concat(p.Imports, p.TestImports, p.XTestImports)
		if imp := importsAny(all, "github.com/hashicorp/golang-lru"); imp != "" {
			t.Errorf("%s imports %s; use petstore/bounded", path, imp)
		}
	}
}

// modulePath is the module's path, as go.mod declares it.
func modulePath(t *testing.T) string {
	t.Helper()
	mod, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^module\s+(\S+)`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("go.mod declares no module")
	}
	return string(m[1])
}

// packageTable is the package table of docs/design.md: for each package
// of the module (its import path), the packages of the module that its
// non-test files may import.
type packageTable map[string][]string

var codeSpan = regexp.MustCompile("`([^`]+)`")

// readPackageTable reads the table of the section "How the code is laid
// out" of a design document: a row's package is the first code span of its
// first cell, named below the module (`store/boltstore`; the module's own
// package by the module's path); what it may import is every code span of
// its last cell, except in a part (between semicolons) that begins with
// "never". Anything else there (bbolt, certmagic) is outside the module and
// not checked here.
func readPackageTable(doc, module string) (packageTable, error) {
	_, section, ok := strings.Cut(doc, "\n## How the code is laid out\n")
	if !ok {
		return nil, errors.New(`no section "How the code is laid out"`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	qualify := func(name string) string {
		if name == module {
			return module
		}
		return module + "/" + name
	}
	table := packageTable{}
	header := false
	for line := range strings.SplitSeq(section, "\n") {
		if !strings.HasPrefix(line, "|") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "| "), "|")
		if !header {
			if len(cells) != 3 || strings.TrimSpace(cells[2]) != "may import" {
				return nil, fmt.Errorf("the table's header is %q, want package | owns | may import", line)
			}
			header = true
			continue
		}
		if strings.Trim(line, "|- ") == "" {
			continue // the header's rule
		}
		if len(cells) != 3 {
			return nil, fmt.Errorf("a row of %d cells, want 3: %q", len(cells), line)
		}
		name := codeSpan.FindStringSubmatch(cells[0])
		if name == nil {
			return nil, fmt.Errorf("a row names no package: %q", line)
		}
		pkg := qualify(name[1])
		if _, dup := table[pkg]; dup {
			return nil, fmt.Errorf("two rows for %s", pkg)
		}
		allowed := []string{}
		for part := range strings.SplitSeq(cells[2], ";") {
			if strings.HasPrefix(strings.TrimSpace(part), "never") {
				continue
			}
			for _, m := range codeSpan.FindAllStringSubmatch(part, -1) {
				allowed = append(allowed, qualify(m[1]))
			}
		}
		table[pkg] = allowed
	}
	if len(table) == 0 {
		return nil, errors.New("the package table has no row")
	}
	return table, nil
}

// checkPackageTable returns what breaks the table: a package of the module
// without a row, a row or an allowed import that names no package of the
// module (the table went stale), and an import by a package's non-test
// files of a package of the module that its row does not allow. The
// tests' own imports are free (see docs/design.md).
func checkPackageTable(module string, table packageTable, pkgs map[string]listedPackage) []string {
	var problems []string
	inModule := func(path string) bool { return under(path, module) }
	for path, p := range pkgs {
		allowed, ok := table[path]
		if !ok {
			problems = append(problems, fmt.Sprintf("%s has no row in docs/design.md's package table", path))
			continue
		}
		for _, imp := range p.Imports {
			if inModule(imp) && !slices.Contains(allowed, imp) {
				problems = append(problems, fmt.Sprintf("%s imports %s, which its row in docs/design.md's package table does not allow", path, imp))
			}
		}
	}
	for path, allowed := range table {
		if _, ok := pkgs[path]; !ok {
			problems = append(problems, fmt.Sprintf("docs/design.md's package table has a row for %s, which is no package of the module", path))
		}
		for _, a := range allowed {
			if _, ok := pkgs[a]; !ok {
				problems = append(problems, fmt.Sprintf("docs/design.md's package table lets %s import %s, which is no package of the module", path, a))
			}
		}
	}
	sort.Strings(problems)
	return problems
}

func readDesignTable(t *testing.T, module string) packageTable {
	t.Helper()
	doc, err := os.ReadFile("docs/design.md")
	if err != nil {
		t.Fatal(err)
	}
	table, err := readPackageTable(string(doc), module)
	if err != nil {
		t.Fatalf("docs/design.md: %v", err)
	}
	return table
}

// TestArchitectureCatchesAnImportOutsideTheTable feeds the checker what it must
// refuse: the real packages with one import added that the table does not
// allow; a synthetic module with a package missing from its table and a
// row gone stale; and the parser a row whose "never" is no permission.
func TestArchitectureCatchesAnImportOutsideTheTable(t *testing.T) {
	module := modulePath(t)
	table := readDesignTable(t, module)

	// The real module, with the store made to import the handlers.
	pkgs := maps.Clone(listPackages(t))
	st := pkgs[module+"/store"]
	st.Imports = append(slices.Clone(st.Imports), module+"/handlers")
	pkgs[module+"/store"] = st
	want := []string{module + "/store imports " + module + "/handlers, which its row in docs/design.md's package table does not allow"}
	if got := checkPackageTable(module, table, pkgs); !slices.Equal(got, want) {
		t.Errorf("an import outside the table: the checker says %q, want %q", got, want)
	}

	// A test's import is free: the same import by the store's tests.
	pkgs = maps.Clone(listPackages(t))
	st = pkgs[module+"/store"]
	st.XTestImports = append(slices.Clone(st.XTestImports), module+"/handlers")
	pkgs[module+"/store"] = st
	if got := checkPackageTable(module, table, pkgs); len(got) != 0 {
		t.Errorf("a test's import: the checker says %q, want nothing", got)
	}

	doc := "# D\n\n## How the code is laid out\n\n" +
		"| package | owns | may import |\n|---|---|---|\n" +
		"| `m` (`main.go`) | wiring | `a`, `b`; never `c` |\n" +
		"| `a` | a's job | nothing of the module |\n" +
		"| `b` | b's job | `a`, bbolt |\n" +
		"| `gone` | nothing now | `a` |\n\n## Next\n\n| `x` | not | `y` |\n"
	small, err := readPackageTable(doc, "m")
	if err != nil {
		t.Fatal(err)
	}
	wantTable := packageTable{"m": {"m/a", "m/b"}, "m/a": {}, "m/b": {"m/a"}, "m/gone": {"m/a"}}
	if !maps.EqualFunc(small, wantTable, slices.Equal) {
		t.Fatalf("the table read as %q, want %q", small, wantTable)
	}
	got := checkPackageTable("m", small, map[string]listedPackage{
		"m":   {ImportPath: "m", Imports: []string{"fmt", "m/a", "m/c"}},
		"m/a": {ImportPath: "m/a", Imports: []string{"m/b"}, TestImports: []string{"m/c"}},
		"m/b": {ImportPath: "m/b", Imports: []string{"m/a", "go.etcd.io/bbolt"}},
		"m/c": {ImportPath: "m/c"},
	})
	want = []string{
		"docs/design.md's package table has a row for m/gone, which is no package of the module",
		"m imports m/c, which its row in docs/design.md's package table does not allow",
		"m/a imports m/b, which its row in docs/design.md's package table does not allow",
		"m/c has no row in docs/design.md's package table",
	}
	if !slices.Equal(got, want) {
		t.Errorf("the checker says\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if _, err := readPackageTable("# D\n\n## How the code is laid out\n\nno table\n", "m"); err == nil {
		t.Error("a design document without the table was read without an error")
	}
}

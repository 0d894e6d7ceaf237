package web

import (
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// moduleImport finds the modules a JavaScript module imports or
// re-exports: import … from '…', import '…', export … from '…'.
var moduleImport = regexp.MustCompile(`(?m)^\s*(?:import|export)\s+(?:[^'";]*?\s+from\s+)?['"]([^'"]+)['"]`)

// dashboardImports reads the dashboard's modules and what each imports,
// by path below static/dashboard.
func dashboardImports(t *testing.T) map[string][]string {
	t.Helper()
	graph := map[string][]string{}
	err := fs.WalkDir(static, "static/dashboard", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".js") {
			return err
		}
		src, err := fs.ReadFile(static, p)
		if err != nil {
			return err
		}
		name := strings.TrimPrefix(p, "static/dashboard/")
		graph[name] = []string{}
		for _, m := range moduleImport.FindAllStringSubmatch(string(src), -1) {
			graph[name] = append(graph[name], path.Join(path.Dir(name), m[1]))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return graph
}

// The dashboard's modules are in layers: no module imports, through any
// chain, one that imports it back, and the bottom (state, the DOM helpers,
// the API client) imports nothing above it.
func TestDashboardModulesHaveNoImportCycle(t *testing.T) {
	graph := dashboardImports(t)
	if len(graph) < 10 || len(graph["dashboard.js"]) == 0 {
		t.Fatalf("the imports were not read: %v", graph)
	}
	for from, tos := range graph {
		for _, to := range tos {
			if _, ok := graph[to]; !ok {
				t.Errorf("%s imports %s, which is not a module of the dashboard", from, to)
			}
		}
	}
	if cycle := findCycle(graph); cycle != nil {
		t.Errorf("the modules import in a cycle: %s", strings.Join(cycle, " -> "))
	}
	bottom := []string{"modules/state.js", "modules/dom.js", "modules/api.js"}
	for _, m := range bottom {
		if _, ok := graph[m]; !ok {
			t.Errorf("no module %s", m)
		}
		for _, to := range graph[m] {
			if !slices.Contains(bottom, to) {
				t.Errorf("%s, at the bottom, imports %s", m, to)
			}
		}
	}
}

// findCycle returns a cycle of graph (its first module repeated at the
// end), or nil.
func findCycle(graph map[string][]string) []string {
	const (
		unseen = iota
		onPath
		done
	)
	mark := map[string]int{}
	var stack []string
	var visit func(string) []string
	visit = func(m string) []string {
		mark[m] = onPath
		stack = append(stack, m)
		for _, to := range graph[m] {
			switch mark[to] {
			case onPath:
				i := slices.Index(stack, to)
				return append(slices.Clone(stack[i:]), to)
			case unseen:
				if c := visit(to); c != nil {
					return c
				}
			}
		}
		stack = stack[:len(stack)-1]
		mark[m] = done
		return nil
	}
	names := make([]string, 0, len(graph))
	for m := range graph {
		names = append(names, m)
	}
	slices.Sort(names)
	for _, m := range names {
		if mark[m] == unseen {
			if c := visit(m); c != nil {
				return c
			}
		}
	}
	return nil
}

// The cycle finder finds a cycle, and none where there is none.
func TestFindCycle(t *testing.T) {
	if c := findCycle(map[string][]string{"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": nil}); len(c) != 4 || c[0] != c[3] {
		t.Errorf("a -> b -> c -> a: %v", c)
	}
	if c := findCycle(map[string][]string{"a": {"b", "c"}, "b": {"c"}, "c": nil}); c != nil {
		t.Errorf("a diamond: %v", c)
	}
}

package main

import (
	"bytes"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// helpGroups are the headings of --help, in order.
var helpGroups = []string{"Basics", "TLS and custom domains", "Limits", "Several instances", "Development and tests"}

// helpFlags reads --help back: each group's flags, with the environment
// variable and default each names.
func helpFlags(t *testing.T, help string) (groups []string, flags map[string]string, env map[string]string, defaults map[string]string) {
	t.Helper()
	flags, env, defaults = map[string]string{}, map[string]string{}, map[string]string{}
	group, last := "", ""
	for _, line := range strings.Split(help, "\n") {
		if m := regexp.MustCompile(`^(\S[^:]*):$`).FindStringSubmatch(line); m != nil && m[1] != "Usage" {
			group = m[1]
			groups = append(groups, group)
		} else if m := regexp.MustCompile(`^  --(\S+)(?: \S+)?   \((\S+)\)$`).FindStringSubmatch(line); m != nil {
			last = m[1]
			flags[last], env[last] = group, m[2]
		} else if m := regexp.MustCompile(`^      default: (.+)$`).FindStringSubmatch(line); m != nil {
			defaults[last] = m[1]
		}
	}
	return groups, flags, env, defaults
}

// TestHelpGroupsEveryFlag reads --help: its groups in order, every flag in
// one of them with its default and its PETSTORE_* variable, how to call
// migrate, unrevoke and --version; and the reference lists the same flags in the
// same groups.
func TestHelpGroupsEveryFlag(t *testing.T) {
	var help bytes.Buffer
	if err := run(t.Context(), []string{"--help"}, func(string) string { return "" }, &help); err != nil {
		t.Fatalf("--help: %v", err)
	}
	groups, flags, env, defaults := helpFlags(t, help.String())
	if !slices.Equal(groups, helpGroups) {
		t.Errorf("--help's groups are %q, want %q:\n%s", groups, helpGroups, help.String())
	}
	if len(flags) < 20 {
		t.Fatalf("--help lists %d flags:\n%s", len(flags), help.String())
	}
	for name, group := range flags {
		if want := "PETSTORE_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_")); env[name] != want {
			t.Errorf("--%s names the variable %q, want %q", name, env[name], want)
		}
		if defaults[name] == "" {
			t.Errorf("--%s (in %s) shows no default", name, group)
		}
	}
	for name, want := range map[string]string{"listen": "localhost:8080", "data": "./petstore.db", "rate-limit": "50", "shutdown-timeout": "15s"} {
		if defaults[name] != want {
			t.Errorf("--%s shows the default %q, want %q", name, defaults[name], want)
		}
	}
	// Every subcommand the docs tell operators to run is named, unrevoke too.
	for _, want := range []string{"petstore migrate", "petstore unrevoke", "petstore --version"} {
		if !strings.Contains(help.String(), want) {
			t.Errorf("--help does not mention %q", want)
		}
	}

	// The reference's tables: one per group, the same flags.
	ref, err := os.ReadFile("docs/reference.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]string{}
	group := ""
	for _, line := range strings.Split(string(ref), "\n") {
		if strings.HasPrefix(line, "### ") {
			group = strings.TrimPrefix(line, "### ")
		} else if m := regexp.MustCompile("^\\| `--([a-z0-9-]+)`").FindStringSubmatch(line); m != nil {
			documented[m[1]] = group
		}
	}
	for name, group := range flags {
		if documented[name] != group {
			t.Errorf("--%s is in the group %q of --help, and under %q in docs/reference.md", name, group, documented[name])
		}
	}
	for name := range documented {
		if _, ok := flags[name]; !ok {
			t.Errorf("docs/reference.md documents --%s, which --help does not list", name)
		}
	}
}

// TestMigrateHelp: petstore migrate --help names its five flags (the way
// back's --to-data and --restore-marks among them) and their variables.
func TestMigrateHelp(t *testing.T) {
	var help bytes.Buffer
	if err := run(t.Context(), []string{"migrate", "--help"}, func(string) string { return "" }, &help); err != nil {
		t.Fatalf("migrate --help: %v", err)
	}
	_, flags, env, _ := helpFlags(t, help.String())
	if len(flags) != 5 || env["data"] != "PETSTORE_DATA" || env["database"] != "PETSTORE_DATABASE" || env["bad-text"] != "PETSTORE_BAD_TEXT" ||
		env["to-data"] != "PETSTORE_TO_DATA" || env["restore-marks"] != "PETSTORE_RESTORE_MARKS" {
		t.Errorf("migrate --help:\n%s", help.String())
	}
}

// TestHelpCommandIsHelp: "petstore help" prints what --help prints, and
// succeeds.
func TestHelpCommandIsHelp(t *testing.T) {
	var help, flagHelp strings.Builder
	if err := run(t.Context(), []string{"help"}, func(string) string { return "" }, &help); err != nil {
		t.Fatalf("petstore help: %v", err)
	}
	if err := run(t.Context(), []string{"--help"}, func(string) string { return "" }, &flagHelp); err != nil {
		t.Fatalf("--help: %v", err)
	}
	if help.String() != flagHelp.String() || !strings.Contains(help.String(), "--listen") {
		t.Errorf("petstore help printed:\n%s\nwant what --help prints:\n%s", help.String(), flagHelp.String())
	}
}

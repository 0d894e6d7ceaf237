package main

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"petstore/store"
	"petstore/store/boltstore"
)

// docCommands says, for each shell block of the README and docs/, which
// test runs it, or why none can. A block is known by a text it holds.
var docCommands = []struct{ holds, runBy string }{
	{"go run .            # the whole service", "not run as written (port 8080 may be taken): TestREADMEWalkThrough runs the service with no flag but --data and a free port; go test ./... is the suite itself"},
	{`go run . --admin-token "$(head -c 24 /dev/urandom | base64)"`, "TestREADMENewAdminToken"},
	{"go build -o petstore .", "TestREADMEBuildsABinary"},
	{"ADMIN=pat_…", "TestREADMEWalkThrough"},
	{"petstore --domain petstore.example.com \\\n         --https-listen :443", "TestDocsServiceCommandsParse (serving :443 needs root and a public CA)"},
	{"bash .ci/run", "not run: they are the test suite itself"},
	{"umask 077", "TestOperationsBackupCommand"},
	{"systemctl stop petstore            # however it runs", "not run: systemctl; the restore itself is handlers' TestBackupRestoresThroughTheService"},
	{"petstore migrate --data", "not run as written (a database at db.internal): TestMigrateServesFromPostgreSQLWhatTheFileServed runs the same flags"},
	{"mv /var/lib/petstore/petstore.db /var/lib/petstore/petstore.db.damaged", "not run: systemctl; the refusal is TestRunRefusesDamagedDataFile"},
	{"oapi-codegen@v2.8.2", "not run (it fetches oapi-codegen): TestGeneratedClients generates and drives the same client"},
	{"# On each VM (10.0.0.11 and 10.0.0.12)", "TestDocsServiceCommandsParse (it needs PostgreSQL, HAProxy and :443)"},
	{"pg_dump --format=custom", "TestRestoreOfAnOlderDump runs the same pg_dump and the guide's pg_restore"},
	{"mv petstore.new /usr/local/bin/petstore", "not run as written (a server's paths, pidof): TestUpgradeInPlace builds the binary, renames it over the running one and sends SIGHUP"},
}

// docShellBlocks returns every sh block of the README and docs/, by file.
func docShellBlocks(t *testing.T) map[string][]string {
	t.Helper()
	files, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := map[string][]string{}
	for _, f := range append([]string{"README.md"}, files...) {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile("(?s)\n```(?:sh|bash|shell)\n(.*?)```").FindAllStringSubmatch(string(text), -1) {
			blocks[f] = append(blocks[f], m[1])
		}
	}
	return blocks
}

// docBlock returns the one sh block of file that holds text.
func docBlock(t *testing.T, file, text string) string {
	t.Helper()
	var found []string
	for _, b := range docShellBlocks(t)[file] {
		if strings.Contains(b, text) {
			found = append(found, b)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s has %d sh blocks that hold %q, want 1", file, len(found), text)
	}
	return found[0]
}

// TestDocsCommandsAreRunOrExplained keeps docCommands true: every shell
// block of the README and docs/ is in it once, and every entry still names
// a block, so a new command cannot slip in untested without a reason.
func TestDocsCommandsAreRunOrExplained(t *testing.T) {
	used := make([]int, len(docCommands))
	for file, blocks := range docShellBlocks(t) {
		for _, b := range blocks {
			var matches []string
			for i, c := range docCommands {
				if strings.Contains(b, c.holds) {
					used[i]++
					matches = append(matches, c.holds)
				}
			}
			if len(matches) != 1 {
				t.Errorf("%s: the sh block\n%s\nmatches %d entries of docCommands (%q); add one that says which test runs it, or why none can", file, b, len(matches), matches)
			}
		}
	}
	for i, c := range docCommands {
		if used[i] == 0 {
			t.Errorf("docCommands names %q, which no sh block holds any more", c.holds)
		}
	}
}

// TestREADMENewAdminToken makes a token the way the README says to after
// losing one, and starts the service with it: the token is long enough,
// and it is the admin token from then on.
func TestREADMENewAdminToken(t *testing.T) {
	block := docBlock(t, "README.md", "--admin-token")
	expr := regexp.MustCompile(`--admin-token "(\$\(.*\))"`).FindStringSubmatch(block)
	if expr == nil {
		t.Fatalf("no --admin-token \"$(...)\" in:\n%s", block)
	}
	token, err := exec.Command("bash", "-c", `printf %s "`+expr[1]+`"`).Output()
	if err != nil {
		t.Fatal(err)
	}
	in := start(t, nil, "--data", filepath.Join(t.TempDir(), "petstore.db"), "--admin-token", string(token))
	if code, body := in.call(t, "GET", "/admin/project", "", "Authorization", "Bearer "+string(token)); code != 200 {
		t.Errorf("the README's new token %q: %d %s", token, code, body)
	}
}

// TestOperationsBackupCommand runs the guide's backup command against a
// service: it saves a file named as the guide says, private, which opens
// as a data file holding what the service held.
func TestOperationsBackupCommand(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	block := docBlock(t, "docs/operations.md", "umask 077")
	in := start(t, nil, "--data", filepath.Join(t.TempDir(), "petstore.db"))
	token := regexp.MustCompile(`admin token\s+(pat_\S+)`).FindStringSubmatch(in.out.String())
	if token == nil {
		t.Fatalf("no admin token printed:\n%s", in.out)
	}
	if code, body := in.call(t, "PATCH", "/admin/project", `{"name":"Backed up"}`, "Authorization", "Bearer "+token[1]); code != 200 {
		t.Fatalf("PATCH /admin/project: %d %s", code, body)
	}
	dir := t.TempDir()
	cmd := exec.Command("bash", "-euc", strings.ReplaceAll(block, "http://localhost:8080", in.base))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "ADMIN="+token[1])
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the backup command: %v\n%s", err, out)
	}
	saved, _ := filepath.Glob(filepath.Join(dir, "petstore-*Z.db"))
	if len(saved) != 1 || !regexp.MustCompile(`^petstore-\d{8}T\d{6}Z\.db$`).MatchString(filepath.Base(saved[0])) {
		t.Fatalf("saved %v, want one petstore-<UTC time>.db", saved)
	}
	if fi, err := os.Stat(saved[0]); err != nil || fi.Mode().Perm()&0o077 != 0 {
		t.Errorf("the backup's mode is %v (%v): others can read it", fi.Mode(), err)
	}
	db, err := boltstore.Open(saved[0], store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	p, err := db.Project(t.Context())
	if err != nil || p.Name != "Backed up" {
		t.Errorf("the backup's project: %+v %v", p, err)
	}
}

// TestDocsServiceCommandsParse gives the flags of the guides' commands that
// the tests cannot serve (ports 443 and 80, a public CA, PostgreSQL
// elsewhere) to the service's own parser: each flag exists and its value is
// accepted.
func TestDocsServiceCommandsParse(t *testing.T) {
	checked := 0
	for file, blocks := range docShellBlocks(t) {
		for _, b := range blocks {
			for _, c := range regexp.MustCompile(`(?m)^petstore (--(?:[^\n]*\\\n)*[^\n]*)`).FindAllStringSubmatch(b, -1) {
				out, err := exec.Command("bash", "-c", `ADMIN_TOKEN=$(printf 'x%.0s' {1..32}); printf '%s\0' `+c[1]).Output()
				if err != nil {
					t.Fatalf("%s: %v", c[1], err)
				}
				args := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
				if _, err := parseConfig(args, func(string) string { return "" }, io.Discard); err != nil {
					t.Errorf("%s: petstore %s: %v", file, c[1], err)
				}
				checked++
			}
		}
	}
	if checked < 2 {
		t.Errorf("only %d petstore commands found", checked)
	}
}

// versionLine is what petstore --version prints.
var versionLine = regexp.MustCompile(`^petstore \S+ \((revision [0-9a-f]{40}(, \S+)?|no VCS revision recorded)(, with uncommitted changes)?; go\S+\)$`)

// TestREADMEBuildsABinary runs the README's build commands in the
// checkout, with the binary in a temporary folder: it builds and names its
// version as the README shows.
func TestREADMEBuildsABinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	block := docBlock(t, "README.md", "go build -o petstore .")
	bin := filepath.Join(t.TempDir(), "petstore")
	commands, expected := splitSteps(strings.NewReplacer("-o petstore .", "-o "+bin+" .", "./petstore --version", bin+" --version").Replace(block))
	if len(commands) != 1 || len(expected[0]) != 1 || !versionLine.MatchString(expected[0][0]) || !strings.Contains(commands[0], bin+" --version") {
		t.Fatalf("the README's build block is not a build and a --version with its output:\n%s", block)
	}
	out, err := exec.Command("bash", "-euc", commands[0]).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); !versionLine.MatchString(got) {
		t.Errorf("./petstore --version printed %q, not a version line like the README's", got)
	}
}

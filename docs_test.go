package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"petstore/events"
	"petstore/store"
	"petstore/store/boltstore"
	"petstore/web"
)

// TestREADMEWalkThrough runs the README's walk-through, each shell block as
// written, against a real server, and checks that every output the README
// shows is what the server answers. Two placeholders are filled in: the
// admin token (ADMIN=pat_…) and the address (http://localhost:8080). In an
// expected line, "…" stands for any text (ids and secrets).
func TestREADMEWalkThrough(t *testing.T) {
	runWalkThrough(t)
}

// TestREADMEWalkThroughAfterSunset runs the walk-through against a server
// whose clock is past the sunset of GET /pets/{petId}: it still reads a
// single pet (through the successor), and every Location and Link it meets
// answers 200 on that server, so nothing a client follows is the removed
// call.
func TestREADMEWalkThroughAfterSunset(t *testing.T) {
	doc, err := web.ParseSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := doc.Paths.Find("/pets/{petId}").Get.Extensions[web.ExtSunset].(string)
	sunset, err := time.Parse(time.DateOnly, raw)
	if err != nil {
		t.Fatalf("the sunset date of GET /pets/{petId}: %v", err)
	}
	handlersNow = func() time.Time { return sunset.Add(24 * time.Hour) }
	t.Cleanup(func() { handlersNow = nil })

	in, outputs := runWalkThrough(t)
	if code, body := in.call(t, "GET", "/pets/1", ""); code != 410 {
		t.Fatalf("the server's clock is not past the sunset: GET /pets/1 answered %d %s", code, body)
	}
	followed := 0
	header := regexp.MustCompile(`(?im)^(?:Location: *(\S+)|Link: *(.*))$`)
	target := regexp.MustCompile(`<([^>]*)>`)
	for _, out := range outputs {
		for _, m := range header.FindAllStringSubmatch(out, -1) {
			urls := []string{m[1]}
			if m[1] == "" {
				urls = nil
				for _, l := range target.FindAllStringSubmatch(m[2], -1) {
					urls = append(urls, l[1])
				}
			}
			for _, u := range urls {
				followed++
				if code, body := in.call(t, "GET", strings.TrimPrefix(u, in.base), ""); code != 200 {
					t.Errorf("the walk-through met %s (%q), which answers %d after the sunset: %s", u, m[0], code, body)
				}
			}
		}
	}
	if followed < 2 {
		t.Errorf("only %d Location and Link targets met; has the walk-through moved?", followed)
	}
}

// runWalkThrough runs the README's walk-through, each shell block as
// written, against a server it starts, checks the outputs the README shows,
// and returns the server and every step's output.
func runWalkThrough(t *testing.T) (*instance, []string) {
	t.Helper()
	for _, tool := range []string{"bash", "curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is not installed; .ci/run installs it", tool)
			}
			t.Skipf("%s is not installed (apt-get install curl jq); the walk-through needs it", tool)
		}
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := walkThroughBlocks(t, string(readme))

	in := start(t, nil, "--data", filepath.Join(t.TempDir(), "petstore.db"))
	token := in.printedToken(t)
	fill := strings.NewReplacer("ADMIN=pat_…", "ADMIN="+token, "http://localhost:8080", in.base)

	// The banner the quick start shows is the one the service prints.
	_, banner, _ := strings.Cut(string(readme), "\n```\npetstore: listening on")
	banner, _, _ = strings.Cut("petstore: listening on"+banner, "```")
	banner = strings.NewReplacer("http://localhost:8080", in.base, "./petstore.db", "…").Replace(banner)
	if err := matchOutput(in.out.String(), strings.Split(strings.TrimSpace(banner), "\n")); err != nil {
		t.Errorf("the README's banner: %v\nthe service printed:\n%s", err, in.out)
	}

	steps := 0
	var all []string
	for _, block := range blocks {
		script, expected := splitSteps(fill.Replace(block))
		outputs := runSteps(t, script)
		all = append(all, outputs...)
		for i, want := range expected {
			if len(want) == 0 {
				continue
			}
			steps++
			if err := matchOutput(outputs[i], want); err != nil {
				t.Errorf("README step:\n%s\n%v\ngot:\n%s", script[i], err, outputs[i])
			}
		}
	}
	if steps < 5 {
		t.Errorf("only %d steps with shown output were checked; has the walk-through moved?", steps)
	}
	return in, all
}

// walkThroughBlocks returns the sh blocks of the README section that holds
// the walk-through.
func walkThroughBlocks(t *testing.T, readme string) []string {
	t.Helper()
	_, section, ok := strings.Cut(readme, "\n## A walk through the API")
	if !ok {
		t.Fatal("the README has no walk-through section")
	}
	if i := strings.Index(section, "\n## "); i >= 0 {
		section = section[:i]
	}
	var blocks []string
	for _, m := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(section, -1) {
		blocks = append(blocks, m[1])
	}
	if len(blocks) == 0 {
		t.Fatal("the walk-through has no sh block")
	}
	return blocks
}

// splitSteps cuts a block into commands. Comment lines right after a
// command (no blank line between) are the output the README shows for it;
// other comments are narrative.
func splitSteps(block string) (commands []string, expected [][]string) {
	var cmd []string
	var out []string
	flush := func() {
		if len(cmd) > 0 {
			commands = append(commands, strings.Join(cmd, "\n"))
			expected = append(expected, out)
		}
		cmd, out = nil, nil
	}
	continued := false
	for _, line := range strings.Split(block, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case continued:
			cmd = append(cmd, line)
		case trimmed == "":
			flush()
		case strings.HasPrefix(trimmed, "#"):
			if len(cmd) > 0 {
				out = append(out, strings.TrimPrefix(strings.TrimPrefix(trimmed, "#"), " "))
			}
		default:
			if len(out) > 0 {
				flush()
			}
			cmd = append(cmd, line)
		}
		continued = strings.HasSuffix(trimmed, `\`)
	}
	flush()
	return commands, expected
}

// runSteps runs the commands in one bash, so that variables carry over,
// and returns each one's output.
func runSteps(t *testing.T, commands []string) []string {
	t.Helper()
	const mark = "\n@@step-done@@\n"
	var script strings.Builder
	script.WriteString("set -u\n")
	for _, c := range commands {
		fmt.Fprintf(&script, "%s\nprintf '\\n@@step-done@@\\n'\n", c)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "bash", "-c", script.String()).CombinedOutput()
	if err != nil {
		t.Fatalf("the walk-through failed: %v\n%s", err, out)
	}
	parts := strings.Split(strings.ReplaceAll(string(out), "\r\n", "\n"), mark)
	if len(parts) < len(commands) {
		t.Fatalf("%d outputs for %d commands:\n%s", len(parts), len(commands), out)
	}
	return parts[:len(commands)]
}

// matchOutput checks that the wanted lines appear in the output in order.
func matchOutput(got string, want []string) error {
	lines := strings.Split(got, "\n")
	at := 0
	for _, w := range want {
		re := regexp.MustCompile("^" + strings.ReplaceAll(regexp.QuoteMeta(w), "…", ".+") + "$")
		found := false
		for ; at < len(lines); at++ {
			if re.MatchString(strings.TrimRight(lines[at], " ")) {
				found, at = true, at+1
				break
			}
		}
		if !found {
			return fmt.Errorf("the README shows %q, which the server did not answer (in this order)", w)
		}
	}
	return nil
}

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
	{"petstore migrate --to-data", "not run as written (a database at db.internal): TestMigrateRoundTripGivesTheSameAnswersAndDeliveries runs the same flags, TestMigrateBackAppliesTheRestoreMarks with --restore-marks"},
	{"mv /var/lib/petstore/petstore.db /var/lib/petstore/petstore.db.damaged", "not run: systemctl; the refusal is TestRunRefusesDamagedDataFile"},
	{"oapi-codegen@v2.8.2", "not run (it fetches oapi-codegen): TestGeneratedClients generates and drives the same client"},
	{"# On each VM (10.0.0.11 and 10.0.0.12)", "TestDocsServiceCommandsParse (it needs PostgreSQL, HAProxy and :443)"},
	{"pg_dump --format=custom", "TestRestoreOfAnOlderDump runs the same pg_dump and the guide's pg_restore"},
	{"pg_restore --clean", "TestRestoreRunbook"},
	{"pg_resetwal -e N", "not run as written (a server's cluster): store/postgres's TestRestoreIntoAClusterBehind runs pg_resetwal -e on the cluster restored into"},
	{"petstore unrevoke --database", "not run as written (a key id of a server's database): store/postgres's TestUnrevokeBeforeARestore makes the same call"},
	{"petstore unrevoke --data /var", "not run as written (a server's paths): TestUnrevokeCommand runs the command on a bbolt file of its own, and store/boltstore's TestFilePutBackFromABackup makes the same call"},
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
	token := in.printedToken(t)
	if code, body := in.call(t, "PATCH", "/admin/project", `{"name":"Backed up"}`, "Authorization", "Bearer "+token); code != 200 {
		t.Fatalf("PATCH /admin/project: %d %s", code, body)
	}
	dir := t.TempDir()
	cmd := exec.Command("bash", "-euc", strings.ReplaceAll(block, "http://localhost:8080", in.base))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "ADMIN="+token)
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
	parallel(t) // a build: it overlaps the tests that wait
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

// TestDocsLinksResolve checks every relative link of the README and of
// docs/: the file it names exists, and the anchor, if any, is a heading of
// that file as GitHub renders it. Links to other sites are not followed
// (the tests run offline).
func TestDocsLinksResolve(t *testing.T) {
	files, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append([]string{"README.md"}, files...)
	anchors := map[string]map[string]bool{}
	anchorsOf := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		text, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		anchors[path] = headingAnchors(string(text))
		return anchors[path]
	}
	links := 0
	for _, file := range files {
		text, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, target := range markdownLinks(string(text)) {
			if regexp.MustCompile(`^[a-z]+:`).MatchString(target) {
				continue // https:, mailto:
			}
			links++
			path, anchor, _ := strings.Cut(target, "#")
			if path == "" {
				path = file
			} else {
				path = filepath.Join(filepath.Dir(file), path)
			}
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s: the link %q names %s, which does not exist", file, target, path)
				continue
			}
			if anchor == "" {
				continue
			}
			if !strings.HasSuffix(path, ".md") {
				t.Errorf("%s: the link %q has an anchor into a file that is not Markdown", file, target)
			} else if !anchorsOf(path)[anchor] {
				t.Errorf("%s: the link %q names the anchor #%s, which %s has no heading for", file, target, anchor, path)
			}
		}
	}
	if links < 10 {
		t.Errorf("only %d relative links found; is the link pattern still right?", links)
	}
}

// markdownLinks returns the targets of the inline links [text](target) of
// a Markdown text, outside code blocks and code spans.
func markdownLinks(text string) []string {
	var targets []string
	parts := strings.Split(text, "```")
	for i := 0; i < len(parts); i += 2 { // the odd parts are code blocks
		prose := regexp.MustCompile("`[^`\n]*`").ReplaceAllString(parts[i], "")
		for _, m := range regexp.MustCompile(`\]\(([^)\s]+)\)`).FindAllStringSubmatch(prose, -1) {
			targets = append(targets, m[1])
		}
	}
	return targets
}

// headingAnchors returns the anchors GitHub gives a Markdown text's
// headings: lower case, punctuation dropped, spaces as hyphens, and -1, -2
// after repeats.
func headingAnchors(text string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	parts := strings.Split(text, "```")
	for i := 0; i < len(parts); i += 2 {
		for _, line := range strings.Split(parts[i], "\n") {
			if !strings.HasPrefix(line, "#") {
				continue
			}
			heading := strings.TrimSpace(strings.TrimLeft(line, "#"))
			slug := strings.Map(func(r rune) rune {
				switch {
				case r == ' ' || r == '-':
					return '-'
				case r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r > 127:
					return r
				}
				return -1
			}, strings.ToLower(heading))
			if n := seen[slug]; n > 0 {
				anchors[slug+"-"+strconv.Itoa(n)] = true
			} else {
				anchors[slug] = true
			}
			seen[slug]++
		}
	}
	return anchors
}

// The receiver example of docs/events.md compiles as it is.
func TestEventsReceiverExampleBuilds(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go build")
	}
	doc, err := os.ReadFile("docs/events.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "```go\n")
	src, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("docs/events.md has no go block")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module receiver\n\ngo 1.22\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "vet", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the receiver example does not build: %v\n%s", err, out)
	}
}

// TestREADMENamesWhatTheTestsUse: every program a test looks up on PATH is
// named in the README's Tests section, and every data file the README
// tells a reader to create in the checkout is ignored by git.
func TestREADMENamesWhatTheTestsUse(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, tests, ok := strings.Cut(string(readme), "\n## Tests\n")
	if !ok {
		t.Fatal("README.md has no Tests section")
	}
	tests, _, _ = strings.Cut(tests, "\n## ")
	lookPath := regexp.MustCompile(`exec\.LookPath\("([a-z0-9-]+)"\)`)
	err = filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return err
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range lookPath.FindAllStringSubmatch(string(src), -1) {
			if !strings.Contains(tests, "`"+m[1]+"`") {
				t.Errorf("%s looks up %s, which the README's Tests section does not name", path, m[1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`--data ([\w.-]+\.db)\b`).FindAllStringSubmatch(string(readme), -1) {
		if out, err := exec.Command("git", "check-ignore", "--no-index", m[1]).Output(); err != nil || strings.TrimSpace(string(out)) != m[1] {
			t.Errorf("the README creates %s in the checkout, which .gitignore does not ignore", m[1])
		}
	}
	// The first run is not silent: go run prints a line per module it
	// downloads.
	if strings.Contains(string(readme), "prints nothing") || !strings.Contains(string(readme), "`go: downloading`") {
		t.Error("the README's quick start must say that the first go run prints go: downloading lines")
	}
}

// TestDashboardRetrySpanIsTheSchedules: the dashboard's Webhooks tab says
// for how long failed deliveries are retried; that is what events.Schedule
// adds up to (it once said a day and a half of a schedule that ends
// within 28 hours).
func TestDashboardRetrySpanIsTheSchedules(t *testing.T) {
	page, err := os.ReadFile("web/templates/dashboard.html")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`retried for (about [^;.]+)`).FindSubmatch(page)
	if m == nil {
		t.Fatal("web/templates/dashboard.html no longer says for how long failed deliveries are retried")
	}
	var total time.Duration
	for _, wait := range events.Schedule {
		total += wait
	}
	var want string
	switch days := total.Hours() / 24; {
	case days >= 0.75 && days < 1.25:
		want = "about a day"
	case days >= 1.25 && days < 1.75:
		want = "about a day and a half"
	default:
		t.Fatalf("events.Schedule adds up to %v: name that span in dashboard.html and here", total)
	}
	if string(m[1]) != want {
		t.Errorf("the dashboard says failed deliveries are retried for %q; events.Schedule adds up to %v, %q", m[1], total, want)
	}
}

// The README's first-start banner is the one a first start prints, line
// for line (the token aside): a new user compares the two.
func TestReadmeBannerIsTheService(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(readme), "```\npetstore: listening on")
	block, _, _ = strings.Cut(block, "```")
	if !ok {
		t.Fatal("README.md shows no first-start banner")
	}
	var b strings.Builder
	printBanner(&b, config{listen: "localhost:8080", data: "./petstore.db"}, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}, "pat_…")
	if want := "petstore: listening on" + block; b.String() != want {
		t.Errorf("the banner printed:\n%s\nREADME.md shows:\n%s", b.String(), want)
	}
}

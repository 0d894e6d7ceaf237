package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

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
	token := regexp.MustCompile(`admin token\s+(pat_\S+)`).FindStringSubmatch(in.out.String())
	if token == nil {
		t.Fatalf("no admin token printed:\n%s", in.out)
	}
	fill := strings.NewReplacer("ADMIN=pat_…", "ADMIN="+token[1], "http://localhost:8080", in.base)

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

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"petstore/domains/domaintest"
)

// run is the service as main runs it, without an upgrade's signals.
func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	return runWith(ctx, args, getenv, stdout, upgrades{})
}

// instance is one run() of the service on a loopback port.
type instance struct {
	base   string
	out    output
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
}

// output is what run writes to, for the test to read back.
type output interface {
	io.Writer
	String() string
}

func start(t *testing.T, env map[string]string, args ...string) *instance {
	t.Helper()
	return startWriting(t, &domaintest.SyncBuffer{}, env, args...)
}

// listeningOn finds the service's base URL in its banner.
var listeningOn = regexp.MustCompile(`listening on (http://\S+)`)

// startWriting is start with run writing to out.
func startWriting(t *testing.T, out output, env map[string]string, args ...string) *instance {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	in := &instance{out: out, cancel: cancel, done: make(chan error, 1)}
	args = append([]string{"--listen", "127.0.0.1:0", "--rate-limit", "0"}, args...)
	go func() { in.done <- run(ctx, args, func(k string) string { return env[k] }, in.out) }()
	// Generous: CI runs the race detector on a loaded 2-core machine.
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if m := listeningOn.FindStringSubmatch(in.out.String()); m != nil {
			in.base = m[1]
			t.Cleanup(func() { in.stop(t) })
			return in
		}
		select {
		case err := <-in.done:
			t.Fatalf("run returned before listening: %v\n%s", err, in.out)
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatalf("no 'listening on' line in:\n%s", in.out)
	return nil
}

// printedToken waits for the admin token that a first start prints: the
// store, and so the token, comes after the listeners and their banner.
func (in *instance) printedToken(t *testing.T) string {
	t.Helper()
	printed := regexp.MustCompile(`admin token\s+(pat_\S+)`)
	var token string
	domaintest.WaitFor(t, time.Minute, 10*time.Millisecond, func() error {
		m := printed.FindStringSubmatch(in.out.String())
		if m == nil {
			return fmt.Errorf("no admin token printed:\n%s", in.out)
		}
		token = m[1]
		return nil
	})
	return token
}

func (in *instance) stop(t *testing.T) {
	t.Helper()
	in.stopWithin(t, 20*time.Second)
}

// stopWithin ends run's context and fails the test unless run returns
// within limit, without an error.
func (in *instance) stopWithin(t *testing.T, limit time.Duration) {
	t.Helper()
	in.once.Do(func() {
		in.cancel()
		select {
		case err := <-in.done:
			if err != nil {
				t.Errorf("run: %v", err)
			}
		case <-time.After(limit):
			t.Errorf("run did not return within %s of the end of its context", limit)
		}
	})
}

// call sends a request to in and returns the answer's status and body,
// failing the test when there is no answer.
func (in *instance) call(t *testing.T, method, path, body string, header ...string) (int, string) {
	t.Helper()
	code, data, err := in.do(http.DefaultClient, method, path, body, header...)
	if err != nil {
		t.Fatal(err)
	}
	return code, data
}

// do is call with a client of the caller's, for other goroutines than the
// test's, which must not call t.Fatal: an error is returned instead.
func (in *instance) do(client *http.Client, method, path, body string, header ...string) (int, string, error) {
	req, err := http.NewRequest(method, in.base+path, strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	return res.StatusCode, string(data), err
}

// TestRunServesAndSurvivesRestart starts the service twice on one data
// file: the admin token printed at first start, an API key, and every
// entity written before the restart are there after it.
func TestRunServesAndSurvivesRestart(t *testing.T) {
	data := filepath.Join(t.TempDir(), "petstore.db")
	first := start(t, nil, "--data", data)
	token := first.printedToken(t)
	for _, probe := range []string{"/healthz", "/readyz", "/openapi.yaml", "/openapi.json", "/"} {
		if code, body := first.call(t, "GET", probe, ""); code != 200 {
			t.Errorf("GET %s: %d %s", probe, code, body)
		}
	}
	code, body := first.call(t, "POST", "/admin/api-keys", `{"name":"restart"}`, "Authorization", "Bearer "+token)
	if code != 201 {
		t.Fatalf("creating an API key: %d %s", code, body)
	}
	var key struct{ Secret string }
	_ = json.Unmarshal([]byte(body), &key)
	if code, body := first.call(t, "POST", "/categories", `{"name":"dogs"}`, "X-API-Key", key.Secret); code != 201 {
		t.Fatalf("%d %s", code, body)
	}
	if code, body := first.call(t, "POST", "/pets", `{"name":"Rex","categoryId":1}`, "X-API-Key", key.Secret); code != 201 {
		t.Fatalf("%d %s", code, body)
	}
	first.call(t, "PUT", "/store/inventory/1", `{"quantity":7}`, "X-API-Key", key.Secret)
	if code, body := first.call(t, "POST", "/store/orders", `{"petId":1,"quantity":2}`, "X-API-Key", key.Secret); code != 201 {
		t.Fatalf("%d %s", code, body)
	}
	first.stop(t)

	second := start(t, nil, "--data", data)
	if strings.Contains(second.out.String(), token) {
		t.Error("the admin token is printed again at the second start")
	}
	for path, want := range map[string]string{
		"/pets":              `"name":"Rex"`,
		"/store/inventory/1": `"quantity":5`,
		"/store/orders/1":    `"quantity":2`,
	} {
		if code, body := second.call(t, "GET", path, ""); code != 200 || !strings.Contains(body, want) {
			t.Errorf("after restart GET %s: %d %s, want %s", path, code, body, want)
		}
	}
	if code, _ := second.call(t, "POST", "/categories", `{"name":"cats"}`, "X-API-Key", key.Secret); code != 201 {
		t.Errorf("the API key does not work after restart: %d", code)
	}
	if code, body := second.call(t, "GET", "/admin/project", "", "Authorization", "Bearer "+token); code != 200 || strings.Count(body, `"specSha256"`) != 1 {
		t.Errorf("the admin token after restart, and one deploy for one spec: %d %s", code, body)
	}
}

func TestConfigFromFlagsAndEnvironment(t *testing.T) {
	env := map[string]string{
		"PETSTORE_DOMAIN":       "petstore.example.com",
		"PETSTORE_DNS_RESOLVER": "127.0.0.1:8053, 127.0.0.1:8054",
		"PETSTORE_RATE_LIMIT":   "5",
		"PETSTORE_LISTEN":       "127.0.0.1:9999",
	}
	cfg, err := parseConfig([]string{"--listen", "127.0.0.1:1234", "--public-ip", "192.0.2.1", "--public-ip", "2001:db8::1"}, func(k string) string { return env[k] }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprintf("%s|%s|%s|%v|%v|%v", cfg.listen, cfg.domain, cfg.cnameTarget, cfg.dnsResolvers, cfg.publicIPs, cfg.rateLimit)
	want := "127.0.0.1:1234|petstore.example.com|cname.petstore.example.com|[127.0.0.1:8053 127.0.0.1:8054]|[192.0.2.1 2001:db8::1]|5"
	if got != want {
		t.Errorf("config %s, want %s", got, want)
	}
	cfg, err = parseConfig([]string{"--dns-allow-private"}, func(k string) string {
		return map[string]string{"PETSTORE_ALLOW_TEST_TLDS": "true"}[k]
	}, io.Discard)
	if err != nil || !cfg.dnsAllowPrivate || !cfg.allowTestTLDs {
		t.Errorf("--dns-allow-private and PETSTORE_ALLOW_TEST_TLDS: %v %v %v", cfg.dnsAllowPrivate, cfg.allowTestTLDs, err)
	}
	if _, err := parseConfig(nil, func(k string) string {
		return map[string]string{"PETSTORE_RATE_LIMIT": "fast"}[k]
	}, io.Discard); err == nil || !strings.Contains(err.Error(), "PETSTORE_RATE_LIMIT") {
		t.Errorf("a bad environment value: %v", err)
	}
	if _, err := parseConfig([]string{"--rate-limit", "-1"}, func(string) string { return "" }, io.Discard); err == nil {
		t.Error("a negative rate limit is accepted")
	}
	var help bytes.Buffer
	if _, err := parseConfig([]string{"--help"}, func(string) string { return "" }, &help); err == nil || !strings.Contains(help.String(), "--dns-resolver") && !strings.Contains(help.String(), "-dns-resolver") {
		t.Errorf("--help: %v\n%s", err, help.String())
	}
}

func TestConfigCORSOrigins(t *testing.T) {
	env := func(k string) string {
		return map[string]string{"PETSTORE_CORS_ORIGIN": "https://app.example.com, http://localhost:3000"}[k]
	}
	cfg, err := parseConfig(nil, env, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(cfg.corsOrigins); got != "[https://app.example.com http://localhost:3000]" {
		t.Errorf("PETSTORE_CORS_ORIGIN gives %s", got)
	}
	cfg, err = parseConfig([]string{"--cors-origin", "https://a.example", "--cors-origin", "https://b.example"}, env, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(cfg.corsOrigins); got != "[https://a.example https://b.example]" {
		t.Errorf("repeated --cors-origin gives %s", got)
	}
	if cfg, _ := parseConfig(nil, func(string) string { return "" }, io.Discard); len(cfg.corsOrigins) != 0 {
		t.Errorf("CORS is on by default: %v", cfg.corsOrigins)
	}
	if _, err := parseConfig([]string{"--cors-origin", "https://app.example.com/"}, func(string) string { return "" }, io.Discard); err == nil || !strings.Contains(err.Error(), "--cors-origin") {
		t.Errorf("an origin with a path: %v", err)
	}
}

// TestRunRefusesAWeakAdminToken: a short admin token, or one with white
// space around it (stored as given, compared trimmed: the operator would be
// locked out), stops the start with a message that says what is wrong.
func TestRunRefusesAWeakAdminToken(t *testing.T) {
	long := strings.Repeat("k", minAdminTokenLength)
	for _, tc := range []struct {
		name, flag, env, mentions string
	}{
		{"one character", "a", "", "at least 32"},
		{"31 characters", long[1:], "", "at least 32"},
		{"a space before", " " + long, "", "white space"},
		{"a newline after", long + "\n", "", "white space"},
		{"short, from the environment", "", "short-token", "PETSTORE_ADMIN_TOKEN"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"--data", filepath.Join(t.TempDir(), "petstore.db"), "--listen", "127.0.0.1:0"}
			if tc.flag != "" {
				args = append(args, "--admin-token", tc.flag)
			}
			getenv := func(k string) string {
				if k == "PETSTORE_ADMIN_TOKEN" {
					return tc.env
				}
				return ""
			}
			// Cancelled: a start that is not refused ends at once, with no error.
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			err := run(ctx, args, getenv, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.mentions) {
				t.Fatalf("run: %v; want an error that mentions %q", err, tc.mentions)
			}
		})
	}
	if _, err := parseConfig([]string{"--admin-token", long}, func(string) string { return "" }, io.Discard); err != nil {
		t.Errorf("a token of %d characters: %v", len(long), err)
	}
}

package handlers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	// The runtime of the clients oapi-codegen generates: TestGeneratedClients
	// compiles them within this module, so go.mod must require it.
	_ "github.com/oapi-codegen/runtime"

	"petstore/domains"
	"petstore/domains/dnscheck"
	"petstore/handlers"
)

// generatedClientPackage is where the test places the generated clients and
// the driver, through the go command's -overlay: nothing is written to the
// source tree, and the build uses this module's go.mod and build cache.
const generatedClientPackage = "handlers/internal/generatedclient"

// TestGeneratedClients generates Go clients for both OpenAPI documents with
// oapi-codegen (a tool dependency in go.mod) and its default options,
// compiles them with the module's testdata/generatedclient/driver.go, and
// runs the driver against the real server through a proxy that validates
// every request and answer against the documents. It fails when the
// generated code does not compile, when a type cannot be filled as a user
// would (the driver's requests), when an answer does not decode into its
// generated type, and when an operation of either document is left uncalled.
func TestGeneratedClients(t *testing.T) {
	if testing.Short() {
		t.Skip("builds oapi-codegen and the generated clients")
	}
	t.Parallel()
	driver, err := generated.wait()
	if err != nil {
		t.Fatal(err)
	}

	// Custom domains need a CNAME target; DNS is answered by nothing (a
	// closed loopback port), so that a verify fails fast and offline.
	// The driver's webhook points at a documentation address (192.0.2.1),
	// which only --webhook-allow-private accepts; no engine runs here, so
	// nothing is ever sent there.
	ts := newTestServer(t, withDomains(t, domains.Config{
		Platform: dnscheck.Platform{Domain: "petstore.test", CNAMETarget: "cname.petstore.test"},
		Checker:  &dnscheck.Checker{Resolvers: []string{"127.0.0.1:9"}, Timeout: 100 * time.Millisecond},
	}), func(c *handlers.Config) { c.WebhookPolicy.AllowPrivate = true })
	called := map[string]bool{}
	var mu sync.Mutex
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		opID, res := ts.with(t).forward(r)
		mu.Lock()
		called[opID] = true
		mu.Unlock()
		for k, v := range res.header {
			w.Header()[k] = v
		}
		w.WriteHeader(res.status)
		w.Write(res.body)
	}))
	t.Cleanup(proxy.Close)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, driver)
	cmd.Env = append(os.Environ(), "PETSTORE_URL="+proxy.URL, "PETSTORE_API_KEY="+ts.apiKey, "PETSTORE_ADMIN_TOKEN="+ts.admin)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the driver, through the generated clients: %v\n%s", err, out)
	}

	pub, admin := specs(t)
	for _, d := range []*specDoc{pub, admin} {
		for path, item := range d.doc.Paths.Map() {
			for method, op := range item.Operations() {
				if !called[op.OperationID] {
					t.Errorf("%s %s (%s) was not called through the generated client", method, path, op.OperationID)
				}
			}
		}
	}
}

// forward sends a request the driver made to the test server, validates
// request and answer against the documents as every test here does, and
// returns the answer with the operation's id.
func (ts *testServer) forward(r *http.Request) (string, *response) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		ts.tb.Errorf("reading the driver's request: %v", err)
	}
	req, err := http.NewRequest(r.Method, ts.http.URL+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		ts.tb.Errorf("%v", err)
		return "", &response{status: http.StatusBadGateway}
	}
	for k, v := range r.Header {
		if !slices.Contains([]string{"Accept-Encoding", "Connection", "Content-Length"}, k) {
			req.Header[k] = v
		}
	}
	res, err := noRedirects.Do(req)
	if err != nil {
		ts.tb.Errorf("%s %s: %v", r.Method, r.URL, err)
		return "", &response{status: http.StatusBadGateway}
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		ts.tb.Errorf("%s %s: %v", r.Method, r.URL, err)
	}
	answer := &response{tb: ts.tb, status: res.StatusCode, header: res.Header, body: data}
	ts.validate(req, body, answer)
	opID, _ := matchSpec(req, body, answer.status, answer.header, answer.body)
	return opID, answer
}

// generated is the driver compiled with the generated clients. Building
// it is most of TestGeneratedClients's time and all of it other programs'
// (the go command, oapi-codegen), so TestMain starts it before the tests
// run (startEarly) and the test waits for it: it overlaps the package's
// other tests.
var generated driverBuild

type driverBuild struct {
	once   sync.Once
	done   chan struct{}
	cancel context.CancelFunc
	tmp    string // the folder of the generated code and the driver
	driver string
	err    error
}

// startEarly starts the build when the run is to include
// TestGeneratedClients.
func (b *driverBuild) startEarly() {
	run := flag.Lookup("test.run").Value.String()
	if testing.Short() || flag.Lookup("test.list").Value.String() != "" {
		return
	}
	if matched, err := regexp.MatchString(strings.Split(run, "/")[0], "TestGeneratedClients"); run == "" || err == nil && matched {
		b.start()
	}
}

func (b *driverBuild) start() {
	b.once.Do(func() {
		ctx, cancel := context.WithCancel(context.Background())
		b.done, b.cancel = make(chan struct{}), cancel
		go func() {
			defer close(b.done)
			b.driver, b.err = b.build(ctx)
		}()
	})
}

// wait returns the driver, once built.
func (b *driverBuild) wait() (string, error) {
	b.start()
	<-b.done
	return b.driver, b.err
}

// stop ends an unfinished build and removes its files.
func (b *driverBuild) stop() {
	if b.done == nil {
		return
	}
	b.cancel()
	<-b.done
	if b.tmp != "" {
		os.RemoveAll(b.tmp)
	}
}

// build generates the clients of both documents and compiles the driver
// with them, into a temporary folder.
func (b *driverBuild) build(ctx context.Context) (string, error) {
	root, err := filepath.Abs("..")
	if err != nil {
		return "", err
	}
	if b.tmp, err = os.MkdirTemp("", "petstore-generatedclient-"); err != nil {
		return "", err
	}
	tmp := b.tmp
	// The first run builds the generator (about a minute); later runs take
	// it from the build cache.
	out, err := goCommand(ctx, root, "tool", "-n", "oapi-codegen")
	if err != nil {
		return "", err
	}
	generator := strings.TrimSpace(string(out))
	overlay := map[string]string{
		filepath.Join(root, generatedClientPackage, "driver", "main.go"): filepath.Join(root, "testdata", "generatedclient", "driver.go"),
	}
	for _, g := range []struct{ pkg, spec string }{
		{"publicapi", "openapi.yaml"},
		{"adminapi", "handlers/openapi-admin.yaml"},
	} {
		cmd := exec.CommandContext(ctx, generator, "-package", g.pkg, filepath.Join(root, g.spec))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		code, err := cmd.Output()
		if err != nil {
			return "", fmt.Errorf("oapi-codegen %s: %v\n%s", g.spec, err, stderr.Bytes())
		}
		file := filepath.Join(tmp, g.pkg+".go")
		if err := os.WriteFile(file, code, 0o644); err != nil {
			return "", err
		}
		overlay[filepath.Join(root, generatedClientPackage, g.pkg, "client.gen.go")] = file
	}
	overlayJSON, err := json.Marshal(map[string]any{"Replace": overlay})
	if err != nil {
		return "", err
	}
	overlayFile := filepath.Join(tmp, "overlay.json")
	if err := os.WriteFile(overlayFile, overlayJSON, 0o644); err != nil {
		return "", err
	}
	driver := filepath.Join(tmp, "driver")
	if _, err := goCommand(ctx, root, "build", "-overlay", overlayFile, "-o", driver, "./"+generatedClientPackage+"/driver"); err != nil {
		return "", err
	}
	return driver, nil
}

// goCommand runs the go command in dir and returns its standard output.
func goCommand(ctx context.Context, dir string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return out, nil
}

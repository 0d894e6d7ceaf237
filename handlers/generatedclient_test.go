package handlers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
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
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	// The first run builds the generator (about a minute); later runs take
	// it from the build cache.
	generator := strings.TrimSpace(string(goCommand(t, root, "tool", "-n", "oapi-codegen")))
	overlay := map[string]string{
		filepath.Join(root, generatedClientPackage, "driver", "main.go"): filepath.Join(root, "testdata", "generatedclient", "driver.go"),
	}
	for _, g := range []struct{ pkg, spec string }{
		{"publicapi", "openapi.yaml"},
		{"adminapi", "handlers/openapi-admin.yaml"},
	} {
		cmd := exec.Command(generator, "-package", g.pkg, filepath.Join(root, g.spec))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		code, err := cmd.Output()
		if err != nil {
			t.Fatalf("oapi-codegen %s: %v\n%s", g.spec, err, stderr.Bytes())
		}
		file := filepath.Join(tmp, g.pkg+".go")
		if err := os.WriteFile(file, code, 0o644); err != nil {
			t.Fatal(err)
		}
		overlay[filepath.Join(root, generatedClientPackage, g.pkg, "client.gen.go")] = file
	}
	overlayJSON, err := json.Marshal(map[string]any{"Replace": overlay})
	if err != nil {
		t.Fatal(err)
	}
	overlayFile := filepath.Join(tmp, "overlay.json")
	if err := os.WriteFile(overlayFile, overlayJSON, 0o644); err != nil {
		t.Fatal(err)
	}
	driver := filepath.Join(tmp, "driver")
	goCommand(t, root, "build", "-overlay", overlayFile, "-o", driver, "./"+generatedClientPackage+"/driver")

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

// goCommand runs the go command in dir and returns its standard output.
func goCommand(t *testing.T, dir string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return out
}

// Package domaintest starts the real DNS server and ACME CA the custom
// domain tests run against: pebble-challtestsrv and pebble, Go tool
// dependencies built from the module cache, so `go test ./...` needs
// nothing but Go. Every helper takes the testing.TB it reports to, so that
// subtests can share a server.
package domaintest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"petstore/store/postgres/pgtest"
)

const (
	challtestsrvPkg = "github.com/letsencrypt/pebble/v2/cmd/pebble-challtestsrv"
	pebblePkg       = "github.com/letsencrypt/pebble/v2/cmd/pebble"
	pebbleModule    = "github.com/letsencrypt/pebble/v2"
)

// goEnv is what helpers need of the go command, looked up once.
var goEnv = sync.OnceValues(func() (env struct{ goCmd, modRoot string }, err error) {
	// `go test` runs test binaries with GOROOT/bin first in PATH.
	if env.goCmd, err = exec.LookPath("go"); err != nil {
		return env, errGoMissing
	}
	out, err := goOutput(env.goCmd, "", "env", "GOMOD")
	if err != nil {
		return env, err
	}
	gomod := strings.TrimSpace(out)
	if gomod == "" || gomod == os.DevNull {
		return env, errors.New("domaintest: not inside a Go module (go env GOMOD is empty)")
	}
	env.modRoot = filepath.Dir(gomod)
	return env, nil
})

var errGoMissing = errors.New("the go command is not installed")

func goOutput(goCmd, dir string, args ...string) (string, error) {
	cmd := exec.Command(goCmd, args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out), nil
}

// requireGo returns the go command and module root, skipping the test
// without go (nothing can be built) and failing it otherwise.
func requireGo(tb testing.TB) (goCmd, modRoot string) {
	tb.Helper()
	env, err := goEnv()
	if errors.Is(err, errGoMissing) {
		tb.Skip("domaintest: skipping, the go command is needed to build pebble and pebble-challtestsrv and is not installed")
	}
	if err != nil {
		tb.Fatalf("domaintest: %v", err)
	}
	return env.goCmd, env.modRoot
}

var (
	toolMu    sync.Mutex
	toolPaths = map[string]string{}
)

// toolBinary builds a tool package once per test binary and returns its
// path; `go tool -n` keeps it in the build cache for later runs.
func toolBinary(tb testing.TB, pkg string) string {
	tb.Helper()
	goCmd, modRoot := requireGo(tb)
	toolMu.Lock()
	defer toolMu.Unlock()
	if p, ok := toolPaths[pkg]; ok {
		return p
	}
	start := time.Now()
	out, err := goOutput(goCmd, modRoot, "tool", "-n", pkg)
	if err != nil {
		tb.Fatalf("domaintest: building %s: %v", pkg, err)
	}
	// With -n and no arguments, go tool prints the executable's path.
	p := strings.TrimSpace(out)
	if _, err := os.Stat(p); err != nil {
		tb.Fatalf("domaintest: go tool -n %s printed %q, which is not a file: %v", pkg, p, err)
	}
	if d := time.Since(start); d > 5*time.Second {
		tb.Logf("domaintest: built %s in %s", pkg, d.Round(time.Second))
	}
	toolPaths[pkg] = p
	return p
}

// pebbleDir returns the pebble module's directory, for its test certificates.
var pebbleDir = sync.OnceValues(func() (string, error) {
	env, err := goEnv()
	if err != nil {
		return "", err
	}
	out, err := goOutput(env.goCmd, env.modRoot, "list", "-m", "-f", "{{.Dir}}", pebbleModule)
	if err != nil {
		return "", err
	}
	dir := strings.TrimSpace(out)
	if dir == "" {
		return "", fmt.Errorf("domaintest: %s is not in the module cache (go mod download %s)", pebbleModule, pebbleModule)
	}
	return dir, nil
})

// freePort returns a loopback TCP port that no other process's connection
// or port-0 listener takes before the server meant for it starts (see
// pgtest.FreePort): pebble's challenge ports, for one, are only listened
// on once the service under test starts.
func freePort(tb testing.TB) int {
	tb.Helper()
	port, err := pgtest.FreePort()
	if err != nil {
		tb.Fatalf("domaintest: %v", err)
	}
	return port
}

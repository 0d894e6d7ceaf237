package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// builds are the service's binaries that tests run as processes of their
// own, each built once per test binary (linking is most of a build's
// cost): the crash tests and TestUpgradeInPlace share the old version's.
// Tests copy a build before they change it.
var builds struct {
	mu   sync.Mutex
	dir  string
	done map[string]*serviceBuild
}

type serviceBuild struct {
	once sync.Once
	path string
	err  error
}

// buildService returns the service built with version as its version at
// link time (buildinfo), building it the first time it is asked for.
func buildService(t *testing.T, version string) string {
	t.Helper()
	builds.mu.Lock()
	if builds.done == nil {
		builds.done = map[string]*serviceBuild{}
	}
	b := builds.done[version]
	if b == nil {
		b = &serviceBuild{}
		builds.done[version] = b
	}
	if builds.dir == "" {
		dir, err := os.MkdirTemp("", "petstore-test-builds-")
		if err != nil {
			builds.mu.Unlock()
			t.Fatal(err)
		}
		builds.dir = dir
	}
	dir := builds.dir
	builds.mu.Unlock()
	b.once.Do(func() {
		b.path = filepath.Join(dir, "petstore-"+version)
		out, err := exec.Command("go", "build", "-ldflags", "-X petstore/buildinfo.version="+version, "-o", b.path, ".").CombinedOutput()
		if err != nil {
			b.err = fmt.Errorf("go build %s: %v\n%s", version, err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// removeBuilds removes the builds, when the tests are over.
func removeBuilds() {
	builds.mu.Lock()
	defer builds.mu.Unlock()
	if builds.dir != "" {
		_ = os.RemoveAll(builds.dir)
	}
}

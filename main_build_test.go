package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// builds are the service's binaries that tests run as processes of their
// own, each made once per test binary (linking is most of a build's cost):
// the crash tests, TestUpgradeInPlace and the busy port's message share
// the old version's. Tests copy a build before they change it.
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
// link time (buildinfo), making it the first time it is asked for.
func buildService(t *testing.T, version string) string {
	t.Helper()
	path, err := serviceBinary(version)
	if err != nil {
		t.Fatal(err)
	}
	return path
}

func serviceBinary(version string) (string, error) {
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
			return "", err
		}
		builds.dir = dir
	}
	dir := builds.dir
	builds.mu.Unlock()
	b.once.Do(func() {
		b.path = filepath.Join(dir, "petstore-"+version)
		if version != upgradeOldVersion && len(version) == len(upgradeOldVersion) {
			b.err = relabel(upgradeOldVersion, version, b.path)
			return
		}
		out, err := exec.Command("go", "build", "-ldflags", "-X petstore/buildinfo.version="+version, "-o", b.path, ".").CombinedOutput()
		if err != nil {
			b.err = fmt.Errorf("go build %s: %v\n%s", version, err, out)
		}
	})
	return b.path, b.err
}

// relabel writes to path the build of version from, with version written
// over it wherever the linker put it (the variable's value and the
// command line the binary's build information keeps): what a second link
// with version in its -ldflags would make, byte for byte but for the
// build ID, at the cost of a copy. A version of another length cannot
// be written over one, and is built.
func relabel(from, version, path string) error {
	base, err := serviceBinary(from)
	if err != nil {
		return err
	}
	bin, err := os.ReadFile(base)
	if err != nil {
		return err
	}
	if n := bytes.Count(bin, []byte(from)); n == 0 {
		return fmt.Errorf("the build of %s does not hold its version", from)
	}
	return os.WriteFile(path, bytes.ReplaceAll(bin, []byte(from), []byte(version)), 0o755)
}

// removeBuilds removes the builds, when the tests are over.
func removeBuilds() {
	builds.mu.Lock()
	defer builds.mu.Unlock()
	if builds.dir != "" {
		_ = os.RemoveAll(builds.dir)
	}
}

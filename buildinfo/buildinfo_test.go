package buildinfo_test

import (
	"runtime/debug"
	"testing"

	"petstore/buildinfo"
)

// TestFromBuildInfo reads the build information of a binary built in a git
// checkout, as go version -m prints it, and of one built without VCS.
func TestFromBuildInfo(t *testing.T) {
	stamped, err := debug.ParseBuildInfo(`go	go1.26.8
path	petstore
mod	petstore	v0.0.0-20261123104554-20ec8fe4be9c+dirty	
build	-buildmode=exe
build	vcs=git
build	vcs.revision=20ec8fe4be9c4268920ffba49389d5b405fe82ef
build	vcs.time=2026-11-23T10:45:54Z
build	vcs.modified=true
`)
	if err != nil {
		t.Fatal(err)
	}
	stamped.GoVersion = "go1.26.8" // the runtime sets it; ParseBuildInfo leaves it out
	b := buildinfo.From(stamped)
	want := buildinfo.Build{Version: "v0.0.0-20261123104554-20ec8fe4be9c+dirty", Revision: "20ec8fe4be9c4268920ffba49389d5b405fe82ef", Time: "2026-11-23T10:45:54Z", Modified: true, GoVersion: "go1.26.8"}
	if b != want {
		t.Errorf("From: %+v, want %+v", b, want)
	}
	if s, want := b.String(), "petstore v0.0.0-20261123104554-20ec8fe4be9c+dirty (revision 20ec8fe4be9c4268920ffba49389d5b405fe82ef, 2026-11-23T10:45:54Z, with uncommitted changes; go1.26.8)"; s != want {
		t.Errorf("String:\n%s\nwant\n%s", s, want)
	}

	bare := buildinfo.From(&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "petstore"}})
	if s, want := bare.String(), "petstore (devel) (no VCS revision recorded; go1.26.8)"; s != want {
		t.Errorf("String without VCS: %s, want %s", s, want)
	}
	if b.Same(bare) || !b.Same(want) {
		t.Error("Same is wrong")
	}
}

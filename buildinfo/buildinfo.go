// Package buildinfo says which build of petstore is running, from the
// build information Go writes into every binary.
package buildinfo

import (
	"runtime"
	"runtime/debug"
	"strings"
)

// Build is one build of the binary. The VCS fields are empty when Go did
// not record them (-buildvcs=false, some checkouts such as worktrees).
type Build struct {
	// Version is the main module's version: a tag, a pseudo-version naming
	// the commit (+dirty when modified), or (devel).
	Version string `json:"version"`
	// Revision is the commit the binary was built from.
	Revision string `json:"revision,omitempty"`
	// Time is the commit's time, RFC 3339.
	Time string `json:"time,omitempty"`
	// Modified: the checkout had uncommitted changes.
	Modified bool `json:"modified"`
	// GoVersion is the Go toolchain that built it.
	GoVersion string `json:"goVersion"`
}

// Running is the build of the running binary, read once: it cannot change.
var Running = read()

// version, when set at link time (-ldflags "-X
// petstore/buildinfo.version=v1.4.0"), replaces the module's version: a
// build from a source archive has none of its own.
var version string

func read() Build {
	info, ok := debug.ReadBuildInfo()
	b := Build{Version: "(devel)", GoVersion: runtime.Version()}
	if ok {
		b = From(info)
	}
	if version != "" {
		b.Version = version
	}
	return b
}

// From reads a Build out of Go's build information.
func From(info *debug.BuildInfo) Build {
	b := Build{Version: info.Main.Version, GoVersion: info.GoVersion}
	if b.Version == "" {
		b.Version = "(devel)" // test binaries have no main module version
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.time":
			b.Time = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b
}

// String is the build in one line, as petstore --version prints it.
func (b Build) String() string {
	var s strings.Builder
	s.WriteString("petstore " + b.Version + " (")
	if b.Revision == "" {
		s.WriteString("no VCS revision recorded")
	} else {
		s.WriteString("revision " + b.Revision)
		if b.Time != "" {
			s.WriteString(", " + b.Time)
		}
		if b.Modified {
			s.WriteString(", with uncommitted changes")
		}
	}
	s.WriteString("; " + b.GoVersion + ")")
	return s.String()
}

// Same reports whether two builds are the same code: a restart of one
// binary is not a new deploy.
func (b Build) Same(o Build) bool {
	return b.Version == o.Version && b.Revision == o.Revision && b.Modified == o.Modified && b.GoVersion == o.GoVersion
}

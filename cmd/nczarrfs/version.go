package main

import (
	"runtime"
	"runtime/debug"
	"strings"
)

// version overrides the module version in --version. make build and make
// install set it with -ldflags "-X main.version=$(git describe --always --dirty)".
var version string

// target is the platform the binary runs on, e.g. linux/amd64.
const target = runtime.GOOS + "/" + runtime.GOARCH

// versionString describes this build: the version (from -X main.version,
// else the module version, "(devel)" for a build in a work tree), the
// commit and whether the tree was modified (from Go's VCS stamping), and
// the Go release that built it, and the target it was built for
// (GOOS/GOARCH, as make dist names its archives).
func versionString() string {
	v := version
	info, ok := debug.ReadBuildInfo()
	if !ok {
		if v == "" {
			v = "(unknown)"
		}
		return v + " " + target
	}
	if v == "" {
		v = info.Main.Version
	}
	var rev, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	var b strings.Builder
	b.WriteString(v)
	if rev != "" {
		b.WriteString(" (commit " + rev[:min(12, len(rev))])
		if modified == "true" {
			b.WriteString(", modified")
		}
		b.WriteString(")")
	}
	b.WriteString(" " + info.GoVersion + " " + target)
	return b.String()
}

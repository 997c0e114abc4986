package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// version is the text of `streamkit --version`: the module version (a release tag, or
// "(devel)" for a build from a source tree), the VCS commit with its time and "+dirty" when
// the tree had uncommitted changes, and the Go version and platform. All of it comes from the
// build information the Go toolchain embeds (runtime/debug.ReadBuildInfo, `go version -m`).
func version() string {
	v, commit, when, dirty := "(devel)", "unknown", "", false
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.time":
				when = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	if dirty {
		commit += "+dirty"
	}
	if when != "" {
		commit += " " + when
	}
	return fmt.Sprintf("streamkit %s\ncommit %s\n%s %s/%s\n", v, commit, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// Package buildinfo says which build of distcache is running: its version,
// the git commit it was built from and when. `make build` and `make image`
// set them with -ldflags (see Makefile, LDFLAGS); a plain `go build` or
// `go install` falls back to what the Go toolchain recorded in the binary
// (the module version, vcs.revision and vcs.time), and to Release.
package buildinfo

import (
	"runtime"
	"runtime/debug"
)

// Release is the version this source tree is released as: the tag of the
// image it builds and of the default image of a CacheCluster
// (the operator's --data-plane-image, which spec.images.distcache falls back to).
const Release = "v0.1.0"

// Repository is where the distcache image is published.
const Repository = "ghcr.io/distcache/distcache"

// Image is the released image of this source tree.
const Image = Repository + ":" + Release

// Set at link time: -X github.com/distcache/distcache/internal/buildinfo.version=…
var (
	version string // the image tag: Release, or a `git describe` of the commit
	commit  string // the full git commit hash
	date    string // the commit's time, RFC 3339 (reproducible builds)
)

// Info describes a build.
type Info struct {
	// Version is the build's version: the one set at link time, else the
	// module version the toolchain recorded, else Release.
	Version string `json:"version"`
	// Commit is the git commit it was built from ("" when unknown); a
	// "-dirty" suffix marks a tree with uncommitted changes.
	Commit string `json:"commit,omitempty"`
	// Date is when that commit was made (RFC 3339; "" when unknown).
	Date string `json:"date,omitempty"`
	// GoVersion is the toolchain that built it.
	GoVersion string `json:"goVersion"`
	// Platform is GOOS/GOARCH.
	Platform string `json:"platform"`
}

// Get returns the running binary's build information.
func Get() Info {
	i := Info{Version: version, Commit: commit, Date: date, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		fromToolchain(&i, bi)
	}
	if i.Version == "" {
		i.Version = Release
	}
	return i
}

// fromToolchain fills what the link-time values left empty from what the
// toolchain recorded in bi.
func fromToolchain(i *Info, bi *debug.BuildInfo) {
	if i.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		i.Version = bi.Main.Version
	}
	var revision, at string
	modified := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if i.Commit == "" && revision != "" {
		i.Commit = revision
		if modified {
			i.Commit += "-dirty"
		}
	}
	if i.Date == "" {
		i.Date = at
	}
}

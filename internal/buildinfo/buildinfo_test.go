package buildinfo

import (
	"runtime/debug"
	"testing"
)

// TestFromToolchain checks what a build without link-time values reports:
// what the toolchain recorded, and never over a value set at link time.
func TestFromToolchain(t *testing.T) {
	settings := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	tests := []struct {
		name string
		set  Info // the link-time values
		bi   debug.BuildInfo
		want Info
	}{
		{
			name: "go install of a tagged module",
			bi:   debug.BuildInfo{Main: debug.Module{Version: "v0.1.0"}},
			want: Info{Version: "v0.1.0"},
		},
		{
			name: "go build in a clean checkout",
			bi:   debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: settings("vcs.revision", "abc123", "vcs.time", "2026-11-25T10:00:00Z", "vcs.modified", "false")},
			want: Info{Commit: "abc123", Date: "2026-11-25T10:00:00Z"},
		},
		{
			name: "go build with uncommitted changes",
			bi:   debug.BuildInfo{Settings: settings("vcs.revision", "abc123", "vcs.modified", "true")},
			want: Info{Commit: "abc123-dirty"},
		},
		{
			name: "link-time values win",
			set:  Info{Version: "v0.1.0-4-gabc123", Commit: "abc123", Date: "2026-11-25T10:00:00Z"},
			bi:   debug.BuildInfo{Main: debug.Module{Version: "v9.9.9"}, Settings: settings("vcs.revision", "fff", "vcs.time", "2000-01-01T00:00:00Z")},
			want: Info{Version: "v0.1.0-4-gabc123", Commit: "abc123", Date: "2026-11-25T10:00:00Z"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.set
			fromToolchain(&got, &tc.bi)
			if got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestGetFallsBackToRelease checks that a test binary, which has neither
// link-time values nor a module version, reports Release.
func TestGetFallsBackToRelease(t *testing.T) {
	if bi, ok := debug.ReadBuildInfo(); version != "" || ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		t.Skip("built with a version")
	}
	if got := Get().Version; got != Release {
		t.Fatalf("version %q, want %q", got, Release)
	}
}

package cachecluster

import (
	"testing"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/placement/partmap"
)

// TestNextReplayProtection is the gate of the published map's replay
// protection: a new cluster on this release starts at require; an older
// cluster moves one mode at a time, accept → stamp once every pod runs
// this release and stamp → require once every Ready pod uses the map
// that said stamp; it never steps down but for spec Off, one mode at a
// time.
func TestNextReplayProtection(t *testing.T) {
	const (
		accept  = partmap.ReplayAccept
		stamp   = partmap.ReplayStamp
		require = partmap.ReplayRequire
		off     = v1alpha1.ReplayProtectionOff
		on      = v1alpha1.ReplayProtectionRequire
	)
	published := func(r partmap.ReplayProtection) *partmap.Map { return &partmap.Map{Version: 7, ReplayProtection: r} }
	tests := []struct {
		name      string
		policy    v1alpha1.ReplayProtectionPolicy
		prev      *partmap.Map
		onRelease bool
		applied   bool
		want      partmap.ReplayProtection
	}{
		{name: "new cluster on the release", onRelease: true, want: require},
		{name: "new cluster, policy spelled out", policy: on, onRelease: true, want: require},
		{name: "new cluster with pods of another release", want: accept},
		{name: "new cluster, Off", policy: off, onRelease: true, want: accept},

		{name: "upgraded: a pod on an older release", prev: published(accept), applied: true, want: accept},
		{name: "upgraded: every pod on the release", prev: published(accept), onRelease: true, want: stamp},
		{name: "upgraded: every pod on the release, not all applied", prev: published(accept), onRelease: true, want: stamp},
		{name: "stamp: a Ready pod uses an older map", prev: published(stamp), onRelease: true, want: stamp},
		{name: "stamp: every Ready pod uses it", prev: published(stamp), onRelease: true, applied: true, want: require},
		{name: "stamp: applied although a pod is off the release", prev: published(stamp), applied: true, want: require},
		{name: "stamp stays while pods leave the release", prev: published(stamp), want: stamp},
		{name: "require stays", prev: published(require), onRelease: true, applied: true, want: require},
		{name: "require never steps down by itself", prev: published(require), want: require},

		{name: "Off: require steps down to stamp at once", policy: off, prev: published(require), want: stamp},
		{name: "Off: stamp waits for every Ready pod", policy: off, prev: published(stamp), onRelease: true, want: stamp},
		{name: "Off: stamp to accept once applied", policy: off, prev: published(stamp), applied: true, want: accept},
		{name: "Off: accept stays", policy: off, prev: published(accept), onRelease: true, applied: true, want: accept},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := nextReplayProtection(replayInputs{policy: tt.policy, prev: tt.prev, onRelease: tt.onRelease, applied: tt.applied})
			if got != tt.want {
				t.Fatalf("next = %q, want %q", got, tt.want)
			}
		})
	}
}

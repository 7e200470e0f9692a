package cachecluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/placement/partmap"
)

// Replay protection in the partition map.
//
// The map tells every data-plane process how to protect signed datagrams
// against replays (partmap.Map.ReplayProtection), and each applies it
// when it installs the map, without a restart. Each mode accepts what
// the one before it sends, so the operator moves a cluster up one mode
// at a time, each once every process can take it:
//
//   - a new cluster, whose pods all run this release, starts at require;
//   - accept → stamp once every live data-plane pod runs the operator's
//     own release (the domains' gate): a reader older than the field
//     rejects a map that has it, and drops stamped datagrams;
//   - stamp → require once every Ready pod reports that it uses the map
//     that said stamp, or a later one: every process then stamps.
//
// The map never steps down by itself: only spec.dataPlane.replayProtection
// Off does, require → stamp at once (stamp accepts what require sends)
// and stamp → accept once every Ready pod uses the map that said stamp.
// A pod that has not reported, or runs another image, holds the cluster
// where it is.

// EventReplayProtection is the reason of the event recorded when the
// published map's replay protection changes.
const EventReplayProtection = "ReplayProtection"

// replayInputs is what the replay protection of the next map depends on.
type replayInputs struct {
	policy v1alpha1.ReplayProtectionPolicy // spec.dataPlane's; "" is Require
	prev   *partmap.Map                    // the published map; nil: none yet
	// onRelease: every live data-plane pod runs the operator's release
	// (with prev nil: no live pod runs another image), and so does the
	// cluster's template.
	onRelease bool
	// applied: every Ready pod uses prev's version or a later one.
	applied bool
}

// nextReplayProtection is the replay protection of the map published
// after in.prev.
func nextReplayProtection(in replayInputs) partmap.ReplayProtection {
	off := in.policy == v1alpha1.ReplayProtectionOff
	if in.prev == nil {
		if !off && in.onRelease {
			return partmap.ReplayRequire
		}
		return partmap.ReplayAccept
	}
	cur := in.prev.ReplayProtection
	switch {
	case off && cur == partmap.ReplayRequire:
		return partmap.ReplayStamp
	case off && cur == partmap.ReplayStamp && in.applied:
		return partmap.ReplayAccept
	case off:
		return cur
	case cur == partmap.ReplayAccept && in.onRelease:
		return partmap.ReplayStamp
	case cur == partmap.ReplayStamp && in.applied:
		return partmap.ReplayRequire
	}
	return cur
}

// replayProtection decides the replay protection of the map the reconcile
// s publishes after prev, and looks again soon while it waits for pods to
// report the map that said stamp.
func (r *Reconciler) replayProtection(ctx context.Context, s *state, prev *partmap.Map) partmap.ReplayProtection {
	in := replayInputs{prev: prev}
	if dp := s.cc.Spec.DataPlane; dp != nil {
		in.policy = dp.ReplayProtection
	}
	image, _, _ := r.images(s.cc)
	all, seen := r.podsOnRelease(s)
	in.onRelease = image == r.releaseImage() && all && (seen || prev == nil)
	if prev != nil && prev.ReplayProtection == partmap.ReplayStamp {
		in.applied = r.readyPodsApplied(ctx, s, prev.Version)
		if !in.applied {
			s.recheckWithin(appliedRecheck)
		}
	}
	return nextReplayProtection(in)
}

// readyPodsApplied reports whether every Ready pod of s reports that its
// process uses version or a later one; true without Reconciler.Applied,
// as Ready does not wait for the processes then.
func (r *Reconciler) readyPodsApplied(ctx context.Context, s *state, version int64) bool {
	if r.Applied == nil {
		return true
	}
	var ready []*corev1.Pod
	for _, p := range s.pods {
		if podReady(p) {
			ready = append(ready, p)
		}
	}
	applied := r.Applied.Applied(ctx, s.cc.Namespace+"/"+s.cc.Name, ready, version)
	for _, p := range ready {
		if !applied[p.Name] {
			return false
		}
	}
	return true
}

// recordReplayProtection records an event when next's replay protection
// differs from prev's.
func (r *Reconciler) recordReplayProtection(cc *v1alpha1.CacheCluster, prev, next *partmap.Map) {
	from := partmap.ReplayAccept
	if prev != nil {
		from = prev.ReplayProtection
	}
	if r.Recorder == nil || (prev != nil && from == next.ReplayProtection) || (prev == nil && next.ReplayProtection == partmap.ReplayAccept) {
		return
	}
	// An action per mode: client-go makes a series of events alike but
	// for the note, which would hide the next step's.
	action, why := "StopStamps", "signed messages are sent unstamped"
	switch next.ReplayProtection {
	case partmap.ReplayStamp:
		action, why = "SendStamps", "every process stamps signed messages and still accepts unstamped ones"
	case partmap.ReplayRequire:
		action, why = "RequireStamps", "every process stamps signed messages and drops unstamped ones"
	}
	r.Recorder.Eventf(cc, nil, corev1.EventTypeNormal, EventReplayProtection, action,
		"replay protection %s → %s (partition map v%d): %s", from, next.ReplayProtection, next.Version, why)
}

// replayStatus is the status's view of m's replay protection.
func replayStatus(m *partmap.Map) *v1alpha1.DataPlaneStatus {
	mode := map[partmap.ReplayProtection]v1alpha1.ReplayProtectionMode{
		partmap.ReplayAccept:  v1alpha1.ReplayModeAccept,
		partmap.ReplayStamp:   v1alpha1.ReplayModeStamp,
		partmap.ReplayRequire: v1alpha1.ReplayModeRequire,
	}[m.ReplayProtection]
	if mode == "" {
		panic(fmt.Sprintf("unknown replay protection %q in a valid map", m.ReplayProtection))
	}
	return &v1alpha1.DataPlaneStatus{ReplayProtection: mode}
}

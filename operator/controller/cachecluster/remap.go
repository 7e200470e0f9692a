package cachecluster

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/placement/partmap"
)

// EventRemapped is the event of a published partition map version that
// changes who holds or serves keys: the note names the old and the new
// version and what changed.
const EventRemapped = "Remapped"

// maxRemapItems bounds the changes a Remapped event lists.
const maxRemapItems = 8

// recordRemap emits a Remapped event when next, just written to cm,
// changes the placement of prev (nil: the first map, no event): a layer
// or member added or removed, a member's state, rack or capacity, a
// layer's ring, the storage's shards or the copies of hot keys. Versions
// that change only addresses or the layers' entries (the cache budget's
// split, which moves no key) make none.
func (r *Reconciler) recordRemap(cc *v1alpha1.CacheCluster, cm *corev1.ConfigMap, prev, next *partmap.Map) {
	if r.Recorder == nil || prev == nil {
		return
	}
	changes := placementChanges(prev, next)
	if len(changes) == 0 {
		return
	}
	if len(changes) > maxRemapItems {
		changes = append(changes[:maxRemapItems], fmt.Sprintf("%d more changes", len(changes)-maxRemapItems))
	}
	// Related to the map's ConfigMap at the version written: each version
	// is an event of its own, not a series of the first.
	related := &corev1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: cm.Namespace, Name: cm.Name, ResourceVersion: cm.ResourceVersion}
	r.Recorder.Eventf(cc, related, corev1.EventTypeNormal, EventRemapped, "Remap",
		"partition map v%d replaces v%d: %s", next.Version, prev.Version, strings.Join(changes, "; "))
}

// placementChanges lists what differs between a and b in who holds or
// serves keys.
func placementChanges(a, b *partmap.Map) []string {
	var out []string
	before := map[string]partmap.Layer{}
	for _, l := range a.Layers {
		before[l.Name] = l
	}
	seen := map[string]bool{}
	for _, l := range b.Layers {
		seen[l.Name] = true
		old, ok := before[l.Name]
		if !ok {
			out = append(out, fmt.Sprintf("layer %s added with %d members", l.Name, len(l.Members)))
			continue
		}
		if old.Seed != l.Seed || old.VirtualNodes != l.VirtualNodes || old.BoundToRacks != l.BoundToRacks || old.Switch != l.Switch {
			out = append(out, fmt.Sprintf("layer %s: ring changed", l.Name))
		}
		out = append(out, memberChanges(old, l)...)
	}
	for _, l := range a.Layers {
		if !seen[l.Name] {
			out = append(out, fmt.Sprintf("layer %s removed", l.Name))
		}
	}
	if a.Storage.Seed != b.Storage.Seed || shardNames(a) != shardNames(b) {
		out = append(out, "storage shards changed")
	}
	if !sameCopies(a.Copies, b.Copies) {
		out = append(out, fmt.Sprintf("copies of hot keys: %d keys decided, %d before", len(b.Copies), len(a.Copies)))
	}
	return out
}

// memberChanges lists the members of layer b added, removed or changed
// in state, rack or capacity since a.
func memberChanges(a, b partmap.Layer) []string {
	var out []string
	before := map[string]partmap.Member{}
	for _, m := range a.Members {
		before[m.Name] = m
	}
	seen := map[string]bool{}
	for _, m := range b.Members {
		seen[m.Name] = true
		old, ok := before[m.Name]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%s added (%s)", m.Name, m.State))
		case old.State != m.State:
			out = append(out, fmt.Sprintf("%s %s to %s", m.Name, old.State, m.State))
		case old.Rack != m.Rack || old.Capacity != m.Capacity:
			out = append(out, fmt.Sprintf("%s rack or capacity changed", m.Name))
		}
	}
	for _, m := range a.Members {
		if !seen[m.Name] {
			out = append(out, fmt.Sprintf("%s removed", m.Name))
		}
	}
	return out
}

// shardNames is the storage's racks and shards, by name.
func shardNames(m *partmap.Map) string {
	var b strings.Builder
	for _, r := range m.Storage.Racks {
		b.WriteString(r.Name + ":")
		for _, s := range r.Shards {
			b.WriteString(s.Name + ",")
		}
		b.WriteString(";")
	}
	return b.String()
}

func sameCopies(a, b []partmap.KeyCopies) bool {
	return slices.EqualFunc(a, b, func(x, y partmap.KeyCopies) bool {
		return bytes.Equal(x.Key, y.Key) && slices.Equal(x.Members, y.Members)
	})
}

package partmap

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
)

// KeyCopies names the members that hold a hot key's copies when the
// control loop decided them by cost and benefit (package
// placement/copies) rather than leaving the key one copy per layer on its
// owners: more copies for a key hotter than half a node, fewer or none for
// one whose writes cost its storage server more than its copies save.
//
// A version of the map that changes a key's members changes its owners
// like a remap does: every component reads them through
// Placement.Candidates, so a storage shim invalidates the members of the
// current version and of the versions it replaced within its grace, and a
// cache node drops the keys it no longer holds when it installs the map.
type KeyCopies struct {
	// Key is the key (base64 in JSON, so that binary keys survive).
	Key []byte `json:"key"`
	// Members names the members that hold the key's copies, in any layer
	// and in any order; none: the key is not cached.
	Members []string `json:"members,omitempty"`
}

// Bounds of Map.Copies: the map travels in a ConfigMap (at most 1 MiB) and
// is read by every process at every version.
const (
	// MaxKeyCopies bounds the number of keys listed.
	MaxKeyCopies = 8192
	// MaxCopiesPerKey bounds the members of one key.
	MaxCopiesPerKey = 64
	// MaxCopiesKeyLen bounds a listed key, as the wire format bounds keys.
	MaxCopiesKeyLen = 512
)

// WithCopies returns the next version of m with its Copies set to copies
// (sorted by key), or m itself (and changed=false) when they are the same.
func (m *Map) WithCopies(copies []KeyCopies) (next *Map, changed bool, err error) {
	sorted := make([]KeyCopies, len(copies))
	for i, kc := range copies {
		sorted[i] = KeyCopies{Key: bytes.Clone(kc.Key), Members: slices.Clone(kc.Members)}
	}
	slices.SortFunc(sorted, func(a, b KeyCopies) int { return bytes.Compare(a.Key, b.Key) })
	if len(sorted) == 0 {
		sorted = nil
	}
	if equalCopies(m.Copies, sorted) {
		return m, false, nil
	}
	next = m.Clone()
	next.Version++
	next.Copies = sorted
	if err := next.Validate(); err != nil {
		return nil, false, fmt.Errorf("cannot set key copies: %w", err)
	}
	return next, true, nil
}

func equalCopies(a, b []KeyCopies) bool {
	return slices.EqualFunc(a, b, func(x, y KeyCopies) bool {
		return bytes.Equal(x.Key, y.Key) && slices.Equal(x.Members, y.Members)
	})
}

// keptCopies returns the entries of copies whose members all exist in m:
// those Build carries from the previous map into the next.
func keptCopies(copies []KeyCopies, m *Map) []KeyCopies {
	if len(copies) == 0 {
		return nil
	}
	index := m.memberIndex()
	var out []KeyCopies
	for _, kc := range copies {
		if !slices.ContainsFunc(kc.Members, func(name string) bool { _, ok := index[name]; return !ok }) {
			out = append(out, kc)
		}
	}
	return out
}

// memberIndex maps the name of every member of m to its layer and index:
// the lookups of Copies' members, which Map.Member would make one scan of
// every layer each.
func (m *Map) memberIndex() map[string]holder {
	index := map[string]holder{}
	for l := range m.Layers {
		for i, mb := range m.Layers[l].Members {
			index[mb.Name] = holder{l, i}
		}
	}
	return index
}

// validateCopies checks m.Copies: sorted distinct keys of 1 to
// MaxCopiesKeyLen bytes, at most MaxKeyCopies of them, each with distinct
// members of m, at most MaxCopiesPerKey.
func (m *Map) validateCopies() error {
	if len(m.Copies) == 0 {
		return nil
	}
	if len(m.Copies) > MaxKeyCopies {
		return fmt.Errorf("%d keys with decided copies, more than %d", len(m.Copies), MaxKeyCopies)
	}
	index := m.memberIndex()
	for i, kc := range m.Copies {
		switch {
		case len(kc.Key) == 0 || len(kc.Key) > MaxCopiesKeyLen:
			return fmt.Errorf("copies entry %d: key of %d bytes, want 1 to %d", i, len(kc.Key), MaxCopiesKeyLen)
		case i > 0 && bytes.Compare(m.Copies[i-1].Key, kc.Key) >= 0:
			return fmt.Errorf("copies entry %d: keys not sorted or listed twice (%q after %q)", i, kc.Key, m.Copies[i-1].Key)
		case len(kc.Members) > MaxCopiesPerKey:
			return fmt.Errorf("copies of key %q: %d members, more than %d", kc.Key, len(kc.Members), MaxCopiesPerKey)
		}
		for j, name := range kc.Members {
			h, ok := index[name]
			if !ok {
				return fmt.Errorf("copies of key %q: no member %q", kc.Key, name)
			}
			if m.Layers[h.layer].Switch {
				return fmt.Errorf("copies of key %q: member %q: %w", kc.Key, name, errSwitchCopies)
			}
			if slices.Contains(kc.Members[:j], name) {
				return fmt.Errorf("copies of key %q: member %q listed twice", kc.Key, name)
			}
		}
	}
	return nil
}

// holder is a member holding a decided copy, by layer and member index.
type holder struct{ layer, member int }

// compileCopies indexes m.Copies by key for Candidates.
func compileCopies(m *Map) (map[string][]holder, error) {
	if len(m.Copies) == 0 {
		return nil, nil
	}
	index := m.memberIndex()
	out := make(map[string][]holder, len(m.Copies))
	for _, kc := range m.Copies {
		hs := make([]holder, 0, len(kc.Members))
		for _, name := range kc.Members {
			h, ok := index[name]
			if !ok {
				return nil, errors.New("copies name an unknown member") // Validate ran first
			}
			hs = append(hs, h)
		}
		slices.SortFunc(hs, func(a, b holder) int {
			if a.layer != b.layer {
				return a.layer - b.layer
			}
			return a.member - b.member
		})
		out[string(kc.Key)] = hs
	}
	return out, nil
}

// decidedCandidates appends to dst the holders of a key with decided
// copies: each member that owns keys (a Fenced one marked so), and in
// place of a Failed one its layer's owner of the key, as the key's copy
// would have moved there without a decision, unless that owner already
// holds one; then its owner in every switch-backed layer, which decisions
// do not cover (a switch caches the keys of its share).
func (p *Placement) decidedCandidates(key string, hs []holder, dst []Candidate) []Candidate {
	start := len(dst)
	for _, h := range hs {
		mb := &p.m.Layers[h.layer].Members[h.member]
		member := h.member
		if !mb.State.Owns() {
			if member = p.Owner(h.layer, key); member < 0 {
				continue
			}
		}
		if !hasCandidate(dst[start:], h.layer, member) {
			dst = append(dst, p.candidate(h.layer, member))
		}
	}
	return p.switchOwners(key, dst)
}

func hasCandidate(cs []Candidate, layer, member int) bool {
	for _, c := range cs {
		if c.Layer == layer && c.Member == member {
			return true
		}
	}
	return false
}

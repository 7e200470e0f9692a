package partmap

import "fmt"

// MaxLayerEntries bounds Layer.Entries.
const MaxLayerEntries = 1 << 30

// WithEntries returns the next version of m with each layer's Entries set
// to entries[name] (0 for a layer entries does not name), or m itself
// (and changed=false) when they are the same.
func (m *Map) WithEntries(entries map[string]int) (next *Map, changed bool, err error) {
	for i := range m.Layers {
		if m.Layers[i].Entries != entries[m.Layers[i].Name] {
			changed = true
		}
	}
	if !changed {
		return m, false, nil
	}
	next = m.Clone()
	next.Version++
	for i := range next.Layers {
		next.Layers[i].Entries = entries[next.Layers[i].Name]
	}
	if err := next.Validate(); err != nil {
		return nil, false, fmt.Errorf("cannot set layer entries: %w", err)
	}
	return next, true, nil
}

// LayerEntries is each layer's Entries by name, of the layers that have
// them.
func (m *Map) LayerEntries() map[string]int {
	out := map[string]int{}
	for _, l := range m.Layers {
		if l.Entries > 0 {
			out[l.Name] = l.Entries
		}
	}
	return out
}

// keepEntries carries each layer's Entries from prev into m, the next
// map Build makes: the sizing's decision outlives changes of members.
func keepEntries(prev, m *Map) {
	kept := prev.LayerEntries()
	for i := range m.Layers {
		m.Layers[i].Entries = kept[m.Layers[i].Name]
	}
}

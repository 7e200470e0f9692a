package partmap_test

import (
	"maps"
	"strings"
	"testing"

	"github.com/distcache/distcache/placement/partmap"
)

func TestWithEntries(t *testing.T) {
	m := mustBuild(t, newSpec(), nil)
	spine, leaf := m.Layers[0].Name, m.Layers[1].Name
	next, changed, err := m.WithEntries(map[string]int{spine: 300, leaf: 50})
	if err != nil || !changed || next.Version != m.Version+1 {
		t.Fatalf("WithEntries: version %d, changed %v, %v; want version %d", next.Version, changed, err, m.Version+1)
	}
	if got := next.LayerEntries(); !maps.Equal(got, map[string]int{spine: 300, leaf: 50}) {
		t.Errorf("LayerEntries = %v", got)
	}
	if len(m.LayerEntries()) != 0 {
		t.Errorf("WithEntries changed the map it was called on: %v", m.LayerEntries())
	}
	if same, changed, err := next.WithEntries(map[string]int{spine: 300, leaf: 50}); err != nil || changed || same != next {
		t.Errorf("the same entries again: changed %v, %v, a new map %v", changed, err, same != next)
	}
	if _, _, err := next.WithEntries(map[string]int{spine: -1}); err == nil || !strings.Contains(err.Error(), "entries -1 out of range") {
		t.Errorf("negative entries: %v", err)
	}
	cleared, changed, err := next.WithEntries(nil)
	if err != nil || !changed || len(cleared.LayerEntries()) != 0 {
		t.Errorf("clearing: %v, changed %v, entries %v", err, changed, cleared.LayerEntries())
	}
	// A rebuild from the spec (a member added) keeps the sizing's entries.
	bigger := newSpec()
	bigger.Layers[0].Nodes++
	if rebuilt := mustBuild(t, bigger, next); !maps.Equal(rebuilt.LayerEntries(), next.LayerEntries()) {
		t.Errorf("entries after a rebuild: %v, want %v", rebuilt.LayerEntries(), next.LayerEntries())
	}
}

func TestGoldenEncodingWithEntries(t *testing.T) {
	m := mustBuild(t, newSpec(), nil)
	m, _, err := m.WithEntries(map[string]int{m.Layers[0].Name: 250, m.Layers[1].Name: 75})
	if err != nil {
		t.Fatal(err)
	}
	got, err := partmap.Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "demo-entries.json", got)
	back, err := partmap.Decode(got)
	if err != nil || !maps.Equal(back.LayerEntries(), m.LayerEntries()) {
		t.Fatalf("decoded entries %v, %v", back.LayerEntries(), err)
	}
}

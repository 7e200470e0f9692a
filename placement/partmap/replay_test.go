package partmap_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/distcache/distcache/placement/partmap"
)

// smallSpec is one rack of one shard and one layer of two nodes.
func smallSpec(r partmap.ReplayProtection) partmap.Spec {
	return partmap.Spec{Cluster: "small", Racks: 1, ShardsPerRack: 1, StorageSeed: 7, ReplayProtection: r,
		Layers: []partmap.LayerSpec{{Name: "spine", Nodes: 2, Seed: 1, VirtualNodes: 4}}}
}

// TestReplayProtectionEncoding pins the field's encoding and checks that
// it round-trips, and that a map without it (ReplayAccept) encodes
// without the field: readers older than it read such a map.
func TestReplayProtectionEncoding(t *testing.T) {
	for _, tc := range []struct {
		r      partmap.ReplayProtection
		golden string
	}{
		{partmap.ReplayStamp, "replay-stamp.json"},
		{partmap.ReplayRequire, "replay-require.json"},
	} {
		t.Run(tc.r.String(), func(t *testing.T) {
			got, err := partmap.Encode(mustBuild(t, smallSpec(tc.r), nil))
			if err != nil {
				t.Fatal(err)
			}
			want := checkGolden(t, tc.golden, got)
			back, err := partmap.Decode(want)
			if err != nil {
				t.Fatal(err)
			}
			if back.ReplayProtection != tc.r {
				t.Fatalf("decoded %q, want %q", back.ReplayProtection, tc.r)
			}
			if again, _ := partmap.Encode(back); !bytes.Equal(again, want) {
				t.Fatal("decode/encode does not round-trip")
			}
		})
	}
	accept, err := partmap.Encode(mustBuild(t, smallSpec(partmap.ReplayAccept), nil))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(accept, []byte("replayProtection")) {
		t.Fatalf("a map that accepts unstamped datagrams names the field:\n%s", accept)
	}
}

// TestReplayProtectionChangesVersion: a new setting is a new version of
// the map; the same setting keeps the map.
func TestReplayProtectionChangesVersion(t *testing.T) {
	m1 := mustBuild(t, smallSpec(partmap.ReplayAccept), nil)
	if same := mustBuild(t, smallSpec(partmap.ReplayAccept), m1); same != m1 {
		t.Fatal("an unchanged setting made a new map")
	}
	m2 := mustBuild(t, smallSpec(partmap.ReplayStamp), m1)
	if m2.Version != 2 || m2.ReplayProtection != partmap.ReplayStamp {
		t.Fatalf("stamp: version %d, setting %q", m2.Version, m2.ReplayProtection)
	}
	if c := m2.Clone(); c.ReplayProtection != partmap.ReplayStamp {
		t.Fatalf("Clone lost the setting: %q", c.ReplayProtection)
	}
}

// TestReplayProtectionUnknownRejected: a setting this reader does not
// know makes the map invalid, as any unknown field does.
func TestReplayProtectionUnknownRejected(t *testing.T) {
	good, err := partmap.Encode(mustBuild(t, smallSpec(partmap.ReplayRequire), nil))
	if err != nil {
		t.Fatal(err)
	}
	bad := bytes.Replace(good, []byte(`"require"`), []byte(`"paranoid"`), 1)
	if _, err := partmap.Decode(bad); err == nil || !strings.Contains(err.Error(), "replay protection") {
		t.Fatalf("Decode of an unknown setting: %v", err)
	}
	if _, err := partmap.Build(smallSpec("paranoid"), nil); err == nil {
		t.Fatal("Build accepted an unknown setting")
	}
}

package routing

import "testing"

// TestRemoteMargin checks Choose's zone preference (zones.go): a local
// candidate wins ties and stays chosen until it is loaded more than
// 1 + margin times a remote one; without the option Remote changes
// nothing.
func TestRemoteMargin(t *testing.T) {
	const now = 1_000
	for _, tc := range []struct {
		name          string
		opts          []TableOption
		local, remote float64 // loads of node 1 (local) and node 2 (remote)
		want          NodeID
	}{
		{"idle: local", []TableOption{WithRemoteMargin(0.5)}, 0, 0, 1},
		{"even: local", []TableOption{WithRemoteMargin(0)}, 7, 7, 1},
		{"local within the margin", []TableOption{WithRemoteMargin(0.5)}, 11.9, 8, 1},
		{"local beyond the margin", []TableOption{WithRemoteMargin(0.5)}, 12.1, 8, 2},
		{"remote less loaded without the option", nil, 8.1, 8, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			table, err := NewLoadTable(AgingConfig{}, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			table.Observe(1, tc.local, now)
			table.Observe(2, tc.remote, now)
			r := NewRouter(table, 1)
			for range 200 { // ties are broken at random: every draw must agree
				for _, cands := range [][]Candidate{
					{{Node: 1}, {Node: 2, Remote: true}},
					{{Node: 2, Remote: true}, {Node: 1}},
				} {
					if got := cands[r.Choose(cands, now)].Node; got != tc.want {
						t.Fatalf("chose node %d, want %d", got, tc.want)
					}
				}
			}
		})
	}
	if _, err := NewLoadTable(AgingConfig{}, WithRemoteMargin(-1)); err == nil {
		t.Fatal("a negative margin was accepted")
	}
}

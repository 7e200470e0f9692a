package lease_test

import (
	"path/filepath"
	"testing"

	"github.com/distcache/distcache/internal/testing/spintest"
)

// TestModel checks the protocol's model (testdata/lease.pml) with the SPIN
// model checker: no read that starts after a write is acknowledged
// returns an older value, with a node that may pause, messages lost,
// late or out of order, and a node clock that falls behind. Each rule the
// argument rests on is needed: a shim that releases a node before its
// lease ends, one that leaves out the clocks' margin, and leases without
// epochs each let the search find a stale read. The rolling upgrade's
// handshake keeps the property when a node serves under the shim's lease
// from its first renewal, and not when it waits for its first grant. A
// map change that moves the key away from the node keeps it too: the
// shim releases the node a lease and the clocks' margin after it
// installs the change, and the node applies only grants of a map it has.
// A node that applies grants of a newer map, and a release without the
// margin, each let the search find a stale read. The protocol is
// searched within three sets of bounds (two fills, two writes, a longer
// run), since one search with all of them takes gigabytes; the map
// change within the small bounds, and its variants in shorter runs.
func TestModel(t *testing.T) {
	small := []string{"-DMAXT=4", "-DMAXRENEW=2", "-DMAXFETCH=1", "-DMAXWRITES=1"}
	with := func(defines ...string) []string { return append(append([]string{}, small...), defines...) }
	short := func(renews string, defines ...string) []string {
		return append([]string{"-DMAXT=3", "-DMAXRENEW=" + renews, "-DMAXFETCH=1", "-DMAXWRITES=1"}, defines...)
	}
	spintest.Run(t, filepath.Join("testdata", "lease.pml"), []spintest.Case{
		{Name: "protocol, two fills", Defines: []string{"-DMAXT=4", "-DMAXRENEW=2", "-DMAXFETCH=2", "-DMAXWRITES=1"}},
		{Name: "protocol, two writes", Defines: []string{"-DMAXT=4", "-DMAXRENEW=1", "-DMAXFETCH=1", "-DMAXWRITES=2"}},
		{Name: "protocol, a longer run", Defines: []string{"-DMAXT=5", "-DMAXRENEW=2", "-DMAXFETCH=1", "-DMAXWRITES=1"}},
		{Name: "release before the lease ends", Defines: with("-DBUG_EARLY"), WantViolation: true},
		{Name: "no margin for the clocks", Defines: with("-DBUG_NO_MARGIN"), WantViolation: true},
		{Name: "no epochs", Defines: with("-DBUG_NO_EPOCH"), WantViolation: true},
		{Name: "upgrade handshake", Defines: with("-DNEGOTIATE")},
		{Name: "handshake on the grant", Defines: with("-DNEGOTIATE", "-DBUG_SWITCH_ON_GRANT"), WantViolation: true},
		{Name: "a map change moves the key away", Defines: with("-DMAPCHANGE")},
		{Name: "grants of a newer map", Defines: short("2", "-DMAPCHANGE", "-DBUG_NO_MAPVERSION"), WantViolation: true},
		{Name: "release by map without the margin", Defines: short("1", "-DMAPCHANGE", "-DBUG_MAP_RELEASE_EARLY"), WantViolation: true},
	}, spintest.Serial())
}

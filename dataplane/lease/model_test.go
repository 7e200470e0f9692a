package lease_test

import (
	"path/filepath"
	"testing"

	"github.com/distcache/distcache/internal/testing/spintest"
)

// TestModel checks the protocol's model (testdata/lease.pml) with the SPIN
// model checker: no read that starts after a write is acknowledged
// returns an older value, with a node that may pause, messages lost or
// late, and a node clock that falls behind; and each rule the argument
// rests on is needed: a shim that releases a node before its lease ends,
// one that leaves out the clocks' margin, and leases without epochs each
// let the search find a stale read. The bounds of the protocol's searches
// are two sets, since one search with both of them takes gigabytes: two
// fills or two writes.
func TestModel(t *testing.T) {
	small := []string{"-DMAXT=4", "-DMAXRENEW=2", "-DMAXFETCH=1", "-DMAXWRITES=1"}
	with := func(defines ...string) []string { return append(append([]string{}, small...), defines...) }
	spintest.Run(t, filepath.Join("testdata", "lease.pml"), []spintest.Case{
		{Name: "protocol, two fills", Defines: []string{"-DMAXT=5", "-DMAXRENEW=2", "-DMAXFETCH=2", "-DMAXWRITES=1"}},
		{Name: "protocol, two writes", Defines: []string{"-DMAXT=4", "-DMAXRENEW=2", "-DMAXFETCH=1", "-DMAXWRITES=2"}},
		{Name: "release before the lease ends", Defines: with("-DBUG_EARLY"), WantViolation: true},
		{Name: "no margin for the clocks", Defines: with("-DBUG_NO_MARGIN"), WantViolation: true},
		{Name: "no epochs", Defines: with("-DBUG_NO_EPOCH"), WantViolation: true},
	}, spintest.Serial())
}

package antireplay_test

import (
	"path/filepath"
	"testing"

	"github.com/distcache/distcache/internal/testing/spintest"
)

// TestModel checks the filter's model (testdata/antireplay.pml) with the
// SPIN model checker: with a sender that restarts, an attacker that
// delivers any message sent, in any order and as often as it likes, and
// a receiver that may forget the sender at any time, no message is
// accepted twice and none of an epoch is accepted after one of a newer
// epoch. Without the floor that forgetting raises, without the floor
// each entry keeps, or without epochs, the search finds a violation.
func TestModel(t *testing.T) {
	spintest.Run(t, filepath.Join("testdata", "antireplay.pml"), []spintest.Case{
		{Name: "filter"},
		{Name: "three epochs", Defines: []string{"-DMAXEPOCH=3", "-DMAXSEQ=3", "-DMAXDELIVER=6"}},
		{Name: "forgetting keeps no floor", Defines: []string{"-DBUG_NO_FLOOR"}, WantViolation: true},
		{Name: "entries keep no floor", Defines: []string{"-DBUG_NO_ENTRY_FLOOR"}, WantViolation: true},
		{Name: "no epochs", Defines: []string{"-DBUG_NO_EPOCH"}, WantViolation: true},
	})
}

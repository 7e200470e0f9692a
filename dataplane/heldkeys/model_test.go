package heldkeys_test

import (
	"path/filepath"
	"testing"

	"github.com/distcache/distcache/internal/testing/spintest"
)

// The models: the package's safety argument (directwrites.pml), and the
// node's pending writes and parked readers against the shim's directory
// of copies (trim_forget.pml) and against taking keys out of the set
// (trim_srem.pml).

// TestModel checks the models with the SPIN model checker: the protocol
// keeps the property (no read that starts after a write is acknowledged
// returns an older value); without the shim's SADD before its reads, or
// before a write's update, the search finds a violation, which shows that
// the assertion can fail; a shim that has just started (FLUSH) keeps it
// with the two fixes of a FLUSH, and not without them; and the rule of a
// reverted change (0649cb1: forget a node whose INVALIDATE_ACK has no
// FlagHit) breaks it; a write that takes its key out of the set (trim)
// keeps it when its phase 2 carries no value, and not otherwise, whether
// or not a node had a copy (a release, client/atomic.go).
func TestModel(t *testing.T) {
	model := func(name string) string { return filepath.Join("testdata", name) }
	spintest.Run(t, model("directwrites.pml"), []spintest.Case{
		{Name: "protocol"},
		{Name: "no mark before read", Defines: []string{"-DBUG_NO_MARK"}, WantViolation: true},
		{Name: "no mark before a write's update", Defines: []string{"-DBUG_NO_WRITE_MARK"}, WantViolation: true},
		{Name: "the node's alternative fix", Defines: []string{"-DBUG_NO_WRITE_MARK", "-DFIX_UPDATE_FILLED"}},
	})
	spintest.Run(t, model("trim_forget.pml"), []spintest.Case{
		{Name: "flush as fixed", Defines: []string{"-DWITH_FLUSH", "-DWITH_CLEAR", "-DFIX_FLUSH_PENDING", "-DFIX_FLUSH_ENTER"}},
		{Name: "flush before the fixes", Defines: []string{"-DWITH_FLUSH"}, WantViolation: true},
		{Name: "forget without FlagHit", Defines: []string{"-DFORGET"}, WantViolation: true},
	})
	spintest.Run(t, model("trim_srem.pml"), []spintest.Case{
		{Name: "trim as built", Defines: []string{"-DTRIM", "-DTRIM_SEPARATE", "-DTRIM_FAIL_UPDATE"}},
		{Name: "trim keeping the update", Defines: []string{"-DTRIM", "-DTRIM_KEEP_UPDATE"}, WantViolation: true},
		// A release (wire.RMWRelease) trims whatever the acks said.
		{Name: "release", Defines: []string{"-DTRIM_ANY", "-DTRIM_SEPARATE", "-DTRIM_FAIL_UPDATE"}},
	})
}

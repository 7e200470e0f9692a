package main

import (
	"io"
	"strings"
	"testing"
)

// TestSwitchProgramFlag: --program names one of the programs the software
// switch runs; another is refused before any port is bound.
func TestSwitchProgramFlag(t *testing.T) {
	cmd := newSwitchCommand()
	cmd.SetArgs([]string{"--base-port", "7400", "--program", "core_router"})
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	err := cmd.Execute()
	if err == nil || !strings.Contains(err.Error(), "--program is one of [cache_switch client_leaf]") {
		t.Fatalf("error %v", err)
	}
}

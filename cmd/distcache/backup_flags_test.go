package main

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/distcache/distcache/dataplane/redisconn"
)

// TestBackupTakesTheShimsLoginFlags: the operator passes a backup pod the
// shims' Redis login flags (storage.auth, storage.tls), so backup and
// restore accept every one of them but the shim's own --redis address.
func TestBackupTakesTheShimsLoginFlags(t *testing.T) {
	shim := pflag.NewFlagSet("shim", pflag.ContinueOnError)
	var s redisconn.Settings
	s.AddFlags(shim)
	var login []string
	shim.VisitAll(func(f *pflag.Flag) {
		if f.Name != "redis" {
			login = append(login, f.Name)
		}
	})
	if len(login) < 6 {
		t.Fatalf("the shim's login flags: %v", login)
	}
	for name, cmd := range map[string]interface{ Flags() *pflag.FlagSet }{"backup": newBackupCommand(), "restore": newRestoreCommand()} {
		for _, f := range login {
			if cmd.Flags().Lookup(f) == nil {
				t.Errorf("distcache %s lacks --%s, which the shims take (%s)", name, f, strings.Join(login, ", "))
			}
		}
	}
}

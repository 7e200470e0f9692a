package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/distcache/distcache/dataplane/redisconn"
	"github.com/distcache/distcache/internal/testing/certtest"
	"github.com/distcache/distcache/internal/testing/redistest"
	"github.com/distcache/distcache/snapshot"
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

// TestBackupLogsInOverTLS runs `distcache backup` as the operator's
// CronJob does (an address template, the shims' login flags) against a
// redis-server that serves TLS only and knows one ACL user, whose password
// is the previous one of the files: the set is written and verified.
func TestBackupLogsInOverTLS(t *testing.T) {
	dir := t.TempDir()
	ca := certtest.NewCA(t, dir, "backup-ca")
	cert, key := ca.Server(t, "backup-redis")
	srv := redistest.Start(t, redistest.WithTLS(redistest.TLSFiles{Cert: cert, Key: key, CA: ca.File}),
		redistest.WithPassword("backup", "old-pass"), redistest.WithArgs("--repl-diskless-sync-delay", "0"))
	auth := filepath.Join(dir, "auth")
	if err := os.MkdirAll(auth, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, pw := range map[string]string{"password": "new-pass", "previous": "old-pass"} {
		if err := os.WriteFile(filepath.Join(auth, name), []byte(pw), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, "sets")
	cmd := newBackupCommand()
	cmd.SetArgs([]string{"--cluster=one", "--racks=1", "--shards-per-rack=1", "--redis-address-template=" + srv.Addr(), "--out=" + out,
		"--redis-username=backup", "--redis-password-file=" + filepath.Join(auth, "password"),
		"--redis-previous-password-file=" + filepath.Join(auth, "previous"), "--redis-tls", "--redis-tls-ca-file=" + ca.File})
	var stdout, stderr bytes.Buffer
	cmd.SetOut(&stdout)
	cmd.SetErr(&stderr)
	if err := cmd.ExecuteContext(t.Context()); err != nil {
		t.Fatalf("backup: %v\n%s", err, stderr.String())
	}
	sets, err := snapshot.Sets(out, "one")
	if err != nil || len(sets) != 1 {
		t.Fatalf("sets %v (%v), want one", sets, err)
	}
	if _, err := snapshot.VerifySet(sets[0]); err != nil {
		t.Fatal(err)
	}
}

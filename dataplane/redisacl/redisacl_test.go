package redisacl_test

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/distcache/distcache/dataplane/redisacl"
	"github.com/distcache/distcache/dataplane/redisconn"
)

func hash(p string) string {
	s := sha256.Sum256([]byte(p))
	return hex.EncodeToString(s[:])
}

func TestACLFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	current, previous, empty := write("current", "new-pass\n"), write("previous", "old-pass"), write("empty", "")
	missing := filepath.Join(dir, "missing")
	tests := []struct {
		name   string
		login  redisconn.Settings
		want   string
		errHas string
	}{
		{"default user", redisconn.Settings{PasswordFile: current},
			"user default on #" + hash("new-pass") + " ~* &* +@all\n", ""},
		{"ACL user with a previous password", redisconn.Settings{Username: "shim", PasswordFile: current, PreviousPasswordFile: previous},
			"user default off\nuser shim on #" + hash("new-pass") + " #" + hash("old-pass") + " ~* &* +@all\n", ""},
		{"previous missing", redisconn.Settings{PasswordFile: current, PreviousPasswordFile: missing},
			"user default on #" + hash("new-pass") + " ~* &* +@all\n", ""},
		{"previous empty", redisconn.Settings{PasswordFile: current, PreviousPasswordFile: empty},
			"user default on #" + hash("new-pass") + " ~* &* +@all\n", ""},
		{"previous equal to current", redisconn.Settings{PasswordFile: current, PreviousPasswordFile: current},
			"user default on #" + hash("new-pass") + " ~* &* +@all\n", ""},
		{"no password file", redisconn.Settings{}, "", "without a password file"},
		{"missing password file", redisconn.Settings{PasswordFile: missing}, "", "cannot read Redis password file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := redisacl.ACLFile(tc.login)
			if tc.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("ACLFile: %v, want an error with %q", err, tc.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("ACLFile =\n%s\nwant\n%s", got, tc.want)
			}
			if strings.Contains(got, "pass") && !strings.Contains(got, "nopass") {
				t.Errorf("the ACL file holds a password in clear: %q", got)
			}
		})
	}
}

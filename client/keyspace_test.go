package client_test

import (
	"testing"

	"github.com/distcache/distcache/client"
	"github.com/distcache/distcache/dataplane/heldkeys"
	"github.com/distcache/distcache/dataplane/shim"
)

// TestOwnKeys: the keys the cluster keeps in Redis are its own
// (client.OwnPrefix), which the keyspace commands hide and keep; a key of
// the store is not.
func TestOwnKeys(t *testing.T) {
	for _, tc := range []struct {
		key string
		own bool
	}{
		{heldkeys.Key, true},
		{shim.AppliedPrefix + "127.0.0.1:7000/1f/put", true},
		{"distcache:ping", true},
		{"user:1", false},
		{"distcache", false},
		{"Distcache:held", false},
	} {
		if got := client.IsOwnKey(tc.key); got != tc.own {
			t.Errorf("IsOwnKey(%q) = %v, want %v", tc.key, got, tc.own)
		}
	}
}

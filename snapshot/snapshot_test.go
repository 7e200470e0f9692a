package snapshot_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/distcache/distcache/dataplane/redisconn"

	"github.com/redis/go-redis/v9"

	"github.com/distcache/distcache/internal/testing/redistest"
	"github.com/distcache/distcache/snapshot"
)

// takeOne writes a few keys into a real redis-server started with opts,
// takes a one-shard snapshot set of it and returns the set's directory.
func takeOne(t *testing.T, password string, opts ...redistest.Option) (string, snapshot.Manifest) {
	t.Helper()
	srv := redistest.Start(t, opts...)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), Password: password})
	defer c.Close()
	ctx := t.Context()
	// No wait before the transfer: Redis otherwise waits 5 s for more
	// replicas before it starts a diskless one.
	if err := c.ConfigSet(ctx, "repl-diskless-sync-delay", "0").Err(); err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		if err := c.Set(ctx, "key-"+string(rune('a'+i%26))+strings.Repeat("x", i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	root := t.TempDir()
	src := snapshot.Source{Addr: srv.Addr()}
	if password != "" { // logged in as the backup command does, with the shims' dialer
		file := filepath.Join(t.TempDir(), "password")
		if err := os.WriteFile(file, []byte(password), 0o600); err != nil {
			t.Fatal(err)
		}
		o, err := redisconn.Settings{Addr: srv.Addr(), PasswordFile: file}.Options()
		if err != nil {
			t.Fatal(err)
		}
		src.Dial = o.Dialer
	}
	at := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	dir, m, err := snapshot.Take(ctx, snapshot.TakeOptions{
		Cluster: "one", Racks: 1, ShardsPerRack: 1, Root: root, Now: func() time.Time { return at },
		Source: func(r, s int) snapshot.Source { return src },
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(root, "one-20260701T120000Z"); dir != want {
		t.Fatalf("set directory %s, want %s", dir, want)
	}
	return dir, m
}

// TestTakeVerifiesRDB copies a real redis-server's RDB over the
// replication protocol, with and without AUTH, and checks the manifest and
// the RDB.
func TestTakeVerifiesRDB(t *testing.T) {
	for _, tc := range []struct {
		name     string
		password string
		opts     []redistest.Option
	}{
		{name: "no auth"},
		{name: "auth", password: "s3cret", opts: []redistest.Option{redistest.WithPassword("", "s3cret")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, m := takeOne(t, tc.password, tc.opts...)
			if len(m.Shards) != 1 || m.Shards[0].Name != "one-rack-0-0" || m.Shards[0].File != "one-rack-0-0.rdb" {
				t.Fatalf("manifest shards %+v, want one-rack-0-0 in one-rack-0-0.rdb", m.Shards)
			}
			s := m.Shards[0]
			if s.RedisVersion == "" || s.Version < 9 || !s.Checksummed || s.Size < 100 || len(s.SHA256) != 64 {
				t.Fatalf("shard %+v: want a Redis version, RDB version ≥ 9, a checked CRC64, a size and a SHA-256", s)
			}
			if _, err := snapshot.VerifySet(dir); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestTakeRefusesUnreachableShard fails a set whose shard cannot be
// reached and leaves no directory behind.
func TestTakeRefusesUnreachableShard(t *testing.T) {
	root := t.TempDir()
	srv := redistest.Start(t)
	addr := srv.Addr()
	srv.Stop()
	_, _, err := snapshot.Take(t.Context(), snapshot.TakeOptions{
		Cluster: "gone", Racks: 1, ShardsPerRack: 1, Root: root,
		Source: func(r, s int) snapshot.Source { return snapshot.Source{Addr: addr} },
	})
	if err == nil || !strings.Contains(err.Error(), "shard gone-rack-0-0") || !strings.Contains(err.Error(), "cannot connect") {
		t.Fatalf("Take of a stopped server: %v; want cannot connect, naming the shard", err)
	}
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Fatalf("left %d entries in the root", len(entries))
	}
}

// TestRedisCRC64 checks the checksum against the check value of Redis's
// crc64.c ("123456789").
func TestRedisCRC64(t *testing.T) {
	if got := snapshot.RedisCRC64([]byte("123456789")); got != 0xe9c6d914c4b8d9ca {
		t.Fatalf("crc64 of 123456789 = %016x, want e9c6d914c4b8d9ca", got)
	}
}

// TestVerifyRDBRefusesCorruption changes a real RDB in each way and checks
// that VerifyRDB refuses it with ErrCorrupt and says why.
func TestVerifyRDBRefusesCorruption(t *testing.T) {
	dir, m := takeOne(t, "")
	good, err := os.ReadFile(filepath.Join(dir, m.Shards[0].File))
	if err != nil {
		t.Fatal(err)
	}
	flip := func(i int) []byte { b := bytes.Clone(good); b[i] ^= 0x20; return b }
	for _, tc := range []struct {
		name string
		rdb  []byte
		want string // "" for no error
	}{
		{"intact", good, ""},
		{"checksum off", append(bytes.Clone(good[:len(good)-8]), make([]byte, 8)...), ""},
		{"byte flipped", flip(len(good) / 2), "CRC64"},
		{"truncated", good[:len(good)-20], "truncated?"},
		{"footer cut", good[:len(good)-9], "truncated?"},
		{"no magic", flip(0), "no REDIS magic"},
		{"bad version", append([]byte("REDISxx11"), good[9:]...), "bad version"},
		{"empty", nil, "9-byte header"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := snapshot.VerifyRDB(bytes.NewReader(tc.rdb))
			if tc.want == "" {
				if err != nil {
					t.Fatalf("VerifyRDB: %v", err)
				}
				return
			}
			if !errors.Is(err, snapshot.ErrCorrupt) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("VerifyRDB: %v; want ErrCorrupt saying %q", err, tc.want)
			}
		})
	}
}

// TestVerifySetRefusesChangedFile changes a byte of a set's RDB: the
// manifest's SHA-256 no longer matches.
func TestVerifySetRefusesChangedFile(t *testing.T) {
	dir, m := takeOne(t, "")
	path := filepath.Join(dir, m.Shards[0].File)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 1
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = snapshot.VerifySet(dir)
	if !errors.Is(err, snapshot.ErrCorrupt) || !strings.Contains(err.Error(), "shard one-rack-0-0") || !strings.Contains(err.Error(), "SHA-256") {
		t.Fatalf("VerifySet: %v; want ErrCorrupt naming the shard and the SHA-256", err)
	}
}

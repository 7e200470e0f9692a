package layout_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/internal/testing/poll"
	"github.com/distcache/distcache/internal/testing/redistest"
	"github.com/distcache/distcache/layout"
)

// Bounds of the writer that a crash interrupts.
const (
	crashWritesBefore = 500       // acknowledged writes before the crash
	crashMaxWrites    = 1_000_000 // the writer stops here if no crash comes
	crashMaxDuration  = 20 * time.Second
)

// loss is what a crash of redis-server may lose of the acknowledged writes.
type loss int

const (
	// losesNothing: every acknowledged write survives.
	losesNothing loss = iota
	// losesTail: the writes Redis had not yet written to its append-only
	// file when it died may be lost, and only those: the survivors are
	// the first writes, in order (with appendfsync everysec Redis
	// postpones the write while a background fsync runs, replying all the
	// same).
	losesTail
	// losesAll: nothing survives.
	losesAll
)

// TestRedisCrashLoses runs a real redis-server with each append-only
// setting as the operator and standalone mode configure it
// (layout.AppendOnlyArgs), writes keys key-0, key-1, … one at a time,
// kills the server with SIGKILL, restarts it on the same directory and
// checks what survived. docs/durability.md is the table of these results.
func TestRedisCrashLoses(t *testing.T) {
	tests := []struct {
		name        string
		setting     v1alpha1.AppendOnly
		appendOnly  string // CONFIG GET appendonly
		appendFsync string // CONFIG GET appendfsync ("": not checked)
		// settled: the writer stops and the kill waits until Redis has
		// written its append-only file (redistest.AppendOnlyWritten);
		// else the kill comes while the client is writing.
		settled bool
		loses   loss
	}{
		{"always, killed while writing", v1alpha1.AppendOnlyAlways, "yes", "always", false, losesNothing},
		{"everysec, killed while writing", v1alpha1.AppendOnlyEverySec, "yes", "everysec", false, losesTail},
		{"everysec, killed once the file has every write", v1alpha1.AppendOnlyEverySec, "yes", "everysec", true, losesNothing},
		{"disabled, killed while writing", v1alpha1.AppendOnlyDisabled, "no", "", false, losesAll},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t, redistest.WithArgs(layout.AppendOnlyArgs(tc.setting)...))
			rdb := newClient(t, srv.Addr())
			assertConfig(t, rdb, "appendonly", tc.appendOnly)
			if tc.appendFsync != "" {
				assertConfig(t, rdb, "appendfsync", tc.appendFsync)
			}

			var acked int
			if tc.settled {
				acked = writeSettleCrash(t, rdb, srv)
			} else {
				acked = writeUntilCrash(t, rdb, srv)
			}
			srv.Restart()
			rdb = newClient(t, srv.Addr())

			n, err := rdb.DBSize(t.Context()).Result()
			if err != nil {
				t.Fatalf("DBSIZE after restart: %v", err)
			}
			// The write in flight at the crash may or may not have been
			// applied; it was not acknowledged.
			switch {
			case tc.loses == losesAll && n != 0:
				t.Fatalf("%d keys after a crash without an append-only file, want none", n)
			case n > int64(acked)+1:
				t.Fatalf("%d keys after the crash, more than the %d acknowledged and 1 in flight", n, acked)
			case tc.loses == losesNothing && n < int64(acked):
				t.Fatalf("%d keys after the crash, want the %d acknowledged (+1 in flight)", n, acked)
			}
			// n keys: they must be the first n written.
			assertWritten(t, rdb, int(n))
			if tc.loses == losesTail && int(n) < acked {
				t.Logf("the crash lost the last %d of %d acknowledged writes (Redis had not written them to its append-only file)", acked-int(n), acked)
			}
		})
	}
}

// newClient is a client of one connection that never retries: a write it
// reports as done was acknowledged by the server it sent it to.
func newClient(t *testing.T, addr string) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 1, MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

func assertConfig(t *testing.T, rdb *redis.Client, name, want string) {
	t.Helper()
	got, err := rdb.ConfigGet(t.Context(), name).Result()
	if err != nil {
		t.Fatalf("CONFIG GET %s: %v", name, err)
	}
	if got[name] != want {
		t.Fatalf("CONFIG GET %s = %q, want %q", name, got[name], want)
	}
}

// writeUntilCrash writes key-0, key-1, … one at a time, kills the server
// with SIGKILL once crashWritesBefore writes were acknowledged, while the
// writer goes on, and returns how many writes were acknowledged: keys
// key-0 … key-(n-1).
func writeUntilCrash(t *testing.T, rdb *redis.Client, srv *redistest.Server) int {
	t.Helper()
	var acked atomic.Int64
	done := make(chan error, 1)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), crashMaxDuration)
	defer cancel()
	go func() {
		for i := range crashMaxWrites {
			if err := rdb.Set(ctx, key(i), value(i), 0).Err(); err != nil {
				done <- err
				return
			}
			acked.Store(int64(i) + 1)
		}
		done <- nil
	}()
	poll.Until(t, fmt.Sprintf("%d writes acknowledged", crashWritesBefore), func() bool {
		return acked.Load() >= crashWritesBefore
	})
	srv.Stop() // SIGKILL
	if err := <-done; err == nil {
		t.Fatalf("the writer wrote %d keys without seeing the crash", crashMaxWrites)
	}
	return int(acked.Load())
}

// writeSettleCrash writes crashWritesBefore keys, waits until Redis has
// written them all to its append-only file, kills it with SIGKILL and
// returns the number of writes.
func writeSettleCrash(t *testing.T, rdb *redis.Client, srv *redistest.Server) int {
	t.Helper()
	for i := range crashWritesBefore {
		if err := rdb.Set(t.Context(), key(i), value(i), 0).Err(); err != nil {
			t.Fatalf("SET %s: %v", key(i), err)
		}
	}
	poll.Eventually(t, "the writes in the append-only file", func() (bool, error) {
		return redistest.AppendOnlyWritten(srv.Addr())
	})
	srv.Stop() // SIGKILL
	return crashWritesBefore
}

// assertWritten checks that key-0 … key-(n-1) hold their values.
func assertWritten(t *testing.T, rdb *redis.Client, n int) {
	t.Helper()
	const batch = 1000
	for lo := 0; lo < n; lo += batch {
		keys := make([]string, 0, batch)
		for i := lo; i < min(lo+batch, n); i++ {
			keys = append(keys, key(i))
		}
		got, err := rdb.MGet(t.Context(), keys...).Result()
		if err != nil {
			t.Fatalf("MGET: %v", err)
		}
		if i := slices.IndexFunc(got, func(v any) bool { return v == nil }); i >= 0 {
			t.Fatalf("%s lost in the crash, and a later write kept", keys[i])
		}
		for j, v := range got {
			if want := value(lo + j); v != want {
				t.Fatalf("%s = %v after the crash, want %q", keys[j], v, want)
			}
		}
	}
}

func key(i int) string   { return fmt.Sprintf("key-%d", i) }
func value(i int) string { return fmt.Sprintf("value-%d", i) }

func TestRedisArgsAppendOnly(t *testing.T) {
	tests := []struct {
		name        string
		setting     v1alpha1.AppendOnly
		wantArgs    []string
		persistence string
	}{
		{"unset: everysec", "", []string{"--appendonly", "yes", "--appendfsync", "everysec"}, "aof-everysec"},
		{"everysec", v1alpha1.AppendOnlyEverySec, []string{"--appendonly", "yes", "--appendfsync", "everysec"}, "aof-everysec"},
		{"always", v1alpha1.AppendOnlyAlways, []string{"--appendonly", "yes", "--appendfsync", "always"}, "aof-always"},
		{"disabled", v1alpha1.AppendOnlyDisabled, []string{"--appendonly", "no"}, "none"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := &v1alpha1.CacheClusterSpec{Storage: v1alpha1.StorageSpec{AppendOnly: tc.setting}}
			want := append([]string{"--port", "6379", "--save", "", "--dir", "/data"}, tc.wantArgs...)
			if got := layout.RedisArgs(spec, 6379, "/data"); !slices.Equal(got, want) {
				t.Errorf("RedisArgs = %q, want %q", got, want)
			}
			if got := layout.Persistence(layout.AppendOnly(spec)); got != tc.persistence {
				t.Errorf("Persistence = %q, want %q", got, tc.persistence)
			}
		})
	}
}

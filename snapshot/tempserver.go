package snapshot

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// tempServer is a redis-server started on one RDB, reachable on a unix
// socket only, that keeps nothing: it exists to be read.
type tempServer struct {
	cmd    *exec.Cmd
	dir    string
	exited chan error
	client *redis.Client
}

// startTempServer starts binary on the RDB at rdb, in a new directory
// under tmp, and waits until it has loaded it (or until loadTimeout).
func startTempServer(ctx context.Context, binary, rdb, tmp string, loadTimeout time.Duration) (*tempServer, error) {
	dir, err := os.MkdirTemp(tmp, "distcache-restore-")
	if err != nil {
		return nil, fmt.Errorf("cannot create a directory for redis-server: %w", err)
	}
	abs, err := filepath.Abs(rdb)
	if err != nil {
		return nil, fmt.Errorf("cannot find %s: %w", rdb, err)
	}
	if err := os.Symlink(abs, filepath.Join(dir, "dump.rdb")); err != nil {
		return nil, fmt.Errorf("cannot link %s for redis-server: %w", rdb, err)
	}
	sock := filepath.Join(dir, "redis.sock")
	logFile := filepath.Join(dir, "redis.log")
	t := &tempServer{dir: dir, exited: make(chan error, 1)}
	// No TCP port, no persistence: the server only loads dump.rdb.
	t.cmd = exec.Command(binary, "--port", "0", "--unixsocket", sock, "--unixsocketperm", "700",
		"--dir", dir, "--dbfilename", "dump.rdb", "--save", "", "--appendonly", "no",
		"--daemonize", "no", "--logfile", logFile)
	t.cmd.SysProcAttr = sysProcAttr()
	if err := t.cmd.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("cannot start %s: %w", binary, err)
	}
	go func() { t.exited <- t.cmd.Wait() }()
	t.client = redis.NewClient(&redis.Options{Network: "unix", Addr: sock, MaxRetries: -1})
	if err := t.waitLoaded(ctx, loadTimeout, logFile); err != nil {
		t.stop()
		return nil, err
	}
	return t, nil
}

// waitLoaded polls PING until the server answers PONG (not LOADING),
// fails as soon as it exits, and gives up after bound.
func (t *tempServer) waitLoaded(ctx context.Context, bound time.Duration, logFile string) error {
	deadline := time.NewTimer(bound)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		last = t.client.Ping(pctx).Err()
		cancel()
		if last == nil {
			return nil
		}
		select {
		case err := <-t.exited:
			t.exited <- err
			return fmt.Errorf("cannot load the RDB: redis-server exited (%v): %s", err, logTail(logFile))
		case <-deadline.C:
			return fmt.Errorf("cannot load the RDB: redis-server not ready after %s (last: %w): %s", bound, last, logTail(logFile))
		case <-ctx.Done():
			return fmt.Errorf("cannot load the RDB: %w", ctx.Err())
		case <-tick.C:
		}
	}
}

// stop kills the server (it keeps nothing) and removes its directory.
func (t *tempServer) stop() {
	_ = t.client.Close()
	if t.cmd.Process != nil {
		_ = t.cmd.Process.Kill()
		<-t.exited
	}
	_ = os.RemoveAll(t.dir)
}

// logTail is the end of a redis-server log, for an error message.
func logTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "no log"
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	return strings.Join(lines, " | ")
}

// scanBatch is the keys asked of each SCAN.
const scanBatch = 500

// restoreShardViaServer loads one RDB into a temporary server and
// copies its keys with SCAN, DUMP, PTTL and RESTORE.
func restoreShardViaServer(ctx context.Context, o RestoreOptions, targets [][]*redis.Client, rdb string) (RestoreResult, error) {
	var res RestoreResult
	src, err := startTempServer(ctx, o.RedisServer, rdb, o.TempDir, o.LoadTimeout)
	if err != nil {
		return res, err
	}
	defer src.stop()
	var cursor uint64
	for {
		keys, next, err := src.client.Scan(ctx, cursor, "*", scanBatch).Result()
		if err != nil {
			return res, fmt.Errorf("cannot SCAN the snapshot: %w", err)
		}
		n, err := copyKeys(ctx, o, src.client, targets, keys)
		res.Keys += n.Keys
		res.Internal += n.Internal
		res.Expired += n.Expired
		if err != nil {
			return res, err
		}
		if cursor = next; cursor == 0 {
			return res, nil
		}
	}
}

// copyKeys DUMPs keys from src and RESTOREs them into their target shards.
func copyKeys(ctx context.Context, o RestoreOptions, src *redis.Client, targets [][]*redis.Client, keys []string) (RestoreResult, error) {
	var res RestoreResult
	var want []string
	for _, k := range keys {
		if internalKey(k) {
			res.Internal++
			continue
		}
		want = append(want, k)
	}
	pipe := src.Pipeline()
	dumps := make([]*redis.StringCmd, len(want))
	ttls := make([]*redis.DurationCmd, len(want))
	for i, k := range want {
		dumps[i], ttls[i] = pipe.Dump(ctx, k), pipe.PTTL(ctx, k)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return res, fmt.Errorf("cannot DUMP keys of the snapshot: %w", err)
	}
	byShard := map[[2]int][]restoreItem{}
	for i, k := range want {
		payload, err := dumps[i].Result()
		ttl := ttls[i].Val()
		if errors.Is(err, redis.Nil) || ttl == -2 || (ttl >= 0 && ttl < time.Millisecond) {
			res.Expired++ // expired since SCAN
			continue
		}
		if err != nil {
			return res, fmt.Errorf("cannot DUMP key %q: %w", k, err)
		}
		if ttl < 0 {
			ttl = 0
		}
		r, s := o.Placement.Shard(k)
		byShard[[2]int{r, s}] = append(byShard[[2]int{r, s}], restoreItem{key: k, payload: payload, ttl: ttl})
	}
	for rs, ds := range byShard {
		n, err := restoreInto(ctx, targets[rs[0]][rs[1]], ds, o.Replace)
		res.Keys += n
		if err != nil {
			name := o.Placement.Map().Storage.Racks[rs[0]].Shards[rs[1]].Name
			return res, fmt.Errorf("cannot restore into shard %s: %w", name, err)
		}
	}
	return res, nil
}

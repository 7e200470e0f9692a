package redisbatch

import (
	"context"
	"errors"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/distcache/distcache/internal/testing/redistest"
)

// pipelineCounter is a go-redis hook that counts the round trips that
// carry GETs: single GETs, and pipelines with the GETs they carried (the
// client's own connection setup is not counted).
type pipelineCounter struct {
	singles, pipelines, pipelined atomic.Int64
}

func (*pipelineCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *pipelineCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "get" {
			c.singles.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (c *pipelineCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		var gets int64
		for _, cmd := range cmds {
			if cmd.Name() == "get" {
				gets++
			}
		}
		if gets > 0 {
			c.pipelines.Add(1)
			c.pipelined.Add(gets)
		}
		return next(ctx, cmds)
	}
}

func newBatcher(t *testing.T) (*Batcher, *pipelineCounter) {
	t.Helper()
	srv := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	for i := range 20 {
		if err := rdb.Set(t.Context(), "k"+strconv.Itoa(i), "v"+strconv.Itoa(i), 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	var c pipelineCounter
	rdb.AddHook(&c)
	return &Batcher{rdb: rdb}, &c
}

// TestBatcherPipelinesQueuedReads queues reads as if a round trip were
// under way; the next read runs them all, its own included, in one
// pipeline, and each gets its own key's value (or redis.Nil).
func TestBatcherPipelinesQueuedReads(t *testing.T) {
	b, c := newBatcher(t)
	keys := []string{"k1", "k2", "missing", "k3", "k1"}
	var queued []*Read
	for _, k := range keys {
		p := &Read{Key: k, done: make(chan struct{}), last: true}
		queued = append(queued, p)
	}
	b.queue = append(b.queue, queued...)
	v, err := b.Get(t.Context(), "k4")
	if err != nil || string(v) != "v4" {
		t.Fatalf("get k4 = %q, %v", v, err)
	}
	for i, p := range queued {
		<-p.done
		want := "v" + keys[i][1:]
		switch {
		case keys[i] == "missing":
			if !errors.Is(p.Err, redis.Nil) {
				t.Errorf("missing key: %q, %v; want redis.Nil", p.Value, p.Err)
			}
		case p.Err != nil || string(p.Value) != want:
			t.Errorf("%s = %q, %v; want %q", keys[i], p.Value, p.Err, want)
		}
	}
	if c.pipelines.Load() != 1 || c.pipelined.Load() != int64(len(keys)+1) || c.singles.Load() != 0 {
		t.Errorf("%d pipelines of %d commands and %d single commands, want one pipeline of %d",
			c.pipelines.Load(), c.pipelined.Load(), c.singles.Load(), len(keys)+1)
	}
	if b.busy || len(b.queue) != 0 {
		t.Errorf("busy %v with %d queued after the round trips", b.busy, len(b.queue))
	}
}

// TestBatcherAlone checks that a read with nothing else going on is one
// GET.
func TestBatcherAlone(t *testing.T) {
	b, c := newBatcher(t)
	if v, err := b.Get(t.Context(), "k7"); err != nil || string(v) != "v7" {
		t.Fatalf("get k7 = %q, %v", v, err)
	}
	if c.singles.Load() != 1 || c.pipelines.Load() != 0 {
		t.Errorf("%d single commands and %d pipelines, want one GET", c.singles.Load(), c.pipelines.Load())
	}
}

// TestBatcherConcurrent reads from many goroutines at once: every read
// gets its own key's value, whichever round trip carried it.
func TestBatcherConcurrent(t *testing.T) {
	b, c := newBatcher(t)
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 100 {
				k := (g + i) % 20
				v, err := b.Get(t.Context(), "k"+strconv.Itoa(k))
				if err != nil || string(v) != "v"+strconv.Itoa(k) {
					t.Errorf("get k%d = %q, %v", k, v, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if got := c.singles.Load() + c.pipelined.Load(); got != 1600 {
		t.Errorf("%d GETs reached Redis, want 1600", got)
	}
}

// TestBatcherRedisDown checks that a round trip that fails fails every
// read it carried, and the batcher serves the next ones.
func TestBatcherRedisDown(t *testing.T) {
	var lc net.ListenConfig
	ln, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close() // nothing listens there now
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer rdb.Close()
	b := &Batcher{rdb: rdb}
	p := &Read{Key: "a", done: make(chan struct{}), last: true}
	b.queue = append(b.queue, p)
	if _, err := b.Get(t.Context(), "b"); err == nil || errors.Is(err, redis.Nil) {
		t.Fatalf("get with Redis down: %v, want a connection error", err)
	}
	if <-p.done; p.Err == nil || errors.Is(p.Err, redis.Nil) {
		t.Fatalf("queued get with Redis down: %v, want a connection error", p.Err)
	}
	if b.busy {
		t.Fatal("the batcher stays busy after a failed round trip")
	}
}

// The batcher keeps one connection; when Redis closes it (a restart, a
// CLIENT KILL), the next read runs again on a new one instead of failing,
// and an error reply (a key of another type) is Redis's answer, not a
// broken connection.
func TestBatcherReconnects(t *testing.T) {
	b, _ := newBatcher(t)
	ctx := t.Context()
	if v, err := b.Get(ctx, "k1"); err != nil || string(v) != "v1" {
		t.Fatalf("get k1 = %q, %v", v, err)
	}
	id, err := b.conn.ClientID(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := b.rdb.ClientKillByFilter(ctx, "ID", strconv.FormatInt(id, 10)).Err(); err != nil {
		t.Fatal(err)
	}
	if v, err := b.Get(ctx, "k2"); err != nil || string(v) != "v2" {
		t.Fatalf("get after the connection was killed = %q, %v; want v2", v, err)
	}
	if err := b.rdb.LPush(ctx, "list", "x").Err(); err != nil {
		t.Fatal(err)
	}
	conn := b.conn
	var reply redis.Error
	if _, err := b.Get(ctx, "list"); !errors.As(err, &reply) {
		t.Fatalf("get of a list = %v, want Redis's WRONGTYPE reply", err)
	}
	if b.conn != conn {
		t.Fatal("an error reply replaced the connection")
	}
}

// TestBatcherEval checks that a script's run shares the round trip of the
// reads queued with it, returns the script's result, and loads a script
// Redis does not know (NOSCRIPT, as after a restart or SCRIPT FLUSH).
func TestBatcherEval(t *testing.T) {
	b, c := newBatcher(t)
	script := redis.NewScript(`redis.call('SET', KEYS[1], ARGV[1]) return 7`)
	if err := b.rdb.ScriptFlush(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	queued := &Read{Key: "k1", done: make(chan struct{}), last: true}
	b.queue = append(b.queue, queued)
	res, err := b.Eval(t.Context(), script, []string{"set-by-script"}, "v")
	if err != nil || res != int64(7) {
		t.Fatalf("Eval = %v, %v; want 7", res, err)
	}
	if <-queued.done; queued.Err != nil || string(queued.Value) != "v1" {
		t.Fatalf("queued GET k1 = %q, %v", queued.Value, queued.Err)
	}
	if c.pipelines.Load() != 1 {
		t.Errorf("%d pipelines carried GETs, want the one with the script", c.pipelines.Load())
	}
	if v, err := b.Get(t.Context(), "set-by-script"); err != nil || string(v) != "v" {
		t.Fatalf("the script's key = %q, %v; want v", v, err)
	}
	if res, err := b.Eval(t.Context(), script, []string{"set-by-script"}, "w"); err != nil || res != int64(7) {
		t.Fatalf("second Eval (script known) = %v, %v", res, err)
	}
}

// TestBatcherCommands runs two calls of commands with a GET queued beside
// them: each command runs in order, and a refused one reports its error
// without stopping the others.
func TestBatcherCommands(t *testing.T) {
	b, _ := newBatcher(t)
	queued := &Read{Key: "k2", done: make(chan struct{}), last: true}
	b.queue = append(b.queue, queued)
	ok := &Call{Cmds: [][]any{{"mset", "c-a", "1", "c-b", "2"}, {"pexpire", "c-b", 60000}}}
	bad := &Call{Cmds: [][]any{{"set"}, {"set", "c-c", "3"}}}
	b.EvalMany(t.Context(), []*Call{ok, bad})
	if res, _ := ok.Result.([]any); ok.Err != nil || len(res) != 2 || res[0] != "OK" || res[1] != int64(1) {
		t.Errorf("commands = %v, %v; want [OK 1]", ok.Result, ok.Err)
	}
	if bad.Err == nil || len(bad.Errs) != 2 || bad.Errs[1] != nil {
		t.Errorf("a refused command then a SET: %v, %v; want the first's error only", bad.Err, bad.Errs)
	}
	if <-queued.done; queued.Err != nil || string(queued.Value) != "v2" {
		t.Errorf("queued GET k2 = %q, %v", queued.Value, queued.Err)
	}
	for key, want := range map[string]string{"c-a": "1", "c-b": "2", "c-c": "3"} {
		if v, err := b.Get(t.Context(), key); err != nil || string(v) != want {
			t.Errorf("%s = %q, %v; want %q", key, v, err, want)
		}
	}
	if ttl, err := b.rdb.PTTL(t.Context(), "c-b").Result(); err != nil || ttl <= 0 {
		t.Errorf("c-b's TTL = %v, %v; want one", ttl, err)
	}
}

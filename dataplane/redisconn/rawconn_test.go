package redisconn_test

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distcache/distcache/dataplane/redisconn"
	"github.com/distcache/distcache/internal/testing/redistest"
)

// go-redis over Dial's connections: values larger than a socket buffer
// both ways, pipelines, a read deadline that expires, and a server that
// closes the connection (the next command fails, the one after it runs on
// a new connection).
func TestDialServesGoRedis(t *testing.T) {
	srv := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), Dialer: redisconn.Dial, MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := t.Context()
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<18) // 4 MiB
	if err := rdb.Set(ctx, "big", big, 0).Err(); err != nil {
		t.Fatal(err)
	}
	if got, err := rdb.Get(ctx, "big").Bytes(); err != nil || !bytes.Equal(got, big) {
		t.Fatalf("GET big: %d bytes, %v; want the %d written", len(got), err, len(big))
	}
	pipe := rdb.Pipeline()
	cmds := make([]*redis.StringCmd, 100)
	for i := range cmds {
		cmds[i] = pipe.Get(ctx, "big")
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	for i, c := range cmds {
		if got, _ := c.Bytes(); len(got) != len(big) {
			t.Fatalf("pipelined GET %d: %d bytes", i, len(got))
		}
	}
	if _, err := rdb.Get(ctx, "missing").Result(); !errors.Is(err, redis.Nil) {
		t.Fatalf("GET missing: %v, want redis.Nil", err)
	}

	// Nothing was asked: a read waits until its deadline, then fails.
	c, err := redisconn.Dial(ctx, "tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.SetReadDeadline(time.Now().Add(50 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Read(make([]byte, 16)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past the deadline: %v, want os.ErrDeadlineExceeded", err)
	}

	if err := rdb.Do(ctx, "CLIENT", "KILL", "TYPE", "normal").Err(); err != nil && !strings.Contains(err.Error(), "EOF") {
		t.Logf("CLIENT KILL: %v", err) // the killer's own connection may go too
	}
	_ = rdb.Get(ctx, "big").Err() // may fail: its connection was killed
	if got, err := rdb.Get(ctx, "big").Bytes(); err != nil || len(got) != len(big) {
		t.Fatalf("GET after the connections were killed: %d bytes, %v", len(got), err)
	}
}

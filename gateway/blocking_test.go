package gateway_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distcache/distcache/internal/testing/clustertest"
	"github.com/distcache/distcache/internal/testing/poll"
)

// blockedClients is the number of clients blocked at c's Redis servers.
func blockedClients(t *testing.T, c *clustertest.Cluster) int {
	t.Helper()
	n := 0
	for _, srv := range c.Redis {
		rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
		info, err := rdb.Info(t.Context(), "clients").Result()
		_ = rdb.Close()
		if err != nil {
			t.Fatal(err)
		}
		n += infoInt(info, "blocked_clients")
	}
	return n
}

// TestBlockingCommands blocks BLPOP, BLMOVE and XREAD at Redis until
// another client gives them something, times them out, and ends a wait
// whose client went away without losing what is pushed afterwards.
func TestBlockingCommands(t *testing.T) {
	addr, _, c := startGatewayOn(t, txCluster)
	rc, other := redisClient(t, addr, 2), redisClient(t, addr, 2)
	ctx := t.Context()
	blocked := func(n int) {
		t.Helper()
		poll.Eventually(t, "the clients blocked at Redis", func() (bool, error) { return blockedClients(t, c) == n, nil })
	}

	done := make(chan []string, 1)
	go func() { done <- rc.BLPop(ctx, 0, "{q}list").Val() }()
	blocked(1)
	other.RPush(ctx, "{q}list", "x")
	if got := <-done; strings.Join(got, " ") != "{q}list x" {
		t.Errorf("BLPOP: %q, want [{q}list x]", got)
	}

	moved := make(chan string, 1)
	go func() { moved <- rc.BLMove(ctx, "{q}src", "{q}dst", "LEFT", "RIGHT", 0).Val() }()
	blocked(1)
	other.RPush(ctx, "{q}src", "y")
	if got := <-moved; got != "y" {
		t.Errorf("BLMOVE: %q, want y", got)
	}
	if got := other.LRange(ctx, "{q}dst", 0, -1).Val(); strings.Join(got, " ") != "y" {
		t.Errorf("the destination after BLMOVE: %q", got)
	}

	read := make(chan []redis.XStream, 1)
	go func() { read <- rc.XRead(ctx, &redis.XReadArgs{Streams: []string{"{q}s", "$"}, Block: 0}).Val() }()
	blocked(1)
	other.XAdd(ctx, &redis.XAddArgs{Stream: "{q}s", ID: "1-1", Values: []string{"f", "v"}})
	if got := <-read; len(got) != 1 || len(got[0].Messages) != 1 || got[0].Messages[0].ID != "1-1" {
		t.Errorf("XREAD BLOCK: %+v", got)
	}

	if err := rc.BLPop(ctx, 50*time.Millisecond, "{q}empty").Err(); !errors.Is(err, redis.Nil) {
		t.Errorf("BLPOP that times out: %v, want nil", err)
	}

	// Inside MULTI a blocking command does not block.
	cmds, err := rc.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.BLPop(ctx, 0, "{q}empty")
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) || len(cmds) != 1 || !errors.Is(cmds[0].Err(), redis.Nil) {
		t.Errorf("BLPOP in MULTI: %v, %v", cmds, err)
	}

	// A client that goes away stops waiting: what is pushed next stays.
	gone := redisClient(t, addr, 2)
	gctx, cancel := context.WithCancel(ctx)
	go func() { _ = gone.BLPop(gctx, 0, "{q}gone").Err() }()
	blocked(1)
	cancel()
	_ = gone.Close()
	blocked(0)
	other.RPush(ctx, "{q}gone", "z")
	if n := other.LLen(ctx, "{q}gone").Val(); n != 1 {
		t.Errorf("after the blocked client left, the list holds %d elements, want 1", n)
	}
}

// TestClientUnblock ends blocked commands with CLIENT UNBLOCK: TIMEOUT
// answers as the timeout would, ERROR with Redis' UNBLOCKED error; a
// connection that is not blocked gets 0. BZPOPMIN over RESP3 answers a
// double score.
func TestClientUnblock(t *testing.T) {
	addr, _, c := startGatewayOn(t, txCluster)
	rc, other := redisClient(t, addr, 2), redisClient(t, addr, 2)
	ctx := t.Context()
	conn := rc.Conn()
	defer conn.Close()
	id, err := conn.ClientID(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ how, want string }{{"TIMEOUT", "redis: nil"}, {"ERROR", "UNBLOCKED"}} {
		done := make(chan error, 1)
		go func() { done <- conn.BLPop(ctx, 0, "{u}list").Err() }()
		poll.Eventually(t, "the client blocked", func() (bool, error) { return blockedClients(t, c) == 1, nil })
		if n, err := other.Do(ctx, "client", "unblock", id, tc.how).Int(); err != nil || n != 1 {
			t.Fatalf("CLIENT UNBLOCK %s: %v, %v", tc.how, n, err)
		}
		if err := <-done; err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("BLPOP unblocked with %s: %v, want %s", tc.how, err, tc.want)
		}
	}
	if n, err := other.Do(ctx, "client", "unblock", id).Int(); err != nil || n != 0 {
		t.Errorf("CLIENT UNBLOCK of a connection not blocked: %v, %v", n, err)
	}
	r3 := redisClient(t, addr, 3)
	r3.ZAdd(ctx, "{u}z", redis.Z{Score: 1.5, Member: "m"})
	if got, err := r3.Do(ctx, "bzpopmin", "{u}z", "0").Slice(); err != nil || len(got) != 3 || got[2] != 1.5 {
		t.Errorf("BZPOPMIN over RESP3: %#v, %v; want a double score", got, err)
	}
}

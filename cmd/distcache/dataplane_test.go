package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/distcache/distcache/client"
	"github.com/distcache/distcache/dataplane/mapwatch"
	"github.com/distcache/distcache/dataplane/metrics"
	"github.com/distcache/distcache/internal/testing/httpget"
	"github.com/distcache/distcache/internal/testing/redistest"
)

func TestMapInit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "map.json")
	out, err := runCommand(t, "map", "init", "--out", path, "--racks", "2", "--shards-per-rack", "2",
		"--layer", "spine=3", "--layer", "leaf=racks", "--base-port", "7100")
	if err != nil {
		t.Fatalf("map init: %v\n%s", err, out)
	}
	w, err := mapwatch.Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := w.Current().Map()
	var addrs []string
	for _, r := range m.Storage.Racks {
		for _, s := range r.Shards {
			addrs = append(addrs, s.Address)
		}
	}
	for _, l := range m.Layers {
		for _, mb := range l.Members {
			addrs = append(addrs, mb.Address)
		}
	}
	// 4 shards, then 3 spine and 2 leaf members, on consecutive ports.
	if len(addrs) != 9 || !m.Layers[1].BoundToRacks {
		t.Fatalf("got %d addresses, leaf bound %v; want 9, true", len(addrs), m.Layers[1].BoundToRacks)
	}
	for i, a := range addrs {
		if want := "127.0.0.1:" + strconv.Itoa(7100+i); a != want {
			t.Errorf("address %d = %s, want %s", i, a, want)
		}
	}
}

func TestMapInitRejectsBadLayers(t *testing.T) {
	for _, tc := range []struct{ layer, want string }{
		{"spine", "want NAME=COUNT"},
		{"spine=0", "not a positive number"},
		{"=2", "want NAME=COUNT"},
	} {
		_, err := runCommand(t, "map", "init", "--out", filepath.Join(t.TempDir(), "m.json"), "--layer", tc.layer)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--layer %s: error %v, want one containing %q", tc.layer, err, tc.want)
		}
	}
}

// TestShimAndNodeCommands runs `distcache shim` and `distcache node` from a
// map written by `distcache map init`, in front of a real redis-server, and
// writes and reads keys through them with the client library.
func TestShimAndNodeCommands(t *testing.T) {
	srv := redistest.Start(t)
	path := filepath.Join(t.TempDir(), "map.json")
	base := freeUDPBlock(t, 2)
	if out, err := runCommand(t, "map", "init", "--out", path, "--layer", "spine=1", "--base-port", strconv.Itoa(base)); err != nil {
		t.Fatalf("map init: %v\n%s", err, out)
	}
	ln, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0") // a free port for the node's metrics
	if err != nil {
		t.Fatal(err)
	}
	nodeMetrics := ln.Addr().String()
	_ = ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 2)
	for _, args := range [][]string{
		{"shim", "--map", path, "--shard", "distcache-rack-0-0", "--redis", srv.Addr(), "--log-level", "warn"},
		{"node", "--map", path, "--member", "distcache-spine-0", "--log-level", "warn", "--metrics-addr", nodeMetrics},
	} {
		cmd := newRootCommand()
		cmd.SetArgs(args)
		cmd.SetOut(&bytes.Buffer{})
		go func() { done <- cmd.ExecuteContext(ctx) }()
	}
	w, err := mapwatch.Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(client.Config{}, w.Current())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The processes start asynchronously: the first write retries until the
	// shim answers (bounded by the context).
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	for {
		err := c.Put(wctx, "key:1", []byte("v1"))
		if err == nil {
			break
		}
		if wctx.Err() != nil {
			t.Fatalf("cannot write through the shim command: %v", err)
		}
	}
	for {
		res, err := c.GetResult(wctx, "key:1")
		if err == nil && string(res.Value) == "v1" && res.Node == 0 && res.Layer == 0 {
			break // served through the node
		}
		if wctx.Err() != nil {
			t.Fatalf("cannot read through the node command: %+v %v", res, err)
		}
	}
	// The node tells the operator which map it uses.
	resp, err := httpget.Get(wctx, "http://"+nodeMetrics+metrics.StatusPath)
	if err != nil || resp.Status != 200 || strings.TrimSpace(resp.Body) != `{"mapVersion":1}` {
		t.Errorf("GET %s: %+v %v, want map version 1", metrics.StatusPath, resp, err)
	}
	cancel()
	for range 2 {
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Fatalf("command ended with %v", err)
		}
	}
}

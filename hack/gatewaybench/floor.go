package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/distcache/distcache/internal/freeport"
)

// startFloor starts the floor (floor_linux.go) as a process of its own, in
// front of the cluster whose map is mapFile: its target's whole path is the
// floor and the processes of gw's path but the gateway.
func startFloor(ctx context.Context, mapFile string, gw target) (target, func(), error) {
	none := func() {}
	exe, err := os.Executable()
	if err != nil {
		return target{}, none, fmt.Errorf("cannot find this command: %w", err)
	}
	ports, _, err := freeport.Ports("127.0.0.1", 1, 0)
	if err != nil {
		return target{}, none, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))
	cmd := exec.CommandContext(ctx, exe, "-floor-serve", addr, "-floor-map", mapFile)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return target{}, none, fmt.Errorf("cannot start the floor: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() { _ = cmd.Process.Kill(); <-exited }
	if err := waitListening(ctx, addr, exited); err != nil {
		return target{}, stop, err
	}
	all := group{cmd.Process.Pid}
	for _, pid := range gw.all {
		if !slices.Contains(gw.proxy, pid) {
			all = append(all, pid)
		}
	}
	return target{name: "floor", addr: addr, proxy: group{cmd.Process.Pid}, all: all}, stop, nil
}

// waitListening polls addr until it accepts a connection, the floor exits
// (exited) or 10 s pass.
func waitListening(ctx context.Context, addr string, exited chan error) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		var d net.Dialer
		if c, err := d.DialContext(ctx, "tcp", addr); err == nil {
			return c.Close()
		}
		select {
		case err := <-exited:
			exited <- err
			return fmt.Errorf("cannot start the floor: it exited: %v", err)
		case <-ctx.Done():
			return fmt.Errorf("cannot start the floor: not listening on %s: %w", addr, ctx.Err())
		case <-tick.C:
		}
	}
}

// measureHits runs GETs over o.hitKeys keys against every target but Redis
// alone: first a warm-up run through the gateway that writes and reads
// them, so that the nodes insert them, then the measured runs at each
// pipeline depth.
func (o options) measureHits(ctx context.Context, targets []target) ([]row, error) {
	i := slices.IndexFunc(targets, func(t target) bool { return t.name == "gateway" })
	for _, test := range []string{"set", "get", "get"} {
		if _, err := (benchRun{addr: targets[i].addr, test: test, pipeline: 16, requests: o.requests["gateway"]}).run(ctx, o.hitKeys); err != nil {
			return nil, err
		}
	}
	var rows []row
	for _, p := range o.pipelines {
		for _, t := range targets {
			if t.name == "redis" {
				continue
			}
			r, err := measure(ctx, t, benchRun{addr: t.addr, test: "get", pipeline: p, requests: o.requests[t.name]}, o.hitKeys)
			if err != nil {
				return nil, err
			}
			r.test = fmt.Sprintf("GET %d keys", o.hitKeys)
			fmt.Fprintln(os.Stderr, strings.TrimSpace(r.line()))
			rows = append(rows, r)
		}
	}
	return rows, nil
}

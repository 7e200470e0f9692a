package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"os/exec"
	"strconv"
	"time"
)

// benchRun is one redis-benchmark invocation: one command against one
// address.
type benchRun struct {
	addr     string
	test     string // redis-benchmark -t: get, set, incr, hset...
	pipeline int    // -P
	requests int    // -n
}

// benchResult is what redis-benchmark reported.
type benchResult struct {
	rps     float64
	p50ms   float64
	p99ms   float64
	elapsed time.Duration
}

// run runs redis-benchmark with 50 connections over a uniform key space of
// keySpace keys and parses its CSV output.
func (b benchRun) run(ctx context.Context, keySpace int) (benchResult, error) {
	host, port := splitAddr(b.addr)
	args := []string{"-h", host, "-p", port, "-c", "50", "-n", strconv.Itoa(b.requests),
		"-P", strconv.Itoa(b.pipeline), "-r", strconv.Itoa(keySpace), "-d", "128", "-t", b.test, "--csv"}
	start := time.Now()
	out, err := exec.CommandContext(ctx, "redis-benchmark", args...).Output()
	elapsed := time.Since(start)
	if err != nil {
		return benchResult{}, fmt.Errorf("cannot run redis-benchmark %v: %w", args, err)
	}
	recs, err := csv.NewReader(bytes.NewReader(out)).ReadAll()
	if err != nil {
		return benchResult{}, fmt.Errorf("cannot parse redis-benchmark's output %q: %w", out, err)
	}
	if len(recs) < 2 || len(recs[1]) < 7 {
		return benchResult{}, fmt.Errorf("cannot parse redis-benchmark's output %q: no result row", out)
	}
	var r benchResult
	r.elapsed = elapsed
	for i, dst := range map[int]*float64{1: &r.rps, 4: &r.p50ms, 6: &r.p99ms} {
		if *dst, err = strconv.ParseFloat(recs[1][i], 64); err != nil {
			return benchResult{}, fmt.Errorf("cannot parse redis-benchmark's output %q: %w", out, err)
		}
	}
	return r, nil
}

package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/distcache/distcache/standalone/control"
)

// TestPrintStatusPersistence checks the line of `distcache status` (and of
// `up`'s summary) that says what the Redis servers keep across crashes.
func TestPrintStatusPersistence(t *testing.T) {
	tests := []struct {
		persistence string
		want        string
	}{
		{"aof-everysec", "persistence aof-everysec: append-only files in /run/shop/redis/<shard>\n"},
		{"aof-always", "persistence aof-always: append-only files in /run/shop/redis/<shard>\n"},
		{"none", "persistence none: Redis data in memory only, lost when a redis-server exits\n"},
		{"unmanaged", "persistence unmanaged: external Redis servers, their own configuration decides\n"},
		{"", "persistence unknown\n"},
	}
	for _, tc := range tests {
		t.Run(tc.persistence, func(t *testing.T) {
			st := control.Status{Cluster: "shop", Phase: control.Ready, RunDir: "/run/shop", Started: time.Now(), Persistence: tc.persistence}
			for name, printTo := range map[string]func(*bytes.Buffer){
				"status":  func(b *bytes.Buffer) { printStatus(b, st) },
				"summary": func(b *bytes.Buffer) { printSummary(b, st) },
			} {
				var b bytes.Buffer
				printTo(&b)
				if !strings.Contains(b.String(), "\n"+tc.want) {
					t.Errorf("%s printed:\n%s\nwant a line %q", name, b.String(), tc.want)
				}
			}
		})
	}
}

// TestPrintStatusFailures checks the STATE column of a paused and of a
// slowed process.
func TestPrintStatusFailures(t *testing.T) {
	st := control.Status{Cluster: "shop", Phase: control.Degraded, Started: time.Now(), Processes: []control.Process{
		{Name: "shop-spine-0", Kind: "node", Layer: "spine", State: "Paused", PID: 42},
		{Name: "shop-spine-1", Kind: "node", Layer: "spine", State: "Running", Slowed: "100ms", PID: 43},
	}}
	var b bytes.Buffer
	printStatus(&b, st)
	want := map[string]string{"shop-spine-0": "Paused", "shop-spine-1": "Running+slowed:100ms"}
	for _, line := range strings.Split(b.String(), "\n") {
		f := strings.Fields(line)
		if len(f) > 3 && want[f[1]] != "" {
			if f[3] != want[f[1]] {
				t.Errorf("%s: state %q, want %q", f[1], f[3], want[f[1]])
			}
			delete(want, f[1])
		}
	}
	if len(want) > 0 {
		t.Errorf("status lacks the rows of %v:\n%s", want, b.String())
	}
}

// TestPrintStatusGateway checks that `distcache status` and `up`'s summary
// tell how to reach the gateway with redis-cli, and say nothing of it for
// a cluster without one.
func TestPrintStatusGateway(t *testing.T) {
	const want = "\nredis:  redis-cli -h 127.0.0.1 -p 6380 (the Redis-compatible gateway; docs/gateway.md)\n"
	gw := control.Process{Name: "shop-gateway", Kind: "gateway", State: "Running", Ready: true, PID: 44,
		Addr: "127.0.0.1:6380", MetricsAddr: "127.0.0.1:9100"}
	loop := control.Process{Name: "shop-controlloop", Kind: "controlloop", State: "Running", Ready: true, PID: 43, MetricsAddr: "127.0.0.1:9101"}
	st := control.Status{Cluster: "shop", Phase: control.Ready, Started: time.Now(), Processes: []control.Process{loop, gw}}
	var b bytes.Buffer
	printStatus(&b, st)
	row := false
	for _, line := range strings.Split(b.String(), "\n") {
		f := strings.Fields(line)
		row = row || len(f) > 2 && f[0] == "gateway" && f[1] == "shop-gateway" && f[len(f)-1] == "127.0.0.1:6380"
	}
	if !strings.Contains(b.String(), want) || !row {
		t.Errorf("status printed:\n%s\nwant the line %q and the gateway's row with its Redis address", b.String(), want)
	}
	b.Reset()
	printSummary(&b, st)
	if !strings.Contains(b.String(), ", 1 control loop, 1 gateway, map version") {
		t.Errorf("summary printed:\n%s\nwant the gateway counted", b.String())
	}
	st.Processes = []control.Process{loop}
	b.Reset()
	printStatus(&b, st)
	printSummary(&b, st)
	if strings.Contains(b.String(), "redis:") || strings.Contains(b.String(), "gateway") {
		t.Errorf("without a gateway, printed:\n%s", b.String())
	}
}

// TestPrintSummaryOfSwitches checks up's summary of a cluster whose cache
// layers are all switches: no cache node, its switches and controller.
func TestPrintSummaryOfSwitches(t *testing.T) {
	st := control.Status{Cluster: "lab", Phase: control.Ready, Started: time.Now(), MapVersion: 1, Processes: []control.Process{
		{Name: "lab-spine-0", Kind: "switch", Layer: "spine"}, {Name: "lab-leaf-0", Kind: "switch", Layer: "leaf"},
		{Name: "lab-leaf-1", Kind: "switch", Layer: "leaf"}, {Name: "lab-fabric", Kind: "fabric"},
		{Name: "lab-controlloop", Kind: "controlloop"},
	}}
	var b bytes.Buffer
	printSummary(&b, st)
	const want = "cluster lab Ready: 0 redis-servers, 0 storage shims, 0 cache nodes, 3 software switches and 1 fabric controller, 1 control loop, map version 1\n"
	if !strings.HasPrefix(b.String(), want) {
		t.Errorf("summary printed:\n%s\nwant it to start with %q", b.String(), want)
	}
}

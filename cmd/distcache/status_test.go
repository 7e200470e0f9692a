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

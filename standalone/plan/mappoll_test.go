package plan_test

import (
	"testing"
	"time"

	v1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/standalone/plan"
)

// withServingLease sets spec.coherence.servingLease.
func withServingLease(d time.Duration) specOption {
	return func(s *v1alpha1.CacheClusterSpec) { s.Coherence.ServingLease = &v1.Duration{Duration: d} }
}

// TestNewMapPollPerRole checks that cache nodes, shims and the gateway,
// none of which renews a lease by reading the map, poll it at
// Options.MapPoll whatever the serving lease.
func TestNewMapPollPerRole(t *testing.T) {
	for _, tc := range []struct {
		name      string
		lease     time.Duration
		poll      time.Duration
		wantNode  string // --map-poll flag of every node ("" for none)
		wantOther string // of every shim and the gateway
	}{
		{"poll over a quarter of the lease", 100 * time.Millisecond, 100 * time.Millisecond, "--map-poll=100ms", "--map-poll=100ms"},
		{"poll under a quarter of the lease", 400 * time.Millisecond, 50 * time.Millisecond, "--map-poll=50ms", "--map-poll=50ms"},
		{"processes' default", time.Second, 0, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := plan.New(newCluster(t, withServingLease(tc.lease)), plan.Options{RunDir: t.TempDir(), Ports: sequentialPorts, MapPoll: tc.poll})
			if err != nil {
				t.Fatal(err)
			}
			checked := map[plan.Kind]int{}
			for _, pr := range p.Processes {
				switch pr.Kind {
				case plan.Node:
					checkFlag(t, pr.Args, "--map-poll=", tc.wantNode)
				case plan.Shim, plan.Gateway:
					checkFlag(t, pr.Args, "--map-poll=", tc.wantOther)
				default:
					continue
				}
				checked[pr.Kind]++
			}
			if checked[plan.Node] == 0 || checked[plan.Shim] == 0 || checked[plan.Gateway] == 0 {
				t.Fatalf("checked %v, want nodes, shims and a gateway", checked)
			}
		})
	}
}

package plan_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/placement/partmap"
	"github.com/distcache/distcache/standalone/plan"
)

// TestReplayProtection: a standalone cluster's first map requires stamps,
// so clients that follow it stamp too, and its data-plane processes take
// require as their floor; with spec.dataPlane.replayProtection Off, the
// map says accept and no process is given the flag.
func TestReplayProtection(t *testing.T) {
	for _, tc := range []struct {
		name     string
		policy   v1alpha1.ReplayProtectionPolicy
		wantMap  partmap.ReplayProtection
		wantFlag bool
	}{
		{"unset", "", partmap.ReplayRequire, true},
		{"Require", v1alpha1.ReplayProtectionRequire, partmap.ReplayRequire, true},
		{"Off", v1alpha1.ReplayProtectionOff, partmap.ReplayAccept, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, func(s *v1alpha1.CacheClusterSpec) {
				if tc.policy != "" {
					s.DataPlane = &v1alpha1.DataPlaneSpec{ReplayProtection: tc.policy}
				}
			})
			p, err := plan.New(c, plan.Options{RunDir: t.TempDir(), Ports: sequentialPorts})
			if err != nil {
				t.Fatal(err)
			}
			if p.Map.ReplayProtection != tc.wantMap {
				t.Errorf("map replay protection %q, want %q", p.Map.ReplayProtection, tc.wantMap)
			}
			for _, pr := range p.Processes {
				if pr.Kind != plan.Shim && pr.Kind != plan.Node && pr.Kind != plan.Gateway {
					continue
				}
				has := slices.Contains(pr.Args, "--replay-protection=require")
				if has != tc.wantFlag {
					t.Errorf("%s args %s: --replay-protection=require %v, want %v", pr.Name, strings.Join(pr.Args, " "), has, tc.wantFlag)
				}
			}
		})
	}
}

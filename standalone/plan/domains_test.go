package plan_test

import (
	"strings"
	"testing"

	"github.com/distcache/distcache/standalone/plan"
)

// TestNewDomains checks that Options.Domains reaches the members of the
// map, and that Check refuses a domain for a member the cluster does not
// have.
func TestNewDomains(t *testing.T) {
	c := newCluster(t)
	domains := map[string]plan.Domain{
		"t-spine-0": {Zone: "zone-a", Host: "host-1"},
		"t-leaf-1":  {Host: "host-2"},
	}
	o := plan.Options{RunDir: t.TempDir(), Ports: sequentialPorts, Domains: domains}
	if err := plan.Check(c, &o); err != nil {
		t.Fatal(err)
	}
	p, err := plan.New(c, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range p.Map.Layers {
		for _, mb := range l.Members {
			if d := domains[mb.Name]; mb.Zone != d.Zone || mb.Host != d.Host {
				t.Errorf("member %s in %q/%q, want %q/%q", mb.Name, mb.Zone, mb.Host, d.Zone, d.Host)
			}
		}
	}
	bad := plan.Options{RunDir: t.TempDir(), Domains: map[string]plan.Domain{"t-spine-9": {Host: "h"}}}
	if err := plan.Check(c, &bad); err == nil || !strings.Contains(err.Error(), `"t-spine-9"`) {
		t.Fatalf("Check = %v, want the unknown member refused", err)
	}
}

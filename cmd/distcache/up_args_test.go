package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/standalone/plan"
)

// TestDaemonArgsForwardEveryFlag checks that the background cluster gets
// every flag the user gave `distcache up`: a flag it dropped (as --bundle
// once was) silently did not apply.
func TestDaemonArgsForwardEveryFlag(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{name: "defaults", args: []string{"-f", "c.yaml"}, want: nil},
		{name: "bundle", args: []string{"-f", "c.yaml", "--bundle"}, want: []string{"--bundle=true"}},
		{name: "capacities and gateway", args: []string{"-f", "c.yaml", "--shard-capacity", "300", "--gateway=false"},
			want: []string{"--gateway=false", "--shard-capacity=300"}}, // in the order of their names
		{name: "prometheus without a value", args: []string{"-f", "c.yaml", "--prometheus"}, want: []string{"--prometheus=prometheus"}},
		{name: "cluster name", args: []string{"-f", "c.yaml", "--cluster", "demo"}, want: []string{"--cluster=demo"}},
		{name: "server CPU", args: []string{"-f", "c.yaml", "--server-cpu", "0.05"}, want: []string{"--server-cpu=0.05"}},
		{name: "member domains", args: []string{"-f", "c.yaml", "--member-domain", "c-l1-0=zone-a/h1", "--member-domain", "c-l2-0=h2"},
			want: []string{"--member-domain=c-l1-0=zone-a/h1", "--member-domain=c-l2-0=h2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := newUpCommand()
			if err := cmd.ParseFlags(append(tt.args, "--run-dir", "rel/run")); err != nil {
				t.Fatal(err)
			}
			got, err := daemonArgs(cmd, "/abs/run", []string{"c.yaml"})
			if err != nil {
				t.Fatal(err)
			}
			abs, _ := filepath.Abs("c.yaml")
			want := append(append([]string{"up", "--foreground", "--run-dir", "/abs/run"}, tt.want...), "-f", abs)
			if !slices.Equal(got, want) {
				t.Errorf("daemonArgs = %q, want %q", got, want)
			}
			for _, a := range got[2:] {
				if a == "--foreground" || a == "--run-dir=rel/run" {
					t.Errorf("daemonArgs repeats %s", a)
				}
			}
		})
	}
}

// TestDataPlaneFlagsSetSpec checks that up --bundle and --direct-reads turn
// their fields of spec.dataPlane on, keeping what the spec had, and that
// without them the spec is left as it is.
func TestDataPlaneFlagsSetSpec(t *testing.T) {
	tests := []struct {
		name string
		spec *v1alpha1.DataPlaneSpec
		flag bool
		want *v1alpha1.DataPlaneSpec
		// direct is --direct-reads.
		direct bool
	}{
		{"neither", nil, false, nil, false},
		{"spec only", &v1alpha1.DataPlaneSpec{Bundles: true}, false, &v1alpha1.DataPlaneSpec{Bundles: true}, false},
		{"flag only", nil, true, &v1alpha1.DataPlaneSpec{Bundles: true}, false},
		{"both", &v1alpha1.DataPlaneSpec{Bundles: true}, true, &v1alpha1.DataPlaneSpec{Bundles: true}, false},
		{"flag over spec off", &v1alpha1.DataPlaneSpec{}, true, &v1alpha1.DataPlaneSpec{Bundles: true}, false},
		{"direct reads only", nil, false, &v1alpha1.DataPlaneSpec{DirectReads: true}, true},
		{"direct reads keep the spec's bundles", &v1alpha1.DataPlaneSpec{Bundles: true}, false,
			&v1alpha1.DataPlaneSpec{Bundles: true, DirectReads: true}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := v1alpha1.CacheClusterSpec{DataPlane: tt.spec}
			dataPlaneSpec(&spec, tt.flag, tt.direct, false)
			if (spec.DataPlane == nil) != (tt.want == nil) || (tt.want != nil && *spec.DataPlane != *tt.want) {
				t.Errorf("spec.dataPlane = %+v, want %+v", spec.DataPlane, tt.want)
			}
		})
	}
}

// A --server-cpu the kernel would refuse is refused before the cluster
// starts in the background, with the smallest limit it would take.
func TestServerCPURefused(t *testing.T) {
	for _, tc := range []struct {
		cpus float64
		want string // "" for accepted (or refused only for want of a cgroup here)
	}{
		{0, ""},
		{-1, "too small"},
		{0.001, "at least 1ms every 100ms (0.01 CPUs)"},
	} {
		err := (&upOptions{serverCPU: tc.cpus}).checkServerCPU()
		switch {
		case tc.want == "" && tc.cpus == 0 && err != nil:
			t.Errorf("--server-cpu 0: %v, want no limit and no error", err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("--server-cpu %g: %v, want an error saying %q", tc.cpus, err, tc.want)
		}
	}
}

// TestParseMemberDomains checks --member-domain's forms and refusals.
func TestParseMemberDomains(t *testing.T) {
	got, err := parseMemberDomains([]string{"a=zone-1/host-1", "b=host-2"})
	if err != nil || got["a"] != (plan.Domain{Zone: "zone-1", Host: "host-1"}) || got["b"] != (plan.Domain{Host: "host-2"}) {
		t.Fatalf("parseMemberDomains = %v, %v", got, err)
	}
	for _, bad := range []string{"a", "=h", "a=", "a=zone/", "a=h,a=h"} {
		if _, err := parseMemberDomains(strings.Split(bad, ",")); err == nil {
			t.Errorf("--member-domain %q accepted", bad)
		}
	}
}

package main

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestHasArg(t *testing.T) {
	const node = "/usr/local/bin/distcache\x00node\x00--member=shop-spine-1\x00--listen=0.0.0.0:7100\x00"
	for _, tc := range []struct {
		name, cmdline, arg string
		want               bool
	}{
		{"the member", node, "--member=shop-spine-1", true},
		{"another member's prefix", node, "--member=shop-spine-10", false},
		{"a prefix of the member", node, "--member=shop-spine-", false},
		{"the last argument", "distcache\x00--member=a", "--member=a", true},
		{"inside another argument", "sh\x00-c\x00kill --member=a", "--member=a", false},
		{"empty", "", "--member=a", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := hasArg([]byte(tc.cmdline), tc.arg); got != tc.want {
				t.Errorf("hasArg(%q, %q) = %t, want %t", tc.cmdline, tc.arg, got, tc.want)
			}
		})
	}
}

func TestInContainer(t *testing.T) {
	const id = "65ae97bfc610d6c3e4b2267f2c1551684df75efb78b61ffaaa69d398a3af8438"
	cgroupfs := "9:name=systemd:/kubepods/besteffort/pod3fb7/" + id + "\n8:pids:/kubepods/besteffort/pod3fb7/" + id + "\n"
	for _, tc := range []struct {
		name, cgroup, id string
		want             bool
	}{
		{"cgroupfs", cgroupfs, id, true},
		{"systemd scope", "0::/kubepods.slice/kubepods-pod3fb7.slice/cri-containerd-" + id + ".scope\n", id, true},
		{"another container", cgroupfs, strings.Repeat("a", 64), false},
		{"the pod's cgroup only", "8:pids:/kubepods/besteffort/pod3fb7\n", id, false},
		{"a host process", "0::/\n", id, false},
		{"no id", cgroupfs, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := inContainer([]byte(tc.cgroup), tc.id); got != tc.want {
				t.Errorf("inContainer = %t, want %t", got, tc.want)
			}
		})
	}
}

func TestTaskPIDs(t *testing.T) {
	for _, tc := range []struct {
		name, out string
		want      map[string]int
		err       bool
	}{
		{name: "ctr's table", out: "TASK    PID      STATUS    \nbf26    18648    RUNNING\n567e    18684    STOPPED\n",
			want: map[string]int{"bf26": 18648, "567e": 18684}},
		{name: "no task", out: "TASK    PID      STATUS    \n", want: map[string]int{}},
		{name: "a bad PID", out: "TASK PID STATUS\nbf26 x RUNNING\n", err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := taskPIDs([]byte(tc.out))
			if (err != nil) != tc.err {
				t.Fatalf("taskPIDs: error %v, want error %t", err, tc.err)
			}
			if !tc.err && !maps.Equal(got, tc.want) {
				t.Errorf("taskPIDs = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestStateChanges(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	seen := func(s int, state string) mapSeen {
		m := mapSeen{at: at(s), version: int64(s), states: map[string]string{"other": "Active"}}
		if state != "" {
			m.states["v"] = state
		}
		return m
	}
	for _, tc := range []struct {
		name    string
		history []mapSeen
		since   int
		want    []string
	}{
		{"no version since", []mapSeen{seen(0, "Active")}, 1, nil},
		{"no change", []mapSeen{seen(0, "Active"), seen(2, "Active")}, 1, nil},
		{"fenced and back", []mapSeen{seen(0, "Active"), seen(2, "Fenced"), seen(3, "Active")}, 1, []string{"Fenced", "Active"}},
		{"failed over", []mapSeen{seen(0, "Active"), seen(2, "Fenced"), seen(3, "Failed"), seen(4, "Failed"), seen(6, "Active")}, 1,
			[]string{"Fenced", "Failed", "Active"}},
		{"changes before the fault", []mapSeen{seen(0, "Fenced"), seen(1, "Active"), seen(3, "Active")}, 2, nil},
		{"still fenced from before", []mapSeen{seen(0, "Fenced"), seen(3, "Fenced"), seen(4, "Active")}, 2, []string{"Active"}},
		{"first version after the fault", []mapSeen{seen(3, "Fenced")}, 2, []string{"Fenced"}},
		{"removed", []mapSeen{seen(0, "Active"), seen(3, "")}, 2, []string{"absent"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := stateChanges(tc.history, "v", at(tc.since)); !slices.Equal(got, tc.want) {
				t.Errorf("stateChanges = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestValidateTargets(t *testing.T) {
	base := options{trials: 1, keys: 1, before: time.Second, maxWait: 10 * time.Second, observe: time.Second, pause: time.Second, checkRate: 1,
		kube: kubeOptions{operator: "distcache-system/distcache"}}
	kube := func(faults, planes string) options {
		o := base
		o.faults, o.planes, o.kube.cluster = faults, planes, "default/shop"
		return o
	}
	standalone := func(faults, planes string) options {
		o := base
		o.faults, o.planes = faults, planes
		return o
	}
	for _, tc := range []struct {
		name string
		o    options
		ok   bool
	}{
		{"standalone", standalone("kill,down,pause", "on,off"), true},
		{"standalone without the API server", standalone("kill", "apiserver-off"), false},
		{"kube", kube("kill,pause", "on,operator-off,apiserver-off"), true},
		{"kube: a node cut off", kube("down", "on,operator-off"), true},
		{"kube with the loop off", kube("kill", "off"), false},
		{"kube without a namespace", func() options { o := kube("kill", "on"); o.kube.cluster = "shop"; return o }(), false},
		{"kube with a bad operator", func() options { o := kube("kill", "on"); o.kube.operator = "distcache"; return o }(), false},
		{"an unknown fault", standalone("crash", "on"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.o.validate(); (err == nil) != tc.ok {
				t.Errorf("validate() = %v, want ok %t", err, tc.ok)
			}
		})
	}
}

func TestKeepSeries(t *testing.T) {
	for _, tc := range []struct {
		line string
		want bool
	}{
		{`distcache_shim_lease_grants_total{shard="rack-0-0"} 12`, true},
		{`distcache_coherence_invalidations_total{result="released"} 3`, true},
		{`distcache_unleased_reads_total 0`, true},
		{`# HELP distcache_shim_lease_grants_total Grants.`, false},
		{`distcache_cache_items 4`, false},
		{``, false},
	} {
		if got := keepSeries(tc.line, leaseMetrics); got != tc.want {
			t.Errorf("keepSeries(%q) = %t, want %t", tc.line, got, tc.want)
		}
	}
}

func TestNodeIndex(t *testing.T) {
	for _, tc := range []struct {
		node string
		n    int
		ok   bool
	}{
		{"lk-node-2", 2, true},
		{"lk-node-12", 12, true},
		{"lk-node-0", 0, false},
		{"lk-node-x", 0, false},
		{"localkube", 0, false},
	} {
		if n, ok := nodeIndex(tc.node); n != tc.n || ok != tc.ok {
			t.Errorf("nodeIndex(%q) = %d, %t; want %d, %t", tc.node, n, ok, tc.n, tc.ok)
		}
	}
	if got := containerdSocket("/lk", "lk-node-3"); got != "/lk/nodes/lk-node-3/containerd/containerd.sock" {
		t.Errorf("socket of lk-node-3: %s", got)
	}
	if got := containerdSocket("/lk", "localkube"); got != "/lk/containerd/containerd.sock" {
		t.Errorf("socket of the single node: %s", got)
	}
}

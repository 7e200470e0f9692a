package main

import (
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/prometheus/common/model"

	"github.com/distcache/distcache/internal/testing/poll"
	"github.com/distcache/distcache/standalone/control"
)

// switchCluster is a cluster file with a spine of two software switches
// on free ports (a data port range of 1 + shards each) and a leaf layer.
func switchCluster(t *testing.T) string {
	t.Helper()
	base := freeUDPBlock(t, 8)
	return fmt.Sprintf(`apiVersion: distcache.io/v1alpha1
kind: SwitchFabric
metadata: {name: lab}
spec:
  driver: stratum
  pipeline: distcache-v1model
  switches:
    - {name: a, deviceID: 1, role: spine, p4runtimeAddress: %q, dataAddress: "127.0.0.1:%d"}
    - {name: b, deviceID: 2, role: spine, p4runtimeAddress: %q, dataAddress: "127.0.0.1:%d"}
---
apiVersion: distcache.io/v1alpha1
kind: CacheCluster
metadata: {name: sw}
spec:
  storage: {racks: 2, shardsPerRack: 1}
  layers:
    - {name: spine, backend: switch, switch: {fabricRef: lab, role: spine}}
    - {name: leaf, boundToRacks: true}
  hotKeys: {interval: 200ms, threshold: 2}
  coherence: {servingLease: 200ms}
  failover: {gracePeriod: 100ms, holdDown: 1s}
`, freeTCPAddr(t), base, freeTCPAddr(t), base+4)
}

// TestUpWithSwitchSpine runs a cluster whose spine is two software
// switches programmed by the fabric controller: the clients' history is
// linearizable with no lost write, also across a switch killed (the
// supervisor restarts it empty, the controller programs it again, the
// control loop fails it over and back) and one paused.
func TestUpWithSwitchSpine(t *testing.T) {
	bin := buildDistcache(t)
	file, runDir := clusterFile(t, bin, switchCluster(t))
	out, err := run(t, bin, "up", "-f", file, "--run-dir", runDir, "--prometheus")
	if err != nil || !strings.Contains(out, "2 software switches and 1 fabric controller") {
		t.Fatalf("up: %v\n%s", err, out)
	}
	checkPasses(t, bin, runDir, "with the switches up", func() {})
	switchPanelsHaveData(t, status(t, bin, runDir))
	spine := func(name string) control.Process {
		for _, p := range status(t, bin, runDir).Processes {
			if p.Name == name {
				return p
			}
		}
		t.Fatalf("no process %s", name)
		return control.Process{}
	}
	checkPasses(t, bin, runDir, "across a switch killed and a switch paused", func() {
		if err := syscall.Kill(spine("sw-spine-0").PID, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		paused := spine("sw-spine-1").PID
		if err := syscall.Kill(paused, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		poll.Eventually(t, "the paused switch failed over", func() (bool, error) {
			return spine("sw-spine-1").MemberState == "Failed", nil
		})
		if err := syscall.Kill(paused, syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
	})
	poll.Eventually(t, "both switches Active again, the killed one restarted", func() (bool, error) {
		a, b := spine("sw-spine-0"), spine("sw-spine-1")
		return a.Restarts == 1 && a.Ready && a.MemberState == "Active" && b.Ready && b.MemberState == "Active",
			fmt.Errorf("a %s ready %v restarts %d, b %s ready %v", a.MemberState, a.Ready, a.Restarts, b.MemberState, b.Ready)
	})
	out, err = run(t, bin, "status", "--run-dir", runDir)
	if err != nil || !strings.Contains(out, "spine/sw-spine-0 Failed → Active") || !strings.Contains(out, "spine/sw-spine-1 Failed → Active") {
		t.Fatalf("status: %v\n%s", err, out)
	}
}

// switchPanelsHaveData waits until the cluster's Prometheus scrapes the
// switches and the fabric controller, and checks that every panel of the
// switches' dashboard has series for the cluster.
func switchPanelsHaveData(t *testing.T, st control.Status) {
	t.Helper()
	prom := clusterPrometheus(t, st)
	prom.Await(t, "Prometheus scraping the switches and the fabric controller", `up{job="distcache", kind=~"switch|fabric"} == 1`,
		func(v model.Vector) bool { return len(v) == 3 })
	prom.SwitchPanelsHaveData(t, ".*", st.Cluster)
}

func TestParseSwitchFlag(t *testing.T) {
	tests := []struct {
		flag, in           string
		member, addr, gnmi string
		device             uint64
		data               string
		err                string
	}{
		{flag: "switch", in: "m=127.0.0.1:9559", member: "m", addr: "127.0.0.1:9559", device: 1},
		{flag: "switch", in: "m=h:1,device=7,gnmi=h:2", member: "m", addr: "h:1", gnmi: "h:2", device: 7},
		{flag: "switch", in: "m=h:1,device=0", err: "is not a positive number"},
		{flag: "switch", in: "m=h:1,speed=9", err: `unknown option "speed=9"`},
		{flag: "switch", in: "=h:1", err: "want MEMBER=HOST:PORT"},
		{flag: "switch", in: "m=h:1,data=127.0.0.1:7600", err: `unknown option "data=127.0.0.1:7600"`},
		{flag: "client-leaf", in: "c=h:1,data=127.0.0.1:7600,device=3", member: "c", addr: "h:1", device: 3, data: "127.0.0.1:7600"},
		{flag: "client-leaf", in: "c=h:1", err: "want NAME=HOST:PORT,data=IP:PORT"},
		{flag: "client-leaf", in: "c=h:1,data=h:7600", err: `data "h:7600" is not an IPv4 address and port`},
	}
	for _, tt := range tests {
		sw, err := parseSwitchFlag(tt.flag, tt.in)
		data := ""
		if sw.ClientLeaf.IsValid() {
			data = sw.ClientLeaf.String()
		}
		switch {
		case tt.err != "":
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("--%s %s: error %v, want %q", tt.flag, tt.in, err, tt.err)
			}
		case err != nil || sw.Member != tt.member || sw.P4Runtime != tt.addr || sw.GNMI != tt.gnmi || sw.DeviceID != tt.device || data != tt.data:
			t.Errorf("--%s %s: %+v %v", tt.flag, tt.in, sw, err)
		}
	}
}

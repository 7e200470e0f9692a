// Command failtrials measures how long the keys of a failed cache node stay
// unwritable, in a standalone cluster or in a CacheCluster on localkube,
// and what reads and throughput the failure costs meanwhile.
//
// For each mode (a fault, kill or pause, with the control loop on or
// off) it starts the cluster of -f with `distcache up`, runs `distcache
// check` against it for all of the mode's trials (so that linearizability
// and lost writes are checked over everything the trials did), and runs
// -trials trials, the victims cache node after cache node in turn. With
// -kube-cluster the trials run against that CacheCluster instead (see
// kube.go): its cache-node pods are the victims, reached at their pod IPs
// from this host, and the control plane is on, the operator scaled to 0
// (operator-off), or localkube's API server stopped during each trial's
// fault and observation (apiserver-off). A trial
// reads a few probe keys owned by the victim until reads hit the victim's
// copies, keeps reading and writing them open-loop through the client
// library (package client), then kills the victim (SIGKILL; the
// supervisor restarts it) or stops it for -pause (SIGSTOP, then SIGCONT).
// It measures the write unavailability — the time from the fault until
// every probe key has had a write called at or after the fault
// acknowledged —, the reads that failed, and the worst 250 ms bin of
// completed operations after the fault as a fraction of their rate before
// it; then it waits until the cluster has healed. With -control-plane off
// the control loop is held down through the control API for the trials, so
// that nothing fences the victim in the map. The report is a Markdown
// table per mode, written to -out.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// options are the command's flags.
type options struct {
	distcache, clusterFile, work, out string
	faults, planes                    string
	kube                              kubeOptions
	trials, trialsOff, keys           int
	pause, maxWait, observe, before   time.Duration
	warmTimeout, healTimeout, timeout time.Duration
	checkRate                         float64
}

func main() {
	var o options
	// A flag set of its own: the operator's packages (for the names of
	// a CacheCluster's objects) register -kubeconfig on the global one.
	fs := flag.NewFlagSet(os.Args[0], flag.ExitOnError)
	fs.StringVar(&o.distcache, "distcache", "bin/distcache", "the distcache binary")
	fs.StringVar(&o.clusterFile, "f", "hack/failtrials/cluster.yaml", "the cluster's YAML")
	fs.StringVar(&o.work, "work", "out/failtrials", "directory for each mode's run directory and check output")
	fs.StringVar(&o.out, "out", "out/failtrials/report.md", "where the report is written (after every mode)")
	fs.StringVar(&o.faults, "fault", "kill", "the faults, comma-separated: kill (SIGKILL, the supervisor restarts the node), down (killed through the control API and held down until the trial's observation ends; with -kube-cluster on a multi-node localkube, the victim's node cut off: kubelet stopped, network down) or pause (SIGSTOP for -pause, then SIGCONT)")
	fs.StringVar(&o.planes, "control-plane", "on", "the control plane during the trials, comma-separated: on, or off (the control loop held down through the control API); with -kube-cluster on, operator-off (the operator's Deployment scaled to 0) or apiserver-off (localkube's API server stopped during each fault and observation)")
	fs.StringVar(&o.kube.cluster, "kube-cluster", "", "NAMESPACE/NAME of a CacheCluster to run the trials against instead of a standalone cluster (-f)")
	fs.StringVar(&o.kube.kubeconfig, "kubeconfig", "", "kubeconfig of -kube-cluster's API server (default: LOCALKUBE_DIR/admin.kubeconfig)")
	fs.StringVar(&o.kube.localkubeDir, "localkube-dir", "/var/lib/distcache-localkube", "localkube's state directory: its API server's PID, its containerd's socket")
	fs.StringVar(&o.kube.script, "localkube-script", "hack/localkube/localkube.sh", "localkube's script, which cuts a node off for -fault down with -kube-cluster")
	fs.StringVar(&o.kube.operator, "operator", "distcache-system/distcache", "NAMESPACE/NAME of the operator's Deployment (-control-plane operator-off)")
	fs.IntVar(&o.trials, "trials", 20, "trials per mode")
	fs.IntVar(&o.trialsOff, "trials-off", 0, "trials per mode with the control plane not on (0: -trials)")
	fs.IntVar(&o.keys, "keys", 4, "probe keys per trial")
	fs.DurationVar(&o.pause, "pause", 5*time.Second, "how long a paused victim stays stopped")
	fs.DurationVar(&o.maxWait, "max-wait", 40*time.Second, "bound of a trial's wait for the probe keys' writes after the fault")
	fs.DurationVar(&o.observe, "observe", 6*time.Second, "how long the load runs after the fault at least")
	fs.DurationVar(&o.before, "before", 2*time.Second, "load measured before the fault, once the keys are cached at the victim")
	fs.DurationVar(&o.warmTimeout, "warm-timeout", 30*time.Second, "bound of the wait for the probe keys to be cached at the victim")
	fs.DurationVar(&o.healTimeout, "heal-timeout", time.Minute, "bound of the wait for the cluster to heal after a trial")
	fs.DurationVar(&o.timeout, "timeout", 4*time.Hour, "bound of the whole run")
	fs.Float64Var(&o.checkRate, "check-rate", 200, "operations per second of distcache check's workload at most")
	_ = fs.Parse(os.Args[1:]) // ExitOnError
	if o.kube.cluster != "" && o.kube.kubeconfig == "" {
		o.kube.kubeconfig = filepath.Join(o.kube.localkubeDir, "admin.kubeconfig")
	}
	if err := o.validate(); err != nil {
		fmt.Fprintln(os.Stderr, "failtrials:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	if err := o.run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "failtrials:", err)
		os.Exit(1)
	}
}

// mode is one combination of fault and control plane.
type mode struct {
	fault        string // kill, down or pause
	controlPlane string // on, off, operator-off or apiserver-off
}

func (m mode) String() string { return m.fault + ", control plane " + m.controlPlane }

// slug names m's directory.
func (m mode) slug() string { return m.fault + "-control-plane-" + m.controlPlane }

// on reports whether the control plane runs undisturbed.
func (m mode) on() bool { return m.controlPlane == "on" }

// modes are the combinations of -fault and -control-plane, in order.
func (o options) modes() []mode {
	var ms []mode
	for _, f := range strings.Split(o.faults, ",") {
		for _, p := range strings.Split(o.planes, ",") {
			ms = append(ms, mode{fault: strings.TrimSpace(f), controlPlane: strings.TrimSpace(p)})
		}
	}
	return ms
}

// The faults and control-plane settings of each target.
var (
	standaloneFaults = []string{"kill", "down", "pause"}
	standalonePlanes = []string{"on", "off"}
	kubeFaults       = []string{"kill", "pause", "down"}
	kubePlanes       = []string{"on", "operator-off", "apiserver-off"}
)

// oneOf checks that every comma-separated item of list is in allowed.
func oneOf(what, list string, allowed []string) error {
	for _, x := range strings.Split(list, ",") {
		if x = strings.TrimSpace(x); !slices.Contains(allowed, x) {
			return fmt.Errorf("cannot use %s %q here: want one of %s", what, x, strings.Join(allowed, ", "))
		}
	}
	return nil
}

func (o options) validate() error {
	faults, planes := standaloneFaults, standalonePlanes
	if o.kube.cluster != "" {
		faults, planes = kubeFaults, kubePlanes
		if err := o.kube.validate(); err != nil {
			return err
		}
	}
	if err := oneOf("fault", o.faults, faults); err != nil {
		return err
	}
	if err := oneOf("control plane", o.planes, planes); err != nil {
		return err
	}
	switch {
	case o.trials < 1 || o.trialsOff < 0:
		return errors.New("cannot run fewer than one trial")
	case o.keys < 1:
		return errors.New("cannot probe fewer than one key")
	case o.before < bin || o.maxWait < bin || o.pause <= 0:
		return fmt.Errorf("cannot measure with -before or -max-wait under %v, or no -pause", bin)
	case o.observe > o.maxWait:
		return errors.New("cannot observe longer than -max-wait")
	case o.checkRate <= 0:
		return errors.New("cannot run the check without a rate")
	}
	return nil
}

// trialsOf is the number of trials of m.
func (o options) trialsOf(m mode) int {
	if !m.on() && o.trialsOff > 0 {
		return o.trialsOff
	}
	return o.trials
}

// run runs every mode in turn, writing the report after each.
func (o options) run(ctx context.Context) error {
	// The commit now: the tree may change while the modes run.
	rep := report{o: o, machine: describeMachine(), command: commandLine(), commit: gitCommit(), started: time.Now()}
	if err := os.MkdirAll(filepath.Dir(o.out), 0o755); err != nil {
		return fmt.Errorf("cannot create the report's directory: %w", err)
	}
	var errs []error
	for _, m := range o.modes() {
		res := o.runMode(ctx, m)
		rep.modes = append(rep.modes, res)
		if res.err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", m, res.err))
		}
		if err := os.WriteFile(o.out, []byte(rep.render()), 0o644); err != nil {
			return fmt.Errorf("cannot write the report: %w", err)
		}
		if ctx.Err() != nil {
			break
		}
	}
	fmt.Print(rep.render())
	fmt.Fprintf(os.Stderr, "failtrials: report written to %s\n", o.out)
	return errors.Join(errs...)
}

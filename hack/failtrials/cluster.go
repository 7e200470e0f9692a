package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/distcache/distcache/standalone/control"
)

// pollEvery is how often a condition on the cluster is polled.
const pollEvery = 100 * time.Millisecond

// poll calls cond every pollEvery until it reports done, fails, or timeout
// has passed; what names the condition in the error.
func poll(ctx context.Context, timeout time.Duration, what string, cond func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	var last error
	for {
		done, err := cond()
		switch {
		case err != nil && !errors.Is(err, errNotYet):
			return err
		case done:
			return nil
		}
		last = err
		select {
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("cannot see %s within %v: %w", what, timeout, last)
			}
			return fmt.Errorf("cannot see %s within %v: %w", what, timeout, ctx.Err())
		case <-t.C:
		}
	}
}

// errNotYet wraps why a polled condition does not hold yet.
var errNotYet = errors.New("not yet")

// cluster is the standalone cluster of one mode, reached through its
// control API.
type cluster struct {
	api    *control.Client
	name   string
	pid    int // the supervisor's
	runDir string
	// holdLoop says the mode holds the control loop down during its
	// trials (-control-plane off); loopHeld that it is held now.
	holdLoop, loopHeld bool
}

// victims are the cluster's cache nodes, in the status's order.
func (c *cluster) victims(ctx context.Context) ([]string, error) {
	st, err := c.status(ctx)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, p := range nodes(st) {
		names = append(names, p.Name)
	}
	return names, nil
}

// holdControlPlane holds the control loop down through the control API
// when the mode says so.
func (c *cluster) holdControlPlane(ctx context.Context) (func(context.Context) error, error) {
	if !c.holdLoop {
		return func(context.Context) error { return nil }, nil
	}
	if err := c.stopControlLoop(ctx); err != nil {
		return nil, err
	}
	c.loopHeld = true
	return func(ctx context.Context) error {
		c.loopHeld = false
		return c.startControlLoop(ctx)
	}, nil
}

// locate finds victim's PID in the status.
func (c *cluster) locate(ctx context.Context, victim string) (victimProc, error) {
	st, err := c.status(ctx)
	if err != nil {
		return victimProc{}, err
	}
	v, ok := process(st, victim)
	if !ok {
		return victimProc{}, fmt.Errorf("cannot find %s in the status", victim)
	}
	return victimProc{name: victim, pid: v.PID}, nil
}

// down kills victim through the control API, which holds it down until
// restart.
func (c *cluster) down(ctx context.Context, victim string, atFault func()) (func(context.Context) error, error) {
	if err := c.api.Kill(ctx, victim); err != nil {
		return nil, fmt.Errorf("cannot kill %s through the control API: %w", victim, err)
	}
	atFault()
	return func(ctx context.Context) error {
		if err := c.api.Restart(ctx, victim); err != nil {
			return fmt.Errorf("cannot restart %s through the control API: %w", victim, err)
		}
		return nil
	}, nil
}

// faultWindow does nothing: a standalone cluster's control plane is either
// held for all the trials or not at all.
func (c *cluster) faultWindow(context.Context) (func(), error) { return func() {}, nil }

// status is the cluster's status.
func (c *cluster) status(ctx context.Context) (control.Status, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	st, err := c.api.Status(ctx)
	if err != nil {
		return st, fmt.Errorf("cannot read the status of %s: %w", c.name, err)
	}
	return st, nil
}

// controlLoop is the name of the cluster's control loop process.
func (c *cluster) controlLoop() string { return c.name + "-controlloop" }

// nodes are the cluster's cache nodes, in the status's order.
func nodes(st control.Status) []control.Process {
	var ns []control.Process
	for _, p := range st.Processes {
		if p.Kind == "node" {
			ns = append(ns, p)
		}
	}
	return ns
}

// process is the process named name in st.
func process(st control.Status, name string) (control.Process, bool) {
	for _, p := range st.Processes {
		if p.Name == name {
			return p, true
		}
	}
	return control.Process{}, false
}

// stopControlLoop kills the control loop through the control API, which
// holds it down, and waits until the status shows it held.
func (c *cluster) stopControlLoop(ctx context.Context) error {
	if err := c.api.Kill(ctx, c.controlLoop()); err != nil {
		return fmt.Errorf("cannot stop the control loop: %w", err)
	}
	return poll(ctx, 30*time.Second, "the control loop held down", func() (bool, error) {
		st, err := c.status(ctx)
		if err != nil {
			return false, err
		}
		p, ok := process(st, c.controlLoop())
		return ok && p.State == "Held" && p.PID == 0, nil
	})
}

// startControlLoop restarts the control loop through the control API and
// waits until it is ready.
func (c *cluster) startControlLoop(ctx context.Context) error {
	if err := c.api.Restart(ctx, c.controlLoop()); err != nil {
		return fmt.Errorf("cannot restart the control loop: %w", err)
	}
	return poll(ctx, time.Minute, "the control loop ready", func() (bool, error) {
		st, err := c.status(ctx)
		if err != nil {
			return false, err
		}
		p, ok := process(st, c.controlLoop())
		return ok && p.Ready, nil
	})
}

// healed reports whether every process but the control loop (when it is
// held down) is running and ready, and victim is Active in the map; after
// a kill, victim must be a new process (a PID other than oldPID).
func (c *cluster) healed(st control.Status, victim string, oldPID int) error {
	for _, p := range st.Processes {
		if c.loopHeld && p.Name == c.controlLoop() {
			continue
		}
		if p.State != "Running" || !p.Ready {
			return fmt.Errorf("%w: %s is %s, ready %t", errNotYet, p.Name, p.State, p.Ready)
		}
	}
	v, ok := process(st, victim)
	switch {
	case !ok:
		return fmt.Errorf("cannot find %s in the status", victim)
	case v.MemberState != "Active":
		return fmt.Errorf("%w: %s is %s in map version %d", errNotYet, victim, v.MemberState, st.MapVersion)
	case oldPID != 0 && v.PID == oldPID:
		return fmt.Errorf("%w: %s not restarted yet", errNotYet, victim)
	}
	return nil
}

// waitHealed waits until the cluster has healed from a fault of v at
// fault (see healed), and until the events the status lists have caught
// up with the victim's state in the map (the control loop appends an event
// after it publishes the map version). It returns how long that took and
// the victim's member states since the fault (see memberChanges).
func (c *cluster) waitHealed(ctx context.Context, timeout time.Duration, v victimProc, restarted bool, fault time.Time, _ *prober) (string, time.Duration, error) {
	victim, oldPID := v.name, 0
	if restarted {
		oldPID = v.pid
	}
	start := time.Now()
	var changes string
	err := poll(ctx, timeout, "the cluster healed", func() (bool, error) {
		st, err := c.status(ctx)
		if err != nil {
			return false, err
		}
		if err := c.healed(st, victim, oldPID); err != nil {
			return false, err
		}
		states := memberStates(st.Events, victim, fault)
		changes = memberChanges(states)
		if len(states) > 0 && states[len(states)-1] != "Active" {
			return false, fmt.Errorf("%w: the events end with %s", errNotYet, changes)
		}
		return true, nil
	})
	return changes, time.Since(start), err
}

// memberStates are the member states victim went through in the map since
// t, as events lists them.
func memberStates(events []control.Event, victim string, t time.Time) []string {
	var states []string
	for _, e := range events {
		if e.Member == victim && !e.Time.Before(t) {
			states = append(states, e.To)
		}
	}
	return states
}

// memberChanges is states for the report, e.g. "Fenced → Failed → Active"
// ("none" for none).
func memberChanges(states []string) string {
	if len(states) == 0 {
		return "none"
	}
	return strings.Join(states, " → ")
}

// ownPID checks that pid is a cache node of this cluster: a child of its
// supervisor whose command line names the node. Only such a PID is
// signalled.
func (c *cluster) ownPID(pid int, name string) error {
	if pid <= 0 {
		return fmt.Errorf("cannot signal %s: no PID", name)
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return fmt.Errorf("cannot read the parent of %s (PID %d): %w", name, pid, err)
	}
	// The command name (field 2) may hold spaces: fields count from after
	// its closing parenthesis, where field 3 (state) starts.
	s := string(stat)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 2 || f[1] != strconv.Itoa(c.pid) {
		return fmt.Errorf("cannot signal %s: PID %d is not a child of the cluster's supervisor %d", name, pid, c.pid)
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return fmt.Errorf("cannot read the command line of %s (PID %d): %w", name, pid, err)
	}
	if !strings.Contains(string(cmdline), name) {
		return fmt.Errorf("cannot signal %s: PID %d runs %q", name, pid, strings.ReplaceAll(string(cmdline), "\x00", " "))
	}
	return nil
}

// signal sends sig to v's process, once ownPID vouched for it.
func (c *cluster) signal(v victimProc, sig syscall.Signal) error {
	if err := c.ownPID(v.pid, v.name); err != nil {
		return err
	}
	return signalPID(v.pid, v.name, sig)
}

// signalPID sends sig to name's process pid.
func signalPID(pid int, name string, sig syscall.Signal) error {
	if err := syscall.Kill(pid, sig); err != nil {
		return fmt.Errorf("cannot send %v to %s (PID %d): %w", sig, name, pid, err)
	}
	return nil
}

package standalone

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/distcache/distcache/standalone/control"
	"github.com/distcache/distcache/standalone/faults"
	"github.com/distcache/distcache/standalone/plan"
)

// slowNeeds is what slowing a process needs, for its errors.
const slowNeeds = "needs root and iptables-legacy (make iptables)"

// Slow implements control.Backend: every UDP datagram sent from the
// process's data-plane port (a cache node's or shim's replies and
// requests alike) is held for delay before it leaves, by a delay of
// package faults installed in this process's own network namespace
// (the host's loopback): an nftables table marks the datagrams, an
// iptables-legacy rule queues them to an NFQUEUE, and this process lets
// each through once delay has passed. Slowing a slowed process changes
// its delay. The delay follows the port, so it outlives restarts of the
// process; Unslow or the cluster's end removes it.
func (c *cluster) Slow(name string, delay time.Duration) error {
	port, err := c.dataPlanePort(name)
	if err != nil {
		return fmt.Errorf("cannot slow %s: %w", name, err)
	}
	if delay <= 0 {
		return fmt.Errorf("cannot slow %s: delay %v is not positive: %w", name, delay, control.ErrBadRequest)
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("cannot slow %s: %s: not running as root", name, slowNeeds)
	}
	c.slowMu.Lock()
	defer c.slowMu.Unlock()
	if c.slowClosed {
		return fmt.Errorf("cannot slow %s: the cluster is stopping", name)
	}
	if old, ok := c.delays[name]; ok {
		if old.Duration() == delay {
			return nil
		}
		if err := c.removeDelay(name, old); err != nil {
			return fmt.Errorf("cannot change the delay of %s: %w", name, err)
		}
	}
	flow := faults.Flow{Proto: faults.UDP, Src: faults.Port(port), Dst: faults.AnyPort()}
	dl, err := faults.DelayFlows(faults.CurrentNamespace(), slowFault(port), delay, c.cfg.Logger, flow)
	if err != nil {
		return fmt.Errorf("cannot slow %s: %s: %w", name, slowNeeds, err)
	}
	c.delays[name] = dl
	c.mu.Lock()
	c.slowed[name] = delay
	c.mu.Unlock()
	c.cfg.Logger.Info("slowed process: its data-plane datagrams are delayed", "process", name, "port", port, "delay", delay)
	return nil
}

// Unslow implements control.Backend: it stops delaying the process's
// datagrams (those already held still wait out their delay). A process
// that is not slowed is left alone.
func (c *cluster) Unslow(name string) error {
	if c.planProcess(name) == nil {
		return fmt.Errorf("cannot unslow %s: no such process: %w", name, control.ErrNotFound)
	}
	c.slowMu.Lock()
	defer c.slowMu.Unlock()
	dl, ok := c.delays[name]
	if !ok {
		return nil
	}
	if err := c.removeDelay(name, dl); err != nil {
		return fmt.Errorf("cannot unslow %s: %w", name, err)
	}
	return nil
}

// unslowAll removes every delay and refuses new ones: the cluster is
// stopping. c.slowMu is not held.
func (c *cluster) unslowAll() {
	c.slowMu.Lock()
	defer c.slowMu.Unlock()
	c.slowClosed = true
	for name, dl := range c.delays {
		if err := c.removeDelay(name, dl); err != nil {
			c.cfg.Logger.Error("cannot remove the delay of a slowed process", "process", name, "err", err)
		}
	}
}

// removeDelay removes the delay of process name and forgets it, even when
// its removal fails (Remove is not retried: it is idempotent, and reports
// the first attempt's error); c.slowMu is held.
func (c *cluster) removeDelay(name string, dl *faults.Delay) error {
	err := dl.Remove()
	delete(c.delays, name)
	c.mu.Lock()
	delete(c.slowed, name)
	c.mu.Unlock()
	if err != nil {
		return err
	}
	c.cfg.Logger.Info("restored slowed process", "process", name, "delayed_datagrams", dl.Delayed())
	return nil
}

// dataPlanePort is the UDP port of process name's data-plane socket: a
// cache node's or a shim's.
func (c *cluster) dataPlanePort(name string) (uint16, error) {
	pr := c.planProcess(name)
	if pr == nil {
		return 0, fmt.Errorf("no such process: %w", control.ErrNotFound)
	}
	if pr.Kind != plan.Node && pr.Kind != plan.Shim {
		return 0, fmt.Errorf("a %s process has no data-plane socket (only cache nodes and shims do): %w",
			pr.Kind, control.ErrBadRequest)
	}
	_, p, err := net.SplitHostPort(pr.Addr)
	if err != nil {
		return 0, fmt.Errorf("no data-plane port in its address %q: %w", pr.Addr, err)
	}
	port, err := strconv.ParseUint(p, 10, 16)
	if err != nil || port == 0 {
		return 0, fmt.Errorf("no data-plane port in its address %q", pr.Addr)
	}
	return uint16(port), nil
}

// planProcess is the plan's process name (nil if there is none).
func (c *cluster) planProcess(name string) *plan.Process {
	for i := range c.cfg.Plan.Processes {
		if c.cfg.Plan.Processes[i].Name == name {
			return &c.cfg.Plan.Processes[i]
		}
	}
	return nil
}

// slowFault names the delay of the data-plane port port (the names of
// faults are at most 32 of a-z, 0-9 and _); ports are unique on the host.
func slowFault(port uint16) string { return "slow_" + strconv.Itoa(int(port)) }

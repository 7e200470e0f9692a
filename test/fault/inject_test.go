package fault

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/distcache/distcache/standalone/control"
	"github.com/distcache/distcache/standalone/faults"
	"github.com/distcache/distcache/test/fault/schedule"
)

// controlLoopKind is the kind a control loop has in the status once it
// runs as a process of its own; until then the control loop runs in the
// cluster's daemon.
const controlLoopKind = "controlloop"

// injector injects a schedule's faults into a running cluster and its
// checker, and records them.
type injector struct {
	c       *cluster
	checker *checkerRun
	rec     *faults.Recorder
	log     *slog.Logger

	mu     sync.Mutex  // guards paused
	paused map[int]int // pid → pauses in force (SIGCONT when the last ends)
}

func newInjector(c *cluster, checker *checkerRun, log *slog.Logger) *injector {
	return &injector{c: c, checker: checker, rec: faults.NewRecorder(nil), log: log, paused: map[int]int{}}
}

// run injects every fault of s at its time from start, each healed after
// its duration, and returns once all are healed. An error is a fault that
// could not be injected or healed (it is also in the record).
func (in *injector) run(ctx context.Context, start time.Time, s schedule.Schedule) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex // guards errs
		errs []error
	)
	for i, f := range s.Faults {
		wg.Go(func() {
			if !sleepUntil(ctx, start.Add(f.At)) {
				return
			}
			if err := in.inject(ctx, fmt.Sprintf("f%d", i), f); err != nil {
				in.log.Warn("fault failed", "fault", f.String(), "err", err)
				mu.Lock()
				errs = append(errs, fmt.Errorf("%s: %w", f, err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if open := in.rec.Open(); len(open) > 0 {
		errs = append(errs, fmt.Errorf("faults not healed: %+v", open))
	}
	return errors.Join(errs...)
}

// inject injects f, waits its duration (the experiment, not a
// synchronisation) and heals it.
func (in *injector) inject(ctx context.Context, id string, f schedule.Fault) error {
	switch f.Class {
	case schedule.KillNode, schedule.KillShim, schedule.KillRedis:
		return in.kill(ctx, string(f.Class), f.Targets[0])
	case schedule.PauseNode, schedule.PauseShim, schedule.PauseRed:
		p, err := in.c.process(ctx, f.Targets[0])
		if err != nil {
			in.rec.Fail(string(f.Class), "SIGSTOP", err, f.Targets...)
			return err
		}
		return in.pause(ctx, string(f.Class), p.Name, p.PID, f.For)
	case schedule.ControlLoop:
		return in.controlLoop(ctx, f.For)
	case schedule.StaleClients:
		return in.staleClients(ctx, f.For)
	case schedule.Drop, schedule.Delay, schedule.PartitionOneWay, schedule.PartitionTwoWay:
		return in.network(ctx, id, f)
	default:
		return fmt.Errorf("no injector for class %s", f.Class)
	}
}

// kill sends SIGKILL to the named process (the supervisor restarts it).
func (in *injector) kill(ctx context.Context, kind, name string) error {
	p, err := in.c.process(ctx, name)
	if err == nil {
		err = in.signal(p.PID, syscall.SIGKILL)
	}
	if err != nil {
		in.rec.Fail(kind, "SIGKILL", err, name)
		return err
	}
	in.rec.Begin(kind, "SIGKILL pid "+strconv.Itoa(p.PID), name)(nil)
	return nil
}

// pause stops pid for d, then continues it unless another pause of it is
// still in force.
func (in *injector) pause(ctx context.Context, kind, name string, pid int, d time.Duration) error {
	in.mu.Lock()
	in.paused[pid]++
	first := in.paused[pid] == 1
	in.mu.Unlock()
	var err error
	if first {
		err = in.signal(pid, syscall.SIGSTOP)
	}
	if err != nil {
		in.mu.Lock()
		in.paused[pid]--
		in.mu.Unlock()
		in.rec.Fail(kind, "SIGSTOP", err, name)
		return err
	}
	end := in.rec.Begin(kind, fmt.Sprintf("SIGSTOP/SIGCONT pid %d", pid), name)
	sleepUntil(ctx, time.Now().Add(d))
	in.mu.Lock()
	in.paused[pid]--
	last := in.paused[pid] == 0
	in.mu.Unlock()
	if last {
		err = faults.Resume(pid) // a pid killed meanwhile is gone: no error worth failing for
		if err != nil && !errors.Is(err, syscall.ESRCH) {
			end(err)
			return err
		}
	}
	end(nil)
	return nil
}

// controlLoop stops the control loop for d and then kills it (its
// supervisor restarts it): SIGSTOP, SIGCONT and SIGKILL of its process, or,
// for a daemon that runs the loop itself, SIGSTOP and SIGCONT of the daemon
// (and of the control API with it).
func (in *injector) controlLoop(ctx context.Context, d time.Duration) error {
	st, err := in.c.status(ctx)
	if err != nil {
		st = in.c.lastStatus()
	}
	for _, p := range st.Processes {
		if p.Kind == controlLoopKind {
			if err := in.pause(ctx, string(schedule.ControlLoop), p.Name, p.PID, d); err != nil {
				return err
			}
			return in.kill(ctx, string(schedule.ControlLoop), p.Name)
		}
	}
	return in.pause(ctx, string(schedule.ControlLoop), "daemon", st.PID, d)
}

// staleClients freezes the map of the checker's stale clients for d.
func (in *injector) staleClients(ctx context.Context, d time.Duration) error {
	kind := string(schedule.StaleClients)
	if err := faults.Signal(in.checker.pid, syscall.SIGUSR1); errors.Is(err, syscall.ESRCH) {
		// The checker ended its workload (--max-ops) before the fault
		// and was reaped: there are no clients left to freeze.
		<-in.checker.exited
		in.rec.Begin(kind, "skipped: the checker's workload had ended", "checker")(nil)
		return nil
	} else if err != nil {
		in.rec.Fail(kind, "SIGUSR1", err, "checker")
		return err
	}
	end := in.rec.Begin(kind, "SIGUSR1/SIGUSR2", "checker")
	sleepUntil(ctx, time.Now().Add(d))
	err := faults.Signal(in.checker.pid, syscall.SIGUSR2)
	if errors.Is(err, syscall.ESRCH) {
		// The checker ended its workload (--max-ops) while its clients
		// were frozen and was reaped: none is left to unfreeze, and its
		// verdict covers the frozen stretch.
		<-in.checker.exited
		err = nil
	}
	end(err)
	return err
}

// network injects a drop, delay or partition on f's link for f.For.
func (in *injector) network(ctx context.Context, id string, f schedule.Fault) error {
	kind := string(f.Class)
	flows, err := in.flows(f)
	if err != nil {
		in.rec.Fail(kind, string(f.Link), err, f.Targets...)
		return err
	}
	targets := make([]string, 0, len(flows)+len(f.Targets))
	targets = append(targets, f.Targets...)
	for _, fl := range flows {
		targets = append(targets, fl.String())
	}
	var (
		remove func() error
		detail string
	)
	switch f.Class {
	case schedule.Delay:
		dl, err := faults.DelayFlows(in.c.ns, id, f.Delay, in.log, flows...)
		if err != nil {
			in.rec.Fail(kind, string(f.Link), err, targets...)
			return err
		}
		remove, detail = dl.Remove, fmt.Sprintf("%s +%v", f.Link, f.Delay)
	default:
		p := 1.0
		if f.Class == schedule.Drop {
			p = f.Probability
		}
		rules, err := faults.Drop(in.c.ns, id, p, flows...)
		if err != nil {
			in.rec.Fail(kind, string(f.Link), err, targets...)
			return err
		}
		remove, detail = rules.Remove, fmt.Sprintf("%s p=%.2f", f.Link, p)
	}
	end := in.rec.Begin(kind, detail, targets...)
	sleepUntil(ctx, time.Now().Add(f.For))
	err = remove()
	end(err)
	return err
}

// flows are the packets a network fault on f's link hits.
func (in *injector) flows(f schedule.Fault) ([]faults.Flow, error) {
	st := in.c.lastStatus()
	byName := map[string]control.Process{}
	var processPorts []uint16
	for _, p := range st.Processes {
		byName[p.Name] = p
		if p.Kind == "node" || p.Kind == "shim" {
			port, err := portOf(p.Addr)
			if err != nil {
				return nil, err
			}
			processPorts = append(processPorts, port)
		}
	}
	port := func(name string, metrics bool) (uint16, error) {
		p, ok := byName[name]
		if !ok {
			return 0, fmt.Errorf("no process %s", name)
		}
		if metrics {
			return portOf(p.MetricsAddr)
		}
		return portOf(p.Addr)
	}
	clients := faults.PortsExcept(processPorts...)
	var fl faults.Flow
	switch f.Link {
	case schedule.NodeShim:
		node, err1 := port(f.Targets[0], false)
		shim, err2 := port(f.Targets[1], false)
		if err := errors.Join(err1, err2); err != nil {
			return nil, err
		}
		fl = faults.Flow{Proto: faults.UDP, Src: faults.Port(node), Dst: faults.Port(shim)}
	case schedule.ClientNode, schedule.ClientShim:
		target, err := port(f.Targets[0], false)
		if err != nil {
			return nil, err
		}
		fl = faults.Flow{Proto: faults.UDP, Src: clients, Dst: faults.Port(target)}
	case schedule.NodeControl:
		metrics, err := port(f.Targets[0], true)
		if err != nil {
			return nil, err
		}
		fl = faults.Flow{Proto: faults.TCP, Src: faults.AnyPort(), Dst: faults.Port(metrics)}
	default:
		return nil, fmt.Errorf("unknown link %q", f.Link)
	}
	if f.Class != schedule.PartitionOneWay {
		return faults.Both(fl), nil
	}
	if f.Reverse {
		return []faults.Flow{fl.Reverse()}, nil
	}
	return []faults.Flow{fl}, nil
}

// signal sends sig to pid after checking that pid runs in the cluster's
// namespace (a PID from an old status may have been reused).
func (in *injector) signal(pid int, sig syscall.Signal) error {
	if !in.c.ours(pid) {
		return fmt.Errorf("pid %d is not a process of the cluster (any more)", pid)
	}
	return faults.Signal(pid, sig)
}

func portOf(addr string) (uint16, error) {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return 0, fmt.Errorf("cannot find the port of %q: %w", addr, err)
	}
	n, err := strconv.ParseUint(p, 10, 16)
	if err != nil {
		return 0, fmt.Errorf("cannot find the port of %q: %w", addr, err)
	}
	return uint16(n), nil
}

// sleepUntil sleeps until t or until ctx ends (false).
func sleepUntil(ctx context.Context, t time.Time) bool {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

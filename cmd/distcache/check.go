package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/distcache/distcache/client"
	"github.com/distcache/distcache/standalone/control"
	"github.com/distcache/distcache/workload/checker"
)

// Exit statuses of `distcache check`.
const (
	exitFail      = 1 // a violation or a lost write
	exitUndecided = 2 // the check could not run or could not decide
)

// exitError is an error that ends the command with its exit status.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// ExitCode is the process's exit status.
func (e *exitError) ExitCode() int { return e.code }

// couldNotRun marks err as ending the check without a verdict.
func couldNotRun(err error) error { return &exitError{code: exitUndecided, err: err} }

// checkOptions are the flags of `distcache check`.
type checkOptions struct {
	ref       clusterRef
	maps      mapSourceFlags
	key       dataKey
	redis     []string
	listen    string
	readyFile string
	out       string
	// maxMemoryMiB bounds the heap (guardMemory).
	maxMemoryMiB uint64
	cfg          checker.Config
}

func newCheckCommand() *cobra.Command {
	o := &checkOptions{}
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Run a checked workload: per-key linearizability and no lost acknowledged write, while faults are injected",
		Long: `check drives a DistCache cluster with a Zipf workload of gets, puts and
deletes through real clients, records every operation, and checks what the
clients observed:

  - linearizability, key by key (porcupine, against a register with
    deletes): no read returns a value older than the latest acknowledged
    write, or a value no write wrote;
  - no acknowledged write lost: after the workload every key is read back
    through the cache and, where the shard's Redis address is known,
    straight from Redis, and must hold a value its writes could have left.

Every put writes a value unique to the run. First every key is written once
(the preload); then the timed workload runs, bounded by --duration and
--max-ops; then the read-back (retried for a bounded time while the cluster
heals) and the check. A read that fails is left out; a write refused with a
coherence timeout is known not applied and left out; any other failed or
timed-out write may have been applied, and the check allows both.

The cluster is a standalone one (--run-dir: the map file and the Redis
addresses come from its control API) or any cluster whose partition map is
readable here: a file (--map, e.g. the operator's ConfigMap mounted in a
pod) or the operator's ConfigMap read and watched through the Kubernetes API
(--map-configmap, as the data-plane pods follow it), with --redis
SHARD=ADDR for each shard to read back from Redis.

Faults: the check is meant to run while processes are killed or stopped and
networks partitioned. --ready-file is created when the preload is done and
the timed workload starts. --stale-clients N makes N of the --clients
clients stale: SIGUSR1 freezes their partition map (they keep routing by it
while the others follow the file), SIGUSR2 gives them the current map again.

Interrupting the check (SIGINT or SIGTERM) during the timed workload ends
the workload early: the read-back and the check still run and give their
verdict. A fault injector stops it that way once its faults have healed. A
second signal ends the process at once, without a verdict.

Output: a progress line on stderr, a one-line verdict on stdout, and in
--out (default: a new temporary directory) verdict.txt, verdict.json and,
per failing key, keys/<key>.history.jsonl (its operations) and, for a
linearizability violation, keys/<key>.html (porcupine's visualization of the
shortest failing history).

Exit status: 0 PASS; 1 FAIL (a key not linearizable or a lost write);
2 the check could not run, or was INCONCLUSIVE (a key's check timed out or
a key could not be read back).`,
		Example: `  distcache check --run-dir ~/.local/state/distcache/demo --duration 30s --out out/check
  distcache check --map /etc/distcache/map.json --redis demo-r0-s0=redis-0.redis:6379 --stale-clients 1 --ready-file /tmp/ready
  distcache check --map-configmap distcache/demo-partition-map --data-plane-key-dir /etc/distcache/data-plane-key --duration 10m`,
		Args: func(cmd *cobra.Command, args []string) error {
			if err := cobra.NoArgs(cmd, args); err != nil {
				return couldNotRun(err)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return couldNotRun(err) })
	o.ref.addFlags(cmd, "the standalone cluster's YAML files (to find it by its name)")
	o.key.addFlag(cmd)
	f := cmd.Flags()
	c := &o.cfg
	o.maps.addUncheckedFlags(cmd, "partition map file of the cluster (instead of a standalone cluster's run directory)")
	f.StringArrayVar(&o.redis, "redis", nil, "SHARD=ADDR: Redis address of a storage shard, for the read-back from Redis (repeatable)")
	f.StringVar(&o.listen, "listen", "", "UDP address of the clients (default 127.0.0.1:0 with a standalone cluster, 0.0.0.0:0 with --map)")
	f.DurationVar(&c.Duration, "duration", 20*time.Second, "length of the timed workload")
	f.Float64Var(&c.Rate, "rate", 0, "operations per second of the timed workload at most, across workers (0: no limit)")
	f.Int64Var(&c.MaxOps, "max-ops", checker.DefaultMaxOps, "operations of the timed workload at most")
	f.IntVar(&c.Keys, "keys", checker.DefaultKeys, "number of keys")
	f.Float64Var(&c.Skew, "skew", 1.0, "Zipf exponent of the keys' popularity (0: uniform)")
	f.Float64Var(&c.WriteRatio, "write-ratio", 0.3, "share of operations that are writes")
	f.Float64Var(&c.DeleteShare, "delete-share", 0.1, "share of writes that are deletes")
	f.IntVar(&c.Clients, "clients", checker.DefaultClients, "clients (each its own UDP socket)")
	f.IntVar(&c.Workers, "workers", checker.DefaultWorkers, "workers, each running one operation at a time on client worker%clients")
	f.IntVar(&c.StaleClients, "stale-clients", 0, "clients whose map SIGUSR1 freezes and SIGUSR2 thaws")
	f.Uint64Var(&c.Seed, "seed", 1, "seed of the operation streams")
	f.DurationVar(&c.OpTimeout, "op-timeout", checker.DefaultOpTimeout, "timeout of each operation")
	f.DurationVar(&c.Client.FailBackoff, "fail-backoff", client.DefaultFailBackoff,
		"how long a client skips a cache node that timed out; a short one makes clients try a paused node again soon after it resumes")
	f.Var(addrPortValue{&c.Client.ClientLeaf}, "client-leaf", clientLeafHelp)
	f.DurationVar(&c.MapPoll, "map-poll", checker.DefaultMapPoll, "how often the map file is polled")
	f.DurationVar(&c.ReadBackTimeout, "read-back-timeout", checker.DefaultReadBackTimeout, "bound of the read-back's (and the preload's) retries")
	f.DurationVar(&c.CheckTimeout, "check-timeout", checker.DefaultCheckTimeout, "bound of the linearizability check; keys not decided by then are unchecked")
	f.StringVar(&o.out, "out", "", "directory for verdict.txt, verdict.json and the failing keys' files (default: a new temporary directory)")
	f.StringVar(&o.readyFile, "ready-file", "", "file created when the preload is done and the timed workload starts")
	f.Uint64Var(&o.maxMemoryMiB, "max-memory", 4096,
		"MiB of heap the check may use; past it the process ends undecided (exit status 2) instead of exhausting the machine (0: no limit)")
	return cmd
}

func (o *checkOptions) run(cmd *cobra.Command) error {
	ctx := cmd.Context()
	stderr := cmd.ErrOrStderr()
	o.cfg.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	o.cfg.Progress = progressPrinter(stderr)
	if err := o.configure(ctx); err != nil {
		return couldNotRun(err)
	}
	chk, err := checker.New(ctx, o.cfg)
	if err != nil {
		return couldNotRun(err)
	}
	defer chk.Close()
	stopSignals := staleSignals(chk, stderr)
	defer stopSignals()
	stopInterrupts := endOnInterrupt(chk, stderr)
	defer stopInterrupts()
	guardCtx, stopGuard := context.WithCancel(ctx)
	defer stopGuard()
	go guardMemory(guardCtx, o.maxMemoryMiB<<20, stderr, func() { os.Exit(exitUndecided) })
	fmt.Fprintf(stderr, "check: map %s, %d keys, writing to %s\n", o.mapName(), o.cfg.Keys, o.out)
	v, err := chk.Run(ctx)
	if v == nil {
		return couldNotRun(err)
	}
	fmt.Fprintln(cmd.OutOrStdout(), v.Summary())
	fmt.Fprintf(stderr, "verdict: %s\n", o.out)
	if err != nil {
		return couldNotRun(err)
	}
	return verdictError(v.Result, filepath.Join(o.out, checker.VerdictText))
}

// verdictError is the command's error for a verdict: nil for a pass, else
// one with the exit status of the result.
func verdictError(r checker.Result, details string) error {
	switch r {
	case checker.Pass:
		return nil
	case checker.Fail:
		return &exitError{code: exitFail, err: fmt.Errorf("the cluster failed the check: see %s", details)}
	default:
		return &exitError{code: exitUndecided, err: fmt.Errorf("the check is inconclusive: see %s", details)}
	}
}

// configure fills the checker's configuration from the flags (the map
// file and Redis addresses, the clients' address, the output directory
// and the ready file); o.cfg.Logger must be set.
func (o *checkOptions) configure(ctx context.Context) error {
	standalone := o.ref.runDir != "" || o.ref.name != "" || len(o.ref.files) > 0
	if err := o.maps.validate(); err != nil {
		return err
	}
	if o.maps.set() && standalone {
		return errors.New("cannot check: --map or --map-configmap and a standalone cluster (--run-dir, --cluster, -f) exclude each other")
	}
	o.cfg.Redis = map[string]string{}
	listen := "0.0.0.0:0"
	if o.maps.set() {
		src, err := o.maps.source(o.cfg.Logger)
		if err != nil {
			return err
		}
		o.cfg.MapSource = src
		if err := o.key.load(); err != nil {
			return err
		}
	} else {
		runDir, err := o.ref.resolveRunDir(ctx)
		if err != nil {
			return err
		}
		if err := o.key.loadForRunDir(runDir); err != nil {
			return err
		}
		st, err := control.Dial(runDir).Status(ctx)
		if err != nil {
			return err
		}
		o.cfg.MapFile, listen = st.MapFile, "127.0.0.1:0"
		for _, p := range st.Processes {
			if p.Kind == "redis" && p.Shard != "" {
				o.cfg.Redis[p.Shard] = p.Addr
			}
		}
	}
	for _, r := range o.redis {
		shard, addr, ok := strings.Cut(r, "=")
		if _, _, err := net.SplitHostPort(addr); !ok || shard == "" || err != nil {
			return fmt.Errorf("cannot parse --redis %q: want SHARD=HOST:PORT", r)
		}
		o.cfg.Redis[shard] = addr
	}
	if o.listen != "" {
		listen = o.listen
	}
	o.cfg.Client.Transport.Addr = listen
	o.key.apply(&o.cfg.Client.Transport)
	if o.out == "" {
		dir, err := os.MkdirTemp("", "distcache-check-")
		if err != nil {
			return fmt.Errorf("cannot create the output directory: %w", err)
		}
		o.out = dir
	}
	o.cfg.OutDir = o.out
	if o.readyFile != "" {
		if err := os.Remove(o.readyFile); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("cannot remove the old ready file: %w", err)
		}
		path, logger := o.readyFile, o.cfg.Logger
		o.cfg.Ready = func() {
			if err := os.WriteFile(path, []byte(time.Now().Format(time.RFC3339Nano)+"\n"), 0o644); err != nil {
				logger.Error("cannot create the ready file", "path", path, "err", err)
			}
		}
	}
	return nil
}

// mapName names the map the check follows.
func (o *checkOptions) mapName() string {
	if o.cfg.MapSource != nil {
		return o.cfg.MapSource.String()
	}
	return o.cfg.MapFile
}

// endOnInterrupt ends the timed workload at the first SIGINT or SIGTERM,
// saying so on w, and restores the signals' default action (ending the
// process) for the next one, until the returned function is called.
func endOnInterrupt(chk *checker.Checker, w io.Writer) (stop func()) {
	return onSignals(func(s os.Signal) bool {
		signal.Reset(os.Interrupt, syscall.SIGTERM)
		chk.EndWorkload()
		fmt.Fprintf(w, "check: %v: the workload ends now; the read-back and the check still run (another signal ends the process)\n", s)
		return false
	}, os.Interrupt, syscall.SIGTERM)
}

// staleSignals freezes the stale clients on SIGUSR1 and thaws them on
// SIGUSR2, acknowledging each on w, until the returned function is called;
// from then on both are ignored rather than ending the process before it
// reports.
func staleSignals(chk *checker.Checker, w io.Writer) (stop func()) {
	stopHandling := onSignals(func(s os.Signal) bool {
		if s == syscall.SIGUSR1 {
			chk.Freeze()
			fmt.Fprintf(w, "check: stale clients frozen (map version %d)\n", chk.MapVersion())
		} else {
			chk.Thaw()
			fmt.Fprintf(w, "check: stale clients thawed (map version %d)\n", chk.MapVersion())
		}
		return true
	}, syscall.SIGUSR1, syscall.SIGUSR2)
	return func() {
		stopHandling()
		signal.Ignore(syscall.SIGUSR1, syscall.SIGUSR2)
	}
}

// onSignals calls handle with each of sigs received, until handle returns
// false or the returned function is called (which waits for a call in
// progress).
func onSignals(handle func(os.Signal) (more bool), sigs ...os.Signal) (stop func()) {
	sig := make(chan os.Signal, 4)
	signal.Notify(sig, sigs...)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			case s := <-sig:
				if !handle(s) {
					return
				}
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
		signal.Stop(sig)
	}
}

// progressPrinter prints a line as each phase starts and every 5 seconds
// of the workload.
func progressPrinter(w io.Writer) func(checker.Progress) {
	var last time.Duration
	return func(p checker.Progress) {
		if p.Phase == checker.Working && p.Elapsed > 0 && p.Elapsed-last < 5*time.Second {
			return
		}
		last = p.Elapsed
		c := p.Counts
		switch p.Phase {
		case checker.Working:
			fmt.Fprintf(w, "check: workload %v/%v: %d operations, %d reads failed, %d writes of unknown outcome, %d refused, map version %d\n",
				p.Elapsed.Round(time.Second), p.Duration, c.Operations, c.FailedReads, c.Unknown, c.Refused, p.MapVersion)
		default:
			fmt.Fprintf(w, "check: %s\n", p.Phase)
		}
	}
}

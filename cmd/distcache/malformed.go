package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/distcache/distcache/standalone/control"
	"github.com/distcache/distcache/workload/malformed"
)

// malformedOptions are the flags of `distcache malformed`.
type malformedOptions struct {
	runDir      string
	key         dataKey
	cfg         malformed.Config
	out         string
	metricsWait time.Duration
}

// MalformedProcess is one process's part of `distcache malformed --out`.
type MalformedProcess struct {
	Name           string             `json:"name"`
	Kind           string             `json:"kind"`
	PIDBefore      int                `json:"pidBefore"`
	PIDAfter       int                `json:"pidAfter"`
	RestartsBefore int                `json:"restartsBefore"`
	RestartsAfter  int                `json:"restartsAfter"`
	Before         malformed.Counters `json:"before,omitempty"`
	After          malformed.Counters `json:"after,omitempty"`
}

// MalformedResult is what `distcache malformed --out` writes.
type MalformedResult struct {
	Report    malformed.Report   `json:"report"`
	Processes []MalformedProcess `json:"processes"`
	// Died names the processes whose PID or restart count changed.
	Died []string `json:"died,omitempty"`
}

func newMalformedCommand() *cobra.Command {
	o := &malformedOptions{}
	cmd := &cobra.Command{
		Use:   "malformed",
		Short: "Send bad input to every listener of a standalone cluster, bounded, and check that no process died",
		Long: `malformed sends bad input to every listener of the standalone cluster in
--run-dir, as fast as it can, until --datagrams datagrams and --connections
gateway connections and HTTP requests are sent or --duration passes:

  - at every shim's and cache node's data-plane port: random bytes, valid
    messages truncated, bit-flipped (with and without a valid MAC when the
    cluster has a data-plane key) and oversize datagrams (65,507 bytes);
  - at the gateway: a 2 GB bulk length, an endless line, commands that
    are not UTF-8, pipelines of garbage and malformed array headers;
  - at every metrics port and at the control API: garbage JSON bodies,
    other methods, unknown paths (never a process of the cluster, never
    the shutdown).

The keys of the messages it corrupts start with "malformed:", none of a
checked workload's. It then prints what it sent, each process's counters
of bad input (distcache_malformed_packets_total,
distcache_mac_rejected_total, distcache_gateway_protocol_errors_total)
before and after, and exits 1 if a process's PID or restart count changed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runMalformed(cmd.Context(), cmd.OutOrStdout(), o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.runDir, "run-dir", "", "run directory of the standalone cluster (required)")
	f.IntVar(&o.cfg.Datagrams, "datagrams", 1_000_000, "bad datagrams to send in all")
	f.IntVar(&o.cfg.Connections, "connections", 200, "gateway connections, and HTTP requests, to send")
	f.DurationVar(&o.cfg.Duration, "duration", 30*time.Second, "bound on the run")
	f.Uint64Var(&o.cfg.Seed, "seed", 1, "seed of the generators")
	f.IntVar(&o.cfg.Senders, "senders", 2, "goroutines sending datagrams")
	f.StringVar(&o.out, "out", "", "write the result as JSON to this file")
	o.key.addFlag(cmd)
	_ = cmd.MarkFlagRequired("run-dir")
	return cmd
}

func runMalformed(ctx context.Context, stdout io.Writer, o *malformedOptions) error {
	if err := o.key.loadForRunDir(o.runDir); err != nil {
		return err
	}
	if o.key.ring != nil {
		o.cfg.Signer = o.key.ring
	}
	ctl := control.Dial(o.runDir)
	before, err := ctl.Status(ctx)
	if err != nil {
		return fmt.Errorf("cannot read the cluster's status: %w", err)
	}
	path := control.SocketPath(o.runDir)
	o.cfg.Control = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}}}
	for _, p := range before.Processes {
		switch p.Kind {
		case "shim", "node":
			if ap, err := netip.ParseAddrPort(p.Addr); err == nil {
				o.cfg.UDP = append(o.cfg.UDP, ap)
			}
		case "gateway":
			o.cfg.Gateways = append(o.cfg.Gateways, p.Addr)
		}
		if p.MetricsAddr != "" && p.Kind != "prometheus" {
			o.cfg.HTTP = append(o.cfg.HTTP, p.MetricsAddr)
		}
	}
	scrape := &http.Client{Timeout: 5 * time.Second}
	res := MalformedResult{}
	for _, p := range before.Processes {
		mp := MalformedProcess{Name: p.Name, Kind: p.Kind, PIDBefore: p.PID, RestartsBefore: p.Restarts}
		if p.MetricsAddr != "" && p.Kind != "prometheus" {
			mp.Before, _ = malformed.Scrape(ctx, scrape, p.MetricsAddr)
		}
		res.Processes = append(res.Processes, mp)
	}
	res.Report = malformed.Run(ctx, o.cfg)
	after, err := ctl.Status(ctx)
	if err != nil {
		return fmt.Errorf("cannot read the cluster's status after the run: %w", err)
	}
	byName := map[string]control.Process{}
	for _, p := range after.Processes {
		byName[p.Name] = p
	}
	for i := range res.Processes {
		mp := &res.Processes[i]
		p := byName[mp.Name]
		mp.PIDAfter, mp.RestartsAfter = p.PID, p.Restarts
		if mp.PIDAfter != mp.PIDBefore || mp.RestartsAfter != mp.RestartsBefore {
			res.Died = append(res.Died, mp.Name)
		}
		if p.MetricsAddr != "" && mp.Before != nil {
			mp.After, _ = malformed.Scrape(ctx, scrape, p.MetricsAddr)
		}
	}
	printMalformed(stdout, &res)
	if o.out != "" {
		b, err := json.MarshalIndent(res, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(o.out, append(b, '\n'), 0o644); err != nil {
			return fmt.Errorf("cannot write %s: %w", o.out, err)
		}
	}
	if len(res.Died) > 0 {
		return &exitError{code: 1, err: fmt.Errorf("processes died or restarted under bad input: %v", res.Died)}
	}
	return nil
}

func printMalformed(w io.Writer, res *MalformedResult) {
	r := &res.Report
	var total int64
	for _, n := range r.Datagrams {
		total += n
	}
	fmt.Fprintf(w, "sent %d datagrams in %s (%.0f/s, %d send errors): %s\n", total, r.Elapsed.Round(time.Millisecond),
		r.DatagramsPerSecond, r.SendErrors, sortedCounts(r.Datagrams))
	fmt.Fprintf(w, "gateway connections: %s; %d refused with a protocol error\n", sortedCounts(r.Connections), r.Refused)
	if len(r.Slowest) > 0 {
		fmt.Fprintf(w, "slowest gateway connection of each kind: %s\n", sortedDurations(r.Slowest))
	}
	fmt.Fprintf(w, "HTTP answers: %s\n", sortedCounts(r.HTTP))
	for _, p := range res.Processes {
		if p.Before == nil {
			continue
		}
		fmt.Fprintf(w, "  %-24s %-10s pid %d→%d  bad input counted %.0f→%.0f\n", p.Name, p.Kind, p.PIDBefore, p.PIDAfter, p.Before.Total(), p.After.Total())
	}
	if len(res.Died) == 0 {
		fmt.Fprintln(w, "no process died")
	} else {
		fmt.Fprintf(w, "died or restarted: %v\n", res.Died)
	}
}

// sortedCounts is "k1 n1, k2 n2, ..." in the order of the keys.
func sortedCounts(m map[string]int64) string {
	return sortedJoin(m, func(n int64) string { return strconv.FormatInt(n, 10) })
}

// sortedDurations is sortedCounts for durations, rounded to 0.1 ms.
func sortedDurations(m map[string]time.Duration) string {
	return sortedJoin(m, func(d time.Duration) string { return d.Round(100 * time.Microsecond).String() })
}

func sortedJoin[V any](m map[string]V, format func(V) string) string {
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+" "+format(m[k]))
	}
	return strings.Join(parts, ", ")
}

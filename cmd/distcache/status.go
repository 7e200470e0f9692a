package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/distcache/distcache/layout"
	"github.com/distcache/distcache/standalone/control"
	"github.com/distcache/distcache/standalone/plan"
)

func newStatusCommand() *cobra.Command {
	var (
		ref    clusterRef
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show a standalone cluster: processes, member states, map version and loads",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			runDir, err := ref.resolveRunDir(cmd.Context())
			if err != nil {
				return err
			}
			st, err := control.Dial(runDir).Status(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(st)
			}
			printStatus(cmd.OutOrStdout(), st)
			return nil
		},
	}
	ref.addFlags(cmd, "the cluster's YAML files (to find it by its name)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the status as JSON")
	return cmd
}

// printStatus writes a cluster's status as a summary and a process table.
func printStatus(w io.Writer, st control.Status) {
	fmt.Fprintf(w, "cluster %s: %s, map version %d, up %s (pid %d)\n", st.Cluster, st.Phase, st.MapVersion,
		time.Since(st.Started).Round(time.Second), st.PID)
	fmt.Fprintf(w, "run directory %s\n", st.RunDir)
	fmt.Fprintln(w, persistenceLine(st))
	if st.ShardRate > 0 {
		fmt.Fprintf(w, "emulated capacity: %.0f units/s per storage shard, %.0f per cache node (DistCache §6.1)\n", st.ShardRate, st.NodeRate)
	}
	if line := gatewayLine(st); line != "" {
		fmt.Fprintln(w, line)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tNAME\tLAYER/SHARD\tSTATE\tMEMBER\tREADY\tPID\tRESTARTS\tLOAD/s\tUTIL\tADDR")
	for _, p := range st.Processes {
		where := p.Layer
		if p.Kind != "node" && p.Kind != "switch" {
			where = p.Shard
		}
		// Redis servers and the control loop do no work the scrape reads.
		working := p.Kind == "shim" || p.Kind == "node"
		util := "-"
		if p.Capacity > 0 && working {
			util = fmt.Sprintf("%.0f%%", 100*p.Load/p.Capacity)
		}
		load := "-"
		if working {
			load = fmt.Sprintf("%.0f", p.Load)
		}
		state := p.State
		if p.Slowed != "" {
			state += "+slowed:" + p.Slowed // every datagram it sends is delayed
		}
		addr := p.Addr
		if p.Kind == string(plan.ControlLoop) {
			addr = p.MetricsAddr // it has no data-plane address
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%v\t%s\t%d\t%s\t%s\t%s\n", p.Kind, p.Name, orDash(where), state,
			orDash(p.MemberState), p.Ready, pidOrDash(p.PID), p.Restarts, load, util, orDash(addr))
	}
	_ = tw.Flush()
	if len(st.Events) > 0 {
		fmt.Fprintln(w, "\nfailover events:")
		for _, e := range st.Events {
			fmt.Fprintf(w, "  %s  %s/%s %s → %s (map version %d)\n", e.Time.Format(time.TimeOnly), e.Layer, e.Member, e.From, e.To, e.MapVersion)
		}
	}
}

// printSummary writes a cluster's status in a few lines: what runs where.
func printSummary(w io.Writer, st control.Status) {
	kinds := map[string]int{}
	layers := map[string]int{}
	var order []string
	for _, p := range st.Processes {
		kinds[p.Kind]++
		if p.Kind == "node" {
			if layers[p.Layer] == 0 {
				order = append(order, p.Layer)
			}
			layers[p.Layer]++
		}
	}
	var ls []string
	for _, l := range order {
		ls = append(ls, fmt.Sprintf("%s %d", l, layers[l]))
	}
	nodeLayers := "" // none in a cluster of switches alone
	if len(ls) > 0 {
		nodeLayers = " (" + strings.Join(ls, ", ") + ")"
	}
	gateways, switches := "", ""
	if n := kinds[string(plan.Gateway)]; n > 0 {
		gateways = fmt.Sprintf(", %d gateway", n)
	}
	switch n, leaves := kinds[string(plan.Switch)], kinds[string(plan.ClientLeaf)]; {
	case leaves > 0:
		what := "client leaves"
		if leaves == 1 {
			what = "client leaf"
		}
		switches = fmt.Sprintf(", %d software switches, %d %s and %d fabric controller", n, leaves, what, kinds[string(plan.Fabric)])
	case n > 0:
		switches = fmt.Sprintf(", %d software switches and %d fabric controller", n, kinds[string(plan.Fabric)])
	}
	fmt.Fprintf(w, "cluster %s %s: %d redis-servers, %d storage shims, %d cache nodes%s%s, %d control loop%s, map version %d\n",
		st.Cluster, st.Phase, kinds["redis"], kinds["shim"], kinds["node"], nodeLayers, switches, kinds["controlloop"], gateways, st.MapVersion)
	fmt.Fprintf(w, "run directory %s (map.json, logs/)\n", st.RunDir)
	fmt.Fprintln(w, persistenceLine(st))
	if st.ShardRate > 0 {
		fmt.Fprintf(w, "emulated capacity: %.0f units/s per storage shard, %.0f per cache node (DistCache §6.1)\n", st.ShardRate, st.NodeRate)
	}
}

// gatewayLine tells how to reach the cluster's Redis-compatible gateway
// with redis-cli, and whether it serves TLS and requires AUTH ("" without
// a gateway).
func gatewayLine(st control.Status) string {
	for _, p := range st.Processes {
		if p.Kind != string(plan.Gateway) {
			continue
		}
		flags, what := "", "the Redis-compatible gateway"
		if p.TLS {
			flags += " --tls --cacert CA_FILE"
			what += ", over TLS"
		}
		if p.Auth {
			flags += " --user USER --askpass"
			what += ", AUTH required"
		}
		host, port, err := net.SplitHostPort(p.Addr)
		if err != nil {
			return fmt.Sprintf("redis:  %s (%s; docs/gateway.md)", p.Addr, what)
		}
		return fmt.Sprintf("redis:  redis-cli -h %s -p %s%s (%s; docs/gateway.md)", host, port, flags, what)
	}
	return ""
}

// persistenceLine says what the cluster's Redis servers keep across
// crashes, and where (docs/durability.md has what each setting loses).
func persistenceLine(st control.Status) string {
	switch p := st.Persistence; p {
	case layout.PersistenceNone:
		return "persistence none: Redis data in memory only, lost when a redis-server exits"
	case layout.PersistenceUnmanaged:
		return "persistence unmanaged: external Redis servers, their own configuration decides"
	case "":
		return "persistence unknown"
	default:
		return fmt.Sprintf("persistence %s: append-only files in %s", p, filepath.Join(st.RunDir, "redis", "<shard>"))
	}
}

func orDash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "-"
	}
	return s
}

func pidOrDash(pid int) string {
	if pid == 0 {
		return "-"
	}
	return fmt.Sprint(pid)
}

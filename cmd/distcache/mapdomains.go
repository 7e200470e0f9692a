package main

import (
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/distcache/distcache/placement/partmap"
	"github.com/distcache/distcache/workload"
)

// newMapDomainsCommand is `distcache map domains`: how many keys a host's
// loss leaves without a cached copy under a published map.
func newMapDomainsCommand() *cobra.Command {
	var (
		src    mapSourceFlags
		sample int
		blind  bool
	)
	cmd := &cobra.Command{
		Use:   "domains",
		Short: "Show, per host, the keys whose every cached copy is on it",
		Long: `Read a partition map and place a sample of keys (the workload's key
names) by it: for each host of the map's members, the members on it and the
fraction of keys whose every candidate is on it, which losing that host
leaves without a cached copy until the remap. A map without hosts has none
to show.`,
		Example: `  distcache map domains --map-configmap default/shop-partition-map`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			w, err := src.open(cmd.Context(), slog.New(slog.DiscardHandler))
			if err != nil {
				return err
			}
			p := w.Current()
			if blind {
				if p, err = partmap.Compile(p.Map().WithoutDomains()); err != nil {
					return err
				}
			}
			return printHostLosses(cmd.OutOrStdout(), w.Current().Map(), p, sample)
		},
	}
	src.addFlags(cmd, "partition map file", true)
	cmd.Flags().IntVar(&sample, "sample", 100_000, "keys placed")
	cmd.Flags().BoolVar(&blind, "blind", false, "place the keys as if the map named no hosts (as before failure domains), counting by its hosts")
	return cmd
}

// printHostLosses writes the table of newMapDomainsCommand: keys placed
// by p, counted by the hosts of m's members.
func printHostLosses(w io.Writer, m *partmap.Map, p *partmap.Placement, sample int) error {
	if sample < 1 {
		return fmt.Errorf("cannot sample %d keys", sample)
	}
	members := map[string][]string{}
	for _, l := range m.Layers {
		for _, mb := range l.Members {
			if mb.Host != "" {
				members[mb.Host] = append(members[mb.Host], mb.Name+" ("+string(mb.State)+")")
			}
		}
	}
	if len(members) == 0 {
		fmt.Fprintf(w, "map v%d names no hosts\n", m.Version)
		return nil
	}
	sole := map[string]int{}
	var buf []partmap.Candidate
	for k := range sample {
		buf = p.Candidates(workload.Key(uint64(k)), buf[:0])
		if h := partmap.SoleHost(m, buf); h != "" {
			sole[h]++
		}
	}
	hosts := make([]string, 0, len(members))
	for h := range members {
		hosts = append(hosts, h)
	}
	slices.Sort(hosts)
	fmt.Fprintf(w, "map v%d, %d keys placed\n\n| host | zone | members | keys with every copy on it |\n|---|---|---|---:|\n", m.Version, sample)
	total := 0
	for _, h := range hosts {
		total += sole[h]
		fmt.Fprintf(w, "| %s | %s | %s | %.3f %% |\n", h, hostZone(m, h), strings.Join(members[h], ", "), 100*float64(sole[h])/float64(sample))
	}
	fmt.Fprintf(w, "| all | | | %.3f %% |\n", 100*float64(total)/float64(sample))
	return nil
}

// hostZone is the zone of m's members on host.
func hostZone(m *partmap.Map, host string) string {
	zone, _ := m.HostZone(host)
	return zone
}

package main

import (
	"fmt"
	"io"

	"github.com/distcache/distcache/sim"
)

// runDomains prints, for o's topology on each host count, the keys a
// host's loss leaves without a cached copy with and without failure
// domains in the placement, and the cross-zone reads and balance of
// zone-aware choice against zone-blind choice (sim.HostLosses,
// sim.ZoneRoutings).
func runDomains(w io.Writer, o simOptions) error {
	cfg := o.cfg
	if o.quick {
		cfg = sim.Quick(cfg)
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	fmt.Fprintf(w, "%d spine members, %d racks (one bound leaf each), %d sampled keys, hosts in %d zones\n\n",
		cfg.Spines, cfg.Racks, o.sample, o.zones)
	fmt.Fprintf(w, "| hosts | keys on one host, blind | aware | lost with one host (mean / worst), blind | aware |\n")
	fmt.Fprintf(w, "|---:|---:|---:|---:|---:|\n")
	for _, h := range o.hosts {
		blind, aware, err := sim.HostLosses(cfg, sim.Domains{Hosts: h, Zones: o.zones}, o.sample)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "| %d | %.3f %% | %.3f %% | %.4f %% / %.4f %% | %.4f %% / %.4f %% |\n", h,
			100*blind.Shared, 100*aware.Shared, 100*blind.MeanLost, 100*blind.MaxLost, 100*aware.MeanLost, 100*aware.MaxLost)
	}
	hosts := o.hosts[0]
	fmt.Fprintf(w, "\nzone-aware choice, %d hosts, %d clients over %d zones, Zipf %.2f, %d queries:\n\n", hosts, cfg.Routing.Clients, o.zones, cfg.Skew, cfg.Routing.Queries)
	fmt.Fprintf(w, "| choice | cross-zone reads | busiest node / mean |\n|---|---:|---:|\n")
	rs, err := sim.ZoneRoutings(cfg, sim.Domains{Hosts: hosts, Zones: o.zones}, []float64{-1, 0, 0.25, 0.5, 1})
	if err != nil {
		return err
	}
	for _, r := range rs {
		name := "zone-blind"
		if r.Margin >= 0 {
			name = fmt.Sprintf("zone-aware, margin %.2f", r.Margin)
		}
		fmt.Fprintf(w, "| %s | %.1f %% | %.2f |\n", name, 100*r.CrossZone, r.MaxMean)
	}
	return nil
}

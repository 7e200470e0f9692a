package main

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/distcache/distcache/dataplane/mapwatch"
	"github.com/distcache/distcache/placement/partmap"
)

func newMapCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "map",
		Short: "Work with partition maps",
	}
	cmd.AddCommand(newMapInitCommand(), newMapDomainsCommand())
	return cmd
}

// mapInitOptions are the flags of `distcache map init`.
type mapInitOptions struct {
	out           string
	cluster       string
	racks, shards int
	layers        []string
	host          string
	basePort      int
}

func newMapInitCommand() *cobra.Command {
	o := &mapInitOptions{}
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Write a partition map for processes on one host, with consecutive ports",
		Long: `Write a partition map (version 1) for a cluster whose shims and cache nodes
run on one host: storage shards get ports base-port, base-port+1, …, then the
cache members of every layer in order. A layer is NAME=COUNT, or NAME=racks for
a layer bound to the storage racks (one member per rack).`,
		Example: `  distcache map init --out map.json --racks 2 --shards-per-rack 2 \
    --layer spine=2 --layer leaf=racks --base-port 7100`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m, err := o.build()
			if err != nil {
				return err
			}
			if err := mapwatch.WriteFile(o.out, m); err != nil {
				return err
			}
			cmd.Printf("wrote %s: %d racks × %d shards, %d layers\n", o.out, o.racks, o.shards, len(m.Layers))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.out, "out", "partition-map.json", "file to write")
	f.StringVar(&o.cluster, "cluster", "distcache", "cluster name")
	f.IntVar(&o.racks, "racks", 1, "storage racks")
	f.IntVar(&o.shards, "shards-per-rack", 1, "storage shards (Redis servers) per rack")
	f.StringArrayVar(&o.layers, "layer", []string{"spine=1"}, "cache layer NAME=COUNT or NAME=racks, upper layers first (repeatable)")
	f.StringVar(&o.host, "host", "127.0.0.1", "host of every address")
	f.IntVar(&o.basePort, "base-port", 7100, "first UDP port")
	return cmd
}

func (o *mapInitOptions) build() (*partmap.Map, error) {
	spec := partmap.Spec{Cluster: o.cluster, Racks: o.racks, ShardsPerRack: o.shards}
	for _, l := range o.layers {
		name, count, ok := strings.Cut(l, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("cannot parse --layer %q: want NAME=COUNT or NAME=racks", l)
		}
		ls := partmap.LayerSpec{Name: name}
		if count == "racks" {
			ls.BoundToRacks = true
		} else {
			n, err := strconv.Atoi(count)
			if err != nil || n < 1 {
				return nil, fmt.Errorf("cannot parse --layer %q: count %q is not a positive number", l, count)
			}
			ls.Nodes = n
		}
		spec.Layers = append(spec.Layers, ls)
	}
	m, err := partmap.Build(spec, nil)
	if err != nil {
		return nil, fmt.Errorf("cannot build partition map: %w", err)
	}
	port := o.basePort
	next := func() (string, error) {
		if port > 65535 {
			return "", fmt.Errorf("cannot assign addresses: ports beyond 65535 (base port %d)", o.basePort)
		}
		port++
		return net.JoinHostPort(o.host, strconv.Itoa(port-1)), nil
	}
	for r := range m.Storage.Racks {
		for s := range m.Storage.Racks[r].Shards {
			if m.Storage.Racks[r].Shards[s].Address, err = next(); err != nil {
				return nil, err
			}
		}
	}
	for l := range m.Layers {
		for i := range m.Layers[l].Members {
			if m.Layers[l].Members[i].Address, err = next(); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

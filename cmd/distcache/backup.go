package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/distcache/distcache/dataplane/redisconn"
	"github.com/distcache/distcache/placement/partmap"
	"github.com/distcache/distcache/snapshot"
	"github.com/distcache/distcache/standalone/control"
	"github.com/distcache/distcache/topology"
)

// shardAddressing finds a cluster's storage shards and their Redis: a
// running standalone cluster (clusterRef: its status lists each shard's
// redis-server, its map the shards), or, given --redis-address-template,
// addresses made from the shards' names, as in Kubernetes.
type shardAddressing struct {
	ref      clusterRef
	template string
	access   redisconn.Settings
}

func (a *shardAddressing) addFlags(cmd *cobra.Command) {
	a.ref.addFlags(cmd, "the standalone cluster's YAML files (to find it by its name)")
	f := cmd.Flags()
	f.StringVar(&a.template, "redis-address-template", "",
		"host:port of each shard's Redis, with {shard} for the shard's name (<cluster>-rack-<r>-<s>) and {rack} for its rack's "+
			"(<cluster>-rack-<r>), e.g. {shard}.{rack}.NAMESPACE.svc:6379 for the operator's managed storage; "+
			"unset: the redis-servers of the running standalone cluster")
	f.StringVar(&a.access.Username, "redis-username", "", "Redis ACL user (default: the default user)")
	f.StringVar(&a.access.PasswordFile, "redis-password-file", "", "file holding the Redis password (a mounted Secret); never pass the password itself")
	f.StringVar(&a.access.PreviousPasswordFile, "redis-previous-password-file", "",
		"file that may hold a second Redis password, tried when Redis refuses the first with WRONGPASS (a missing file: none); during a rotation")
	f.BoolVar(&a.access.TLS, "redis-tls", false, "connect to Redis with TLS")
	f.StringVar(&a.access.CAFile, "redis-tls-ca-file", "", "PEM bundle of the CAs that sign Redis's certificates (default: the system's)")
	f.StringVar(&a.access.ServerName, "redis-tls-server-name", "", "name Redis's certificates must carry (default: the host of each address)")
}

// fromTemplate is the address of shard s of rack r of cluster.
func (a *shardAddressing) fromTemplate(cluster string, r, s int) string {
	return strings.NewReplacer("{shard}", partmap.ShardName(cluster, r, s), "{rack}", topology.RackName(cluster, r)).Replace(a.template)
}

// standalone reads the running standalone cluster's status: its name, its
// map (the shards) and each shard's redis-server address.
func (a *shardAddressing) standalone(ctx context.Context) (string, *partmap.Map, map[string]string, error) {
	runDir, err := a.ref.resolveRunDir(ctx)
	if err != nil {
		return "", nil, nil, err
	}
	st, err := control.Dial(runDir).Status(ctx)
	if err != nil {
		return "", nil, nil, err
	}
	m, err := readMapFile(st.MapFile)
	if err != nil {
		return "", nil, nil, err
	}
	redis := map[string]string{}
	for _, p := range st.Processes {
		if p.Kind == "redis" {
			redis[p.Shard] = p.Addr
		}
	}
	if len(redis) == 0 {
		return "", nil, nil, fmt.Errorf("cannot find the Redis servers of %s: it runs none (storage.mode external); give --redis-address-template", st.Cluster)
	}
	return st.Cluster, m, redis, nil
}

// readMapFile reads a partition map file.
func readMapFile(path string) (*partmap.Map, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read partition map: %w", err)
	}
	m, err := partmap.Decode(b)
	if err != nil {
		return nil, fmt.Errorf("cannot read partition map %s: %w", path, err)
	}
	return m, nil
}

// source is how to reach the Redis at address with the flags' login:
// redisconn's dialer, which does TLS and AUTH (and tries the previous
// password), or a plain connection without either.
func (a *shardAddressing) source(address string) (snapshot.Source, error) {
	set := a.access
	set.Addr = address
	o, err := set.Options()
	if err != nil {
		return snapshot.Source{}, err
	}
	return snapshot.Source{Addr: address, Dial: o.Dialer}, nil
}

func newBackupCommand() *cobra.Command {
	var (
		addr          shardAddressing
		out           string
		keep          int
		parallel      int
		racks, shards int
	)
	cmd := &cobra.Command{
		Use:   "backup",
		Short: "Copy an RDB snapshot of every storage shard of a cluster into a snapshot set",
		Long: `backup copies the data of every storage shard's Redis, over Redis's
replication protocol (as redis-cli --rdb does), into a new directory under
--out: one RDB file per shard and manifest.json (cluster, shape, each
file's size and SHA-256, the Redis version). Each RDB is verified before
the manifest is written. Each shard's copy is a point in time of that shard
alone: a set is not consistent across shards (docs/durability.md).

Without --redis-address-template it copies the running standalone cluster
found by -f, --cluster or --run-dir. With it, it needs --cluster, --racks
and --shards-per-rack, as the operator's backup CronJob gives them.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			if out == "" {
				return errors.New("cannot back up: give --out, the directory of the snapshot sets")
			}
			o := snapshot.TakeOptions{Root: out, Parallel: parallel}
			var address func(r, s int) string
			if addr.template != "" {
				if addr.ref.name == "" || racks < 1 || shards < 1 {
					return errors.New("cannot back up: --redis-address-template needs --cluster, --racks and --shards-per-rack")
				}
				o.Cluster, o.Racks, o.ShardsPerRack = addr.ref.name, racks, shards
				address = func(r, s int) string { return addr.fromTemplate(o.Cluster, r, s) }
			} else {
				cluster, m, redis, err := addr.standalone(ctx)
				if err != nil {
					return err
				}
				o.Cluster, o.Racks, o.ShardsPerRack = cluster, len(m.Storage.Racks), len(m.Storage.Racks[0].Shards)
				address = func(r, s int) string { return redis[partmap.ShardName(cluster, r, s)] }
			}
			sources := make([][]snapshot.Source, o.Racks)
			for r := range o.Racks {
				for s := range o.ShardsPerRack {
					src, err := addr.source(address(r, s))
					if err != nil {
						return err
					}
					sources[r] = append(sources[r], src)
				}
			}
			o.Source = func(r, s int) snapshot.Source { return sources[r][s] }
			dir, m, err := snapshot.Take(ctx, o)
			if err != nil {
				return err
			}
			var total int64
			for _, s := range m.Shards {
				total += s.Size
			}
			fmt.Fprintf(cmd.OutOrStdout(), "snapshot set %s: %d shards, %d bytes\n", dir, len(m.Shards), total)
			if keep > 0 {
				pruned, err := snapshot.Prune(out, m.Cluster, keep)
				for _, p := range pruned {
					log.Info("deleted an old snapshot set", "dir", p, "keep", keep)
				}
				if err != nil {
					return err
				}
			}
			return nil
		},
	}
	addr.addFlags(cmd)
	f := cmd.Flags()
	f.StringVar(&out, "out", "", "directory in which the snapshot set's directory (<cluster>-<UTC time>) is created")
	f.IntVar(&keep, "keep", 0, "after a successful backup, delete the cluster's oldest snapshot sets in --out beyond this many (0: keep all)")
	f.IntVar(&parallel, "parallel", 4, "shards copied at once (each copy makes its Redis fork)")
	f.IntVar(&racks, "racks", 0, "storage racks of the cluster (with --redis-address-template)")
	f.IntVar(&shards, "shards-per-rack", 0, "storage shards per rack (with --redis-address-template)")
	return cmd
}

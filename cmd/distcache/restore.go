package main

import (
	"errors"
	"fmt"
	"log/slog"

	goredis "github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/distcache/distcache/placement/partmap"
	"github.com/distcache/distcache/snapshot"
)

func newRestoreCommand() *cobra.Command {
	var (
		addr        shardAddressing
		from        string
		mapFile     string
		redisServer string
		o           snapshot.RestoreOptions
	)
	cmd := &cobra.Command{
		Use:   "restore",
		Short: "Load a snapshot set into a new cluster, each key into the shard the cluster's map gives it",
		Long: `restore verifies the snapshot set in --from (sizes, SHA-256, RDB
checksums), then, shard by shard, reads the RDB file and RESTOREs each key
of database 0, with its expiry time, into the shard the target cluster's
partition map places it on. The target may have other numbers of racks and
shards than the source. It needs no redis-server: it cuts each key's DUMP
payload out of the file. It refuses module values and RDB versions above
12; --redis-server PATH reads those instead: it starts a temporary
redis-server on each RDB (unix socket only, no persistence) and copies its
keys with DUMP and RESTORE.

It writes to the target's Redis servers directly, past the shims and the
caches: restore into a new cluster, before clients use it. It refuses a
target shard that holds keys unless --force, and a key the target holds
unless --replace (docs/durability.md).

Without --redis-address-template the target is the running standalone
cluster found by -f, --cluster or --run-dir (its map and redis-servers).
With it, --map gives the target's partition map (the map.json of its
ConfigMap <cluster>-partition-map).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if from == "" {
				return errors.New("cannot restore: give --from, the snapshot set's directory")
			}
			var (
				m     *partmap.Map
				redis map[string]string
				err   error
			)
			if addr.template != "" {
				if mapFile == "" {
					return errors.New("cannot restore: --redis-address-template needs --map, the target cluster's partition map")
				}
				m, err = readMapFile(mapFile)
			} else {
				_, m, redis, err = addr.standalone(ctx)
			}
			if err != nil {
				return err
			}
			p, err := partmap.Compile(m)
			if err != nil {
				return err
			}
			targets := make([][]*goredis.Options, len(m.Storage.Racks))
			for r, rack := range m.Storage.Racks {
				for s, sh := range rack.Shards {
					set := addr.access
					if redis != nil {
						set.Addr = redis[sh.Name]
					} else {
						set.Addr = addr.fromTemplate(m.Cluster, r, s)
					}
					ro, err := set.Options()
					if err != nil {
						return err
					}
					targets[r] = append(targets[r], ro)
				}
			}
			o.Dir, o.Placement, o.RedisServer = from, p, redisServer
			o.Target = func(r, s int) *goredis.Options { return targets[r][s] }
			o.Logger = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			res, err := snapshot.Restore(ctx, o)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "restored %d keys from %s into %s (%d internal keys left out, %d expired)\n",
				res.Keys, from, m.Cluster, res.Internal, res.Expired)
			return nil
		},
	}
	addr.addFlags(cmd)
	f := cmd.Flags()
	f.StringVar(&from, "from", "", "the snapshot set's directory (with manifest.json)")
	f.StringVar(&mapFile, "map", "", "the target cluster's partition map (with --redis-address-template)")
	f.StringVar(&redisServer, "redis-server", "", "load each RDB into a temporary server of this redis-server binary, one that reads the snapshot's RDB version and whose DUMP payloads the target's Redis accepts (default: read the RDB files in-process)")
	f.StringVar(&o.TempDir, "temp-dir", "", "directory of the temporary redis-servers, with --redis-server (default: the system's temporary directory)")
	f.BoolVar(&o.Replace, "replace", false, "overwrite keys the target already holds (default: fail on the first one)")
	f.BoolVar(&o.Force, "force", false, "restore into target shards that already hold keys (default: every target shard must be empty)")
	return cmd
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/distcache/distcache/dataplane/metrics"
	"github.com/distcache/distcache/dataplane/transport"
	"github.com/distcache/distcache/dataplane/wireauth"
	"github.com/distcache/distcache/standalone/plan"
)

// dataKeyHelp documents --data-plane-key-dir of every data-plane role and
// client command.
const dataKeyHelp = "directory with the cluster's data-plane key (file 'current', optional 'previous', as a Secret is mounted): writes and coherence messages are signed and checked with it, and re-read when the files change; empty: unauthenticated"

// replayHelp documents --replay-protection beside --data-plane-key-dir.
const replayHelp = "with a data-plane key, the least replay protection: accept (send signed messages unstamped, accept them with or without a stamp), stamp (stamp them, accept both) or require (stamp them, refuse unstamped ones); every stamp received is checked against replays. The partition map's replayProtection raises it at runtime (the operator moves its clusters to require by itself). Default: require for a standalone cluster found by its run directory, else accept: what the map says"

// dataKey is the --data-plane-key-dir and --replay-protection flags and
// the key ring the first loads.
type dataKey struct {
	dir    string
	replay string
	ring   *wireauth.Keyring // nil: no key
	mode   transport.ReplayMode
}

func (k *dataKey) addFlag(cmd *cobra.Command) {
	cmd.Flags().StringVar(&k.dir, "data-plane-key-dir", "", dataKeyHelp)
	cmd.Flags().StringVar(&k.replay, "replay-protection", "", replayHelp)
}

// parseReplay sets the replay mode from the flag, or to def when unset.
func (k *dataKey) parseReplay(def transport.ReplayMode) error {
	k.mode = def
	if k.replay == "" {
		return nil
	}
	m, err := transport.ParseReplayMode(k.replay)
	if err != nil {
		return fmt.Errorf("cannot use --replay-protection: %w", err)
	}
	k.mode = m
	return nil
}

// load reads the key directory, if one was given.
func (k *dataKey) load() error {
	if err := k.parseReplay(transport.ReplayAccept); err != nil {
		return err
	}
	if k.dir == "" {
		return nil
	}
	r, err := wireauth.Load(k.dir)
	if err != nil {
		return fmt.Errorf("cannot use --data-plane-key-dir: %w", err)
	}
	k.ring = r
	return nil
}

// loadForRunDir loads the flag's directory or, without one, the key of the
// standalone cluster in runDir if it has one.
func (k *dataKey) loadForRunDir(runDir string) error {
	if k.dir == "" {
		dir := plan.KeyDir(runDir)
		if _, err := os.Stat(filepath.Join(dir, wireauth.CurrentFile)); errors.Is(err, fs.ErrNotExist) {
			return k.parseReplay(transport.ReplayAccept)
		}
		k.dir = dir
		if err := k.load(); err != nil {
			return err
		}
		// Standalone mode starts every process of a cluster with
		// --replay-protection=require (plan.roleArgs).
		return k.parseReplay(transport.ReplayRequire)
	}
	return k.load()
}

// apply configures an endpoint to sign and verify with the key; the mode
// is the floor that the maps the endpoint's owner installs may raise
// (transport.Endpoint.FollowMap).
func (k *dataKey) apply(c *transport.Config) {
	if k.ring != nil {
		c.Auth = k.ring
		c.Replay = k.mode
	}
}

// watch re-reads the key directory until ctx ends.
func (k *dataKey) watch(ctx context.Context, log *slog.Logger) {
	if k.ring != nil {
		go k.ring.Watch(ctx, k.dir, wireauth.DefaultPoll, log)
	}
}

// register exposes the key ring's counters:
// distcache_data_plane_key_reloads_total and
// distcache_data_plane_key_errors_total.
func (k *dataKey) register(reg prometheus.Registerer) error {
	if k.ring == nil {
		return nil
	}
	return metrics.Register(reg,
		metrics.CounterFunc("distcache_data_plane_key_reloads_total", "Changes of the data-plane key files installed without a restart.",
			func() uint64 { return k.ring.Stats().Reloads }),
		metrics.CounterFunc("distcache_data_plane_key_errors_total", "Reads of the data-plane key files that failed; the keys in use were kept.",
			func() uint64 { return k.ring.Stats().LoadErrors }))
}

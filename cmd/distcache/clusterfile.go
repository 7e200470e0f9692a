package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/distcache/distcache/layout"
	"github.com/distcache/distcache/standalone/control"
	"github.com/distcache/distcache/standalone/manifest"
)

// clusterRef are the flags that find a standalone cluster: its files, its
// name, or its run directory.
type clusterRef struct {
	files  []string
	name   string
	runDir string
}

func (r *clusterRef) addFlags(cmd *cobra.Command, filesHelp string) {
	f := cmd.Flags()
	f.StringArrayVarP(&r.files, "filename", "f", nil, filesHelp)
	f.StringVar(&r.name, "cluster", "", "name of the cluster (default: the CacheCluster in -f, or the only running one)")
	f.StringVar(&r.runDir, "run-dir", "", "run directory of the cluster (default: "+defaultStateRoot()+"/<cluster>)")
}

// defaultStateRoot is where run directories live: $XDG_STATE_HOME/distcache
// or ~/.local/state/distcache.
func defaultStateRoot() string {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "distcache")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "state", "distcache")
	}
	return filepath.Join(os.TempDir(), "distcache")
}

// loadCluster reads the -f files as the API server would admit them and
// lays out their CacheCluster.
func (r *clusterRef) loadCluster(ctx context.Context) (*manifest.Bundle, *layout.Cluster, error) {
	if len(r.files) == 0 {
		return nil, nil, errors.New("cannot load the cluster: no -f file given")
	}
	v, err := manifest.NewValidator()
	if err != nil {
		return nil, nil, err
	}
	b, err := manifest.Load(ctx, v, r.files...)
	if err != nil {
		return nil, nil, err
	}
	topo, err := b.Layout()
	if err != nil {
		return nil, nil, err
	}
	return b, topo, nil
}

// resolveRunDir finds the run directory: --run-dir, else the state root
// and the cluster named by --cluster or the -f files, else the only
// cluster running under the state root.
func (r *clusterRef) resolveRunDir(ctx context.Context) (string, error) {
	if r.runDir != "" {
		return filepath.Abs(r.runDir)
	}
	root := defaultStateRoot()
	name := r.name
	if name == "" && len(r.files) > 0 {
		_, topo, err := r.loadCluster(ctx)
		if err != nil {
			return "", err
		}
		name = topo.Name
	}
	if name != "" {
		return filepath.Join(root, name), nil
	}
	dirs, _ := filepath.Glob(filepath.Join(root, "*", control.SocketName))
	var running []string
	for _, sock := range dirs {
		dir := filepath.Dir(sock)
		if _, err := control.Dial(dir).Status(ctx); err == nil {
			running = append(running, dir)
		}
	}
	switch len(running) {
	case 1:
		return running[0], nil
	case 0:
		return "", fmt.Errorf("cannot find a running cluster under %s: give -f, --cluster or --run-dir: %w", root, control.ErrNotRunning)
	default:
		return "", fmt.Errorf("cannot choose among %d running clusters %v: give -f, --cluster or --run-dir", len(running), running)
	}
}

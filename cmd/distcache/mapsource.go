package main

import (
	"context"
	"errors"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/distcache/distcache/dataplane/kubemap"
	"github.com/distcache/distcache/dataplane/mapwatch"
)

// mapSourceFlags choose where a command reads the partition map: a file
// (--map) or the operator's ConfigMap through the Kubernetes API
// (--map-configmap, with --kubeconfig or the in-cluster configuration).
type mapSourceFlags struct {
	file       string
	configMap  string
	kubeconfig string
}

// addFlags adds --map, --map-configmap and --kubeconfig, which cobra
// checks: the first two exclude each other, and one of them is required
// when required is set.
func (f *mapSourceFlags) addFlags(cmd *cobra.Command, mapHelp string, required bool) {
	f.addUncheckedFlags(cmd, mapHelp)
	cmd.MarkFlagsMutuallyExclusive("map", "map-configmap")
	if required {
		cmd.MarkFlagsOneRequired("map", "map-configmap")
	}
}

// addUncheckedFlags adds the flags without cobra's checks, for a command
// that reports a bad combination itself (check, whose exit statuses tell a
// configuration error from a failed check): it calls validate.
func (f *mapSourceFlags) addUncheckedFlags(cmd *cobra.Command, mapHelp string) {
	fs := cmd.Flags()
	fs.StringVar(&f.file, "map", "", mapHelp)
	fs.StringVar(&f.configMap, "map-configmap", "", "NAMESPACE/NAME of the partition map ConfigMap, read and watched through the Kubernetes API (instead of --map)")
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig for --map-configmap (default: in-cluster config, then $KUBECONFIG, then ~/.kube/config)")
}

// validate refuses both map sources at once.
func (f *mapSourceFlags) validate() error {
	if f.file != "" && f.configMap != "" {
		return errors.New("cannot read the partition map: --map and --map-configmap exclude each other")
	}
	return nil
}

// set says whether a map source was given.
func (f *mapSourceFlags) set() bool { return f.file != "" || f.configMap != "" }

// source is the chosen map source.
func (f *mapSourceFlags) source(log *slog.Logger) (mapwatch.Source, error) {
	if f.configMap == "" {
		if f.file == "" {
			return nil, errors.New("cannot read the partition map: neither --map nor --map-configmap given")
		}
		return mapwatch.File(f.file), nil
	}
	ns, name, err := kubemap.ParseRef(f.configMap)
	if err != nil {
		return nil, err
	}
	cfg, err := restConfig(f.kubeconfig)
	if err != nil {
		return nil, err
	}
	return kubemap.New(cfg, ns, name, kubemap.WithLogger(log))
}

// open reads the map once and returns its watcher.
func (f *mapSourceFlags) open(ctx context.Context, log *slog.Logger) (*mapwatch.Watcher, error) {
	src, err := f.source(log)
	if err != nil {
		return nil, err
	}
	return mapwatch.Open(ctx, src, log)
}

package main

import (
	"fmt"
	"os/signal"
	"syscall"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/distcache/distcache/internal/buildinfo"
	"github.com/distcache/distcache/operator/manager"
)

func newOperatorCommand() *cobra.Command {
	var (
		o          manager.Options
		kubeconfig string
		logLevel   string
	)
	cmd := &cobra.Command{
		Use:   "operator",
		Short: "Run the Kubernetes operator: reconcile CacheClusters, CacheLayers and SwitchFabrics",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			so := serveOptions{logLevel: logLevel}
			log, err := so.logger()
			if err != nil {
				return err
			}
			cfg, err := restConfig(kubeconfig)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return manager.Run(ctx, cfg, o, logr.FromSlogHandler(log.Handler()))
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file (default: in-cluster config, then $KUBECONFIG, then ~/.kube/config)")
	f.StringVar(&o.MetricsAddr, "metrics-addr", ":8080", "address of /metrics (\"0\" disables it)")
	f.StringVar(&o.ProbeAddr, "health-probe-addr", ":8081", "address of /healthz and /readyz (\"0\" disables them)")
	f.BoolVar(&o.LeaderElection, "leader-elect", false, "elect a leader so that only one replica reconciles")
	f.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", "", "namespace of the leader election Lease (default: the pod's)")
	f.StringVar(&o.Namespace, "namespace", "", "only watch this namespace (default: all)")
	f.Uint64Var(&o.P4RuntimeElectionID, "p4runtime-election-id", 1, "the operator's P4Runtime election id with the switches of its SwitchFabrics (below 2^32): the high 32 bits of the low word of each replica's election ids, above a hash of the replica's name")
	f.StringVar(&o.Replica, "replica-name", "", "this replica's name, which its P4Runtime election ids are unique by (default: the host name, the pod's name in Kubernetes)")
	f.StringVar(&o.DataPlaneImage, "data-plane-image", buildinfo.Image,
		"distcache image of the data-plane pods of clusters whose spec.images.distcache is empty (the Helm chart passes the operator's own image)")
	f.StringVar(&logLevel, "log-level", "info", "debug, info, warn or error")
	return cmd
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		cfg, err := ctrl.GetConfig()
		if err != nil {
			return nil, fmt.Errorf("cannot find a Kubernetes API server: %w", err)
		}
		return cfg, nil
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("cannot load kubeconfig %s: %w", kubeconfig, err)
	}
	return cfg, nil
}

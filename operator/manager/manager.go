// Package manager assembles the operator: a controller-runtime manager with
// leader election, the Prometheus metrics endpoint (controller-runtime's and
// the distcache_operator_* series), health probes, and the CacheCluster,
// CacheLayer and SwitchFabric controllers.
package manager

import (
	"context"
	"fmt"
	"os"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/distcache/distcache/operator/apischeme"
	"github.com/distcache/distcache/operator/controller/cachecluster"
	"github.com/distcache/distcache/operator/controller/cachelayer"
	"github.com/distcache/distcache/operator/controller/switchfabric"
	"github.com/distcache/distcache/operator/podstatus"
)

// The Lease of leader election, in the operator's own namespace (the chart
// renders this Role there): acquire, read, renew; and the core/v1 Events on
// the Lease that say which replica leads ("became leader", "stopped
// leading").
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;create;update,namespace=distcache-system
// +kubebuilder:rbac:groups="",resources=events,verbs=create,namespace=distcache-system

// LeaderElectionID names the Lease the operator replicas compete for.
const LeaderElectionID = "distcache-operator.distcache.io"

// Options configure the operator.
type Options struct {
	// MetricsAddr serves /metrics ("0" disables it).
	MetricsAddr string
	// ProbeAddr serves /healthz and /readyz ("0" disables it).
	ProbeAddr string
	// LeaderElection makes only one replica reconcile at a time.
	LeaderElection bool
	// LeaderElectionNamespace holds the Lease (default: the in-cluster
	// namespace).
	LeaderElectionNamespace string
	// Namespace restricts the operator to one namespace (all when empty).
	Namespace string
	// SkipNameValidation allows a second manager in one process (tests).
	SkipNameValidation bool
	// PodMetricsPort is where data-plane pods answer GET /status (default
	// the pods' metrics port, cachecluster.MetricsPort).
	PodMetricsPort int
	// DataPlaneImage is the distcache image of clusters whose spec names
	// none (default: the image this tree releases).
	DataPlaneImage string
	// P4RuntimeElectionID is the operator's election id with the switches
	// of its SwitchFabrics (1 when 0, below 2^32): with Replica it makes
	// the low 64 bits of each replica's election ids
	// (switchfabric.ElectionIDOf).
	P4RuntimeElectionID uint64
	// Replica names this replica (default: the host name, which is the
	// pod's name in Kubernetes).
	Replica string
}

// cacheOptions limit what the operator keeps in memory: the objects of the
// watched namespace (all when empty), and of the kinds it creates or whose
// pods it watches, only those labelled with a cluster — not every pod,
// Service, ConfigMap, ServiceAccount or Role of the cluster.
func cacheOptions(namespace string) (cache.Options, error) {
	labelled, err := labels.Parse(cachecluster.LabelCluster) // the label exists
	if err != nil {
		return cache.Options{}, fmt.Errorf("cannot select the operator's objects: %w", err)
	}
	o := cache.Options{ByObject: map[client.Object]cache.ByObject{}}
	for _, obj := range []client.Object{&corev1.Pod{}, &corev1.Service{}, &corev1.ConfigMap{}, &appsv1.StatefulSet{}, &appsv1.Deployment{}, &appsv1.DaemonSet{},
		&networkingv1.NetworkPolicy{}, &policyv1.PodDisruptionBudget{}, &corev1.ServiceAccount{}, &rbacv1.Role{}, &rbacv1.RoleBinding{}} {
		o.ByObject[obj] = cache.ByObject{Label: labelled}
	}
	if namespace != "" {
		o.DefaultNamespaces = map[string]cache.Config{namespace: {}}
	}
	return o, nil
}

// Run runs the operator until ctx ends.
func Run(ctx context.Context, cfg *rest.Config, o Options, log logr.Logger) error {
	ctrl.SetLogger(log)
	if o.P4RuntimeElectionID >= 1<<32 {
		return fmt.Errorf("cannot run the operator: P4Runtime election id %d is not below 2^32", o.P4RuntimeElectionID)
	}
	if o.Replica == "" {
		host, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("cannot name this replica: %w", err)
		}
		o.Replica = host
	}
	scheme, err := apischeme.New()
	if err != nil {
		return err
	}
	mo := ctrl.Options{
		Scheme:                        scheme,
		Metrics:                       metricsserver.Options{BindAddress: o.MetricsAddr},
		HealthProbeBindAddress:        o.ProbeAddr,
		LeaderElection:                o.LeaderElection,
		LeaderElectionID:              LeaderElectionID,
		LeaderElectionNamespace:       o.LeaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true,
	}
	mo.Controller.SkipNameValidation = &o.SkipNameValidation
	if mo.Cache, err = cacheOptions(o.Namespace); err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, mo)
	if err != nil {
		return fmt.Errorf("cannot create the operator's manager: %w", err)
	}
	metrics, err := cachecluster.NewMetrics(crmetrics.Registry)
	if err != nil {
		return err
	}
	port := o.PodMetricsPort
	if port == 0 {
		port = cachecluster.MetricsPort
	}
	cc := &cachecluster.Reconciler{
		Client: mgr.GetClient(), Scheme: mgr.GetScheme(),
		Recorder: mgr.GetEventRecorder("distcache-operator"), Metrics: metrics,
		Applied: &podstatus.Prober{Port: port}, HotKeys: podstatus.NewHotKeys(port),
		Curves: podstatus.NewCurves(port), DataPlaneImage: o.DataPlaneImage,
	}
	if o.Namespace == "" { // Nodes are cluster-scoped: an operator confined to a namespace cannot read them
		cc.Nodes = nodeZones{mgr.GetClient()}
	}
	for _, setup := range []func(ctrl.Manager) error{
		cc.SetupWithManager,
		(&cachelayer.Reconciler{Client: mgr.GetClient()}).SetupWithManager,
		(&switchfabric.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Config: mgr.GetConfig(),
			Recorder: mgr.GetEventRecorder("distcache-operator"), ElectionID: o.P4RuntimeElectionID, Replica: o.Replica, Metrics: crmetrics.Registry}).SetupWithManager,
	} {
		if err := setup(mgr); err != nil {
			return err
		}
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("cannot add health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return fmt.Errorf("cannot add readiness check: %w", err)
	}
	log.Info("starting operator", "leaderElection", o.LeaderElection, "namespace", o.Namespace, "replica", o.Replica)
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("cannot run the operator: %w", err)
	}
	return nil
}

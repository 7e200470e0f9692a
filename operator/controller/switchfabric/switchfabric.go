// Package switchfabric reconciles SwitchFabrics: it programs the switches
// of a fabric that a CacheCluster's switch-backed layer uses, and the
// fabric's client leaves (clientleaves.go), with the stratum driver, and
// reports each switch's session in the status.
//
// In the DistCache design the upper cache layers are switches (§4); here a
// switch is a member of the partition map like a cache node. Every
// replica of the operator runs a fleet (package fabric/fleet) per bound
// fabric — the fleet controller runs without leader election — and so
// holds a P4Runtime session with every switch: per switch one replica is
// primary and the others wait as backups. The primary pushes the pipeline
// to a switch that does not run it (which empties it, as the fencing
// rules need after a restart), or takes over one that does with its
// cache; it installs the member's addresses and the shims' routes from
// the cluster's partition map and renews the switch's serving lease on
// every read of the map's ConfigMap, as a cache node renews its own
// (docs/dataplane.md, Fencing). Each replica reads the map itself,
// through the API. Client leaves cache nothing and hold no lease: the
// leader's fleet alone programs them.
//
// Mastership follows the operator's leader: the leader claims each switch
// with an election id above every other replica's, and when a primary's
// session ends (its replica stopped) the backups claim the switch at once
// and one of them takes it over before the lease runs out; the next
// leader claims it in turn. A switch's copies stay coherent across the
// takeover because the shims invalidate it as long as their maps make it
// an owner, whoever controls it; the new primary applies the map against
// the version the switch applied last and releases every key when a
// version went by unapplied (package fabric/cacheswitch, Resume).
//
// What a session pushes is the fabric's pipeline: the project's P4Info
// and no device config, or the compiled program of spec.pipelineSource (a
// ConfigMap, a Secret or an OCI artefact), whose P4Info is checked against
// the pipeline's before anything is pushed (P4InfoMismatch). A new build
// of the same P4Info reaches the running sessions (RECONCILE_AND_COMMIT),
// which keeps the switches' cached keys; a source that turns bad is
// reported while the switches keep the build they run.
//
// The status controller runs on the leader alone and reports its own
// replica's sessions; it also holds a deleted fabric by its finalizer
// until no cluster's map has its switches. The CacheCluster controller
// fails a switch over from this status (switchStatuses[].programmed) as
// it does a pod that is not Ready.
package switchfabric

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/operator/controller/cachecluster"
	"github.com/distcache/distcache/operator/enqueue"
)

// +kubebuilder:rbac:groups=distcache.io,resources=switchfabrics,verbs=list;watch;update
// +kubebuilder:rbac:groups=distcache.io,resources=switchfabrics/status,verbs=patch
// +kubebuilder:rbac:groups=distcache.io,resources=cacheclusters;cachelayers,verbs=list;watch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch
// (A pipelineSource's Secret and image pull Secret are read with the
// permission of package operator/secretaccess.)

// Reconciler reconciles SwitchFabrics.
type Reconciler struct {
	client.Client
	// APIReader reads the fabric's TLS Secret without a cache (a cache
	// would watch every Secret of the cluster).
	APIReader client.Reader
	// Config is the API server's: a fleet reads its cluster's partition
	// map through it.
	Config *rest.Config
	// Recorder receives the switches' events; nil records none.
	Recorder cachecluster.EventRecorder
	// ElectionID is the operator's P4Runtime election id (1 when 0); with
	// Replica it makes the low 64 bits of this replica's election ids
	// (ElectionIDOf).
	ElectionID uint64
	// Replica names this replica of the operator (its pod's name): its
	// election ids differ from the other replicas'.
	Replica string
	// Metrics receives each running fleet's distcache_fabric_* series,
	// labelled namespace, cluster (the bound CacheCluster) and switchfabric;
	// nil exports none.
	Metrics prometheus.Registerer
	// ImageRecheck is how often the tag of a pipelineSource image is
	// resolved again (DefaultImageRecheck when 0).
	ImageRecheck time.Duration

	fleets        fleets
	changed       chan event.GenericEvent // a switch's session changed: the status controller
	sourceChanged chan event.GenericEvent // a pipelineSource ConfigMap changed: the fleet controller
	clientset     kubernetes.Interface    // watches the pipelineSource ConfigMaps
	configMaps    configMapWatches
	images        images
}

// state is one reconcile's view of a fabric, filled by the phases.
type state struct {
	f       *v1alpha1.SwitchFabric
	binding *binding
	run     *running
	blocked *metav1.Condition // why the fabric's switches are not programmed
	// pipelineIssue is why the build the fleet runs is not the one
	// spec.pipelineSource gives now (the switches serve on).
	pipelineIssue *metav1.Condition
}

// block stops the phases on what only a change of the objects can solve:
// the fleet stops and the status says why.
func (s *state) block(reason, msg string) (ctrl.Result, error) {
	s.blocked = &metav1.Condition{Reason: reason, Message: msg}
	return ctrl.Result{}, nil
}

// Finalizer holds a deleted SwitchFabric until no cluster's partition
// map holds its switches: the CacheCluster controller fences them, then
// removes them from the map, while the fleets keep programming them.
const Finalizer = "distcache.io/switches-left-map"

// Reconcile fetches the fabric, handles the finalizer, runs the phases and
// patches its status in a deferred call, from this replica's fleet (the
// fleet controller starts and stops it: reconcileFleet).
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, retErr error) {
	f := &v1alpha1.SwitchFabric{}
	if err := r.Get(ctx, req.NamespacedName, f); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !f.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, f)
	}
	if controllerutil.AddFinalizer(f, Finalizer) {
		if err := r.Update(ctx, f); err != nil {
			return ctrl.Result{}, fmt.Errorf("cannot add finalizer to SwitchFabric %s: %w", f.Name, err)
		}
	}
	return r.reconcile(ctx, f)
}

// reconcileDelete keeps a deleted fabric's status while a cluster's map
// holds its switches (fenced, then removed by the CacheCluster
// controller; the fleets program them until then), then lets it go.
func (r *Reconciler) reconcileDelete(ctx context.Context, f *v1alpha1.SwitchFabric) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(f, Finalizer) {
		return ctrl.Result{}, nil
	}
	probe := &state{f: f}
	if _, err := r.bind(ctx, probe); err != nil {
		return ctrl.Result{}, err
	}
	if probe.binding != nil && probe.blocked == nil {
		return r.reconcile(ctx, f) // still in a map: keep programming
	}
	controllerutil.RemoveFinalizer(f, Finalizer) // the fleet controllers stop the fleets

	if err := r.Update(ctx, f); err != nil {
		return ctrl.Result{}, fmt.Errorf("cannot remove finalizer from SwitchFabric %s: %w", f.Name, client.IgnoreNotFound(err))
	}
	return ctrl.Result{}, nil
}

// reconcile runs the phases and patches the status in a deferred call.
func (r *Reconciler) reconcile(ctx context.Context, f *v1alpha1.SwitchFabric) (res ctrl.Result, retErr error) {
	req := client.ObjectKeyFromObject(f)
	s := &state{f: f}
	base := f.DeepCopy()
	defer func() {
		r.setStatus(s, base.Status.SwitchStatuses)
		f.Status.ObservedGeneration = f.Generation
		if err := r.Status().Patch(ctx, f, client.MergeFrom(base)); err != nil {
			retErr = errors.Join(retErr, fmt.Errorf("cannot patch status of SwitchFabric %s: %w", f.Name, client.IgnoreNotFound(err)))
		}
	}()
	if res, err := r.resolve(ctx, s); err != nil || !res.IsZero() || s.blocked != nil {
		return res, err
	}
	if s.run = r.fleets.get(req, s.binding); s.run == nil {
		return ctrl.Result{RequeueAfter: fleetWait}, nil // starting: the status stays as it was
	}
	r.upgrade(ctx, s)
	return ctrl.Result{RequeueAfter: statusRefresh}, nil
}

// fleetWait is how soon a fabric whose fleet has not started on this
// replica yet is looked at again.
const fleetWait = time.Second

// resolve runs the phases that find what the fabric's fleet programs:
// the binding, or why nothing is (s.blocked).
func (r *Reconciler) resolve(ctx context.Context, s *state) (ctrl.Result, error) {
	for _, phase := range []func(context.Context, *state) (ctrl.Result, error){
		r.bind,
		r.checkDriver,
		r.loadTLS,
		r.loadPipeline,
	} {
		if res, err := phase(ctx, s); err != nil || !res.IsZero() || s.blocked != nil {
			return res, err
		}
	}
	return ctrl.Result{}, nil
}

// notify has fabric's status reconciled again: a switch's session
// changed.
func (r *Reconciler) notify(ns, name string) { send(r.changed, ns, name) }

// notifyAll has fabric reconciled again by both controllers: its
// pipelineSource's ConfigMap changed.
func (r *Reconciler) notifyAll(ns, name string) {
	send(r.changed, ns, name)
	send(r.sourceChanged, ns, name)
}

func send(ch chan event.GenericEvent, ns, name string) {
	f := &v1alpha1.SwitchFabric{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	select {
	case ch <- event.GenericEvent{Object: f}:
	default: // full: the periodic refresh catches up (statusRefresh)
	}
}

// SetupWithManager registers the reconcilers. The fleet controller runs
// on every replica, without leader election: it starts, restarts and
// stops this replica's fleets when a fabric, or the spec of a cluster or
// a layer of its namespace, changes (any may bind or unbind it), and when
// the ConfigMap of a fabric's pipelineSource changes. The status
// controller runs on the leader, on the same changes and when a switch's
// session changes; the leader's fleets claim their switches. The fleets
// stop with the manager.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.changed, r.sourceChanged = make(chan event.GenericEvent, 256), make(chan event.GenericEvent, 256)
	cs, err := kubernetes.NewForConfig(mgr.GetConfig())
	if err != nil {
		return fmt.Errorf("cannot set up the SwitchFabric controller's ConfigMap watches: %w", err)
	}
	r.clientset = cs
	allFabrics := enqueue.AllInNamespace(r.Client, func() client.ObjectList { return &v1alpha1.SwitchFabricList{} })
	specs := builder.WithPredicates(predicate.GenerationChangedPredicate{}) // only their specs bind a fabric
	err = ctrl.NewControllerManagedBy(mgr).
		Named("switchfabric-fleet").
		For(&v1alpha1.SwitchFabric{}, specs).
		Watches(&v1alpha1.CacheCluster{}, allFabrics, specs).
		Watches(&v1alpha1.CacheLayer{}, allFabrics, specs).
		WatchesRawSource(source.Channel(r.sourceChanged, &handler.EnqueueRequestForObject{})).
		WithOptions(controller.Options{NeedLeaderElection: ptr.To(false)}).
		Complete(reconcile.Func(r.reconcileFleet))
	if err != nil {
		return fmt.Errorf("cannot set up the SwitchFabric fleet controller: %w", err)
	}
	err = ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.SwitchFabric{}).
		Watches(&v1alpha1.CacheCluster{}, allFabrics, specs).
		Watches(&v1alpha1.CacheLayer{}, allFabrics, specs).
		WatchesRawSource(source.Channel(r.changed, &handler.EnqueueRequestForObject{})).
		Complete(r)
	if err != nil {
		return fmt.Errorf("cannot set up the SwitchFabric controller: %w", err)
	}
	if err := mgr.Add(fleetsStopper{&r.fleets}); err != nil {
		return fmt.Errorf("cannot set up the SwitchFabric controller's fleets: %w", err)
	}
	// Not a leader election runnable: it starts once this replica leads.
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		r.fleets.lead()
		<-ctx.Done()
		return nil
	})); err != nil {
		return fmt.Errorf("cannot set up the SwitchFabric controller's leadership: %w", err)
	}
	return nil
}

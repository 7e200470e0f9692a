package cachecluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/failover"
	"github.com/distcache/distcache/layout"
	"github.com/distcache/distcache/operator/clusterresolve"
	"github.com/distcache/distcache/placement/partmap"
)

// EventRecorder records Kubernetes events; controller-runtime's recorder
// (events.k8s.io/v1) satisfies it.
type EventRecorder interface {
	Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any)
}

// Reconciler reconciles CacheClusters.
type Reconciler struct {
	client.Client
	Scheme   *runtime.Scheme
	Recorder EventRecorder
	// Now is the clock (time.Now when nil); tests move it.
	Now func() time.Time
	// Metrics receives the operator's counters; nil records nothing.
	Metrics *Metrics
	// Applied tells which pods' processes use a map version
	// (podstatus.Prober). Nil: not asked, and Ready does not wait for the
	// processes to install the published map (tests without a data plane).
	Applied MapApplication
	// HotKeys reads the data plane's hot-key reports, from which the
	// copies of hot keys are decided (spec.hotKeys.replication). Nil: no
	// copies are decided (tests without a data plane).
	HotKeys HotKeyReports
	// Curves reads the cache nodes' miss-ratio curves, from which the
	// cache budget is split among the layers (spec.cacheBudget). Nil: the
	// layers keep their nodes' own capacity.
	Curves CurveReports
	// DataPlaneImage is the distcache image of clusters whose spec names
	// none: the operator's own image (--data-plane-image), so that
	// upgrading the operator rolls the data plane onto the same release.
	// Empty: the image this tree releases.
	DataPlaneImage string
	// Nodes tells the zones of the nodes the members' pods run on, which
	// the map publishes with them (domains.go). Nil: no zones (an
	// operator confined to a namespace cannot read Nodes).
	Nodes NodeZones

	// readiness times members' readiness changes more finely than the API.
	readiness readinessClock
	// copiesHistory keeps the last rounds of each cluster's hot-key reports.
	copiesHistory reportHistory
}

// MapApplication tells which data-plane pods' processes use a map version.
type MapApplication interface {
	// Applied says, for each pod of cluster, whether its process uses at
	// least version.
	Applied(ctx context.Context, cluster string, pods []*corev1.Pod, version int64) map[string]bool
	// Forget drops what it knows of cluster's pods.
	Forget(cluster string)
}

// state is one reconcile's view of a cluster, filled by the phases.
type state struct {
	cc           *v1alpha1.CacheCluster
	now          time.Time
	topo         *layout.Cluster
	pods         map[string]*corev1.Pod          // the cluster's pods by name
	switches     map[string]failover.Observation // switch members' readiness, by member name
	obs          map[string]failover.Observation // members' readiness
	published    *partmap.Map                    // the map in the ConfigMap after this reconcile
	readyShims   map[string]*corev1.Pod          // each storage shard's Ready shim pod, by shard name (the storage phase's)
	readyPods    int32                           // the cluster's Ready pods
	mapApplied   int32                           // Ready pods whose process uses the published map; -1: not asked
	gateway      *gatewayObservation             // the gateway's workload; nil: not reached
	blocked      *metav1.Condition               // a Ready=False condition that stopped the phases
	hotKeys      *v1alpha1.HotKeyStatus          // the last decision of copies; nil: none decided
	sizing       *v1alpha1.CacheSizingStatus     // the last split of the cache budget; nil: none
	requeue      time.Duration                   // the earliest pending decision (failover, copies)
	sets         []*appsv1.StatefulSet           // the StatefulSets the storage and layer phases applied
	outdatedPods int32                           // pods of the sets on an older template (rollPods)
	leaving      []string                        // the layers whose fabric is leaving, described (leaving.go)
}

// Reconcile fetches the cluster, handles deletion and the finalizer, runs
// the phases in order and patches the status in a deferred call.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, retErr error) {
	cc := &v1alpha1.CacheCluster{}
	if err := r.Get(ctx, req.NamespacedName, cc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !cc.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, cc)
	}
	if controllerutil.AddFinalizer(cc, Finalizer) {
		if err := r.Update(ctx, cc); err != nil {
			return ctrl.Result{}, fmt.Errorf("cannot add finalizer to %s: %w", req, err)
		}
	}
	s := &state{cc: cc, now: r.now()}
	base, started := cc.DeepCopy(), time.Now()
	defer func() {
		if err := r.patchStatus(ctx, base, s, retErr); err != nil {
			retErr = errors.Join(retErr, err)
		}
		res, retErr = retryConflict(ctx, res, retErr)
		r.Metrics.reconciled(cc.Namespace, cc.Name, retErr)
		res.RequeueAfter = remaining(res.RequeueAfter, started)
	}()
	for _, phase := range []func(context.Context, *state) (ctrl.Result, error){
		r.resolveTopology,
		r.observePods,
		r.reconcileDataPlaneKey,
		r.reconcileDataPlaneRBAC,
		r.reconcileStorage,
		r.reconcileBackup,
		r.reconcileLayers,
		r.reconcileNetworkPolicy,
		r.reconcileGateway,
		r.reconcileDisruptionBudgets,
		r.pruneLayers,
		r.publishMap,
		r.observeMapApplied,
		r.rollPods,
	} {
		if res, err := phase(ctx, s); err != nil || !res.IsZero() || s.blocked != nil {
			return res, err
		}
	}
	if s.requeue > 0 {
		return ctrl.Result{RequeueAfter: s.requeue}, nil
	}
	return ctrl.Result{}, nil
}

// conflictRetry is how soon a reconcile that lost a write to a newer
// version of an object runs again.
const conflictRetry = 200 * time.Millisecond

// retryConflict turns an error that is only a write conflict (this
// reconcile read an object from the cache before a newer version reached
// it) into a prompt retry. Returned as an error, it would count in the
// controller's exponential backoff, and a burst of conflicts while pods
// start would delay the next reconcile by minutes.
func retryConflict(ctx context.Context, res ctrl.Result, err error) (ctrl.Result, error) {
	if err == nil || !onlyConflicts(err) {
		return res, err
	}
	log.FromContext(ctx).V(1).Info("write conflict, retrying", "error", err.Error(), "after", conflictRetry)
	if res.RequeueAfter <= 0 || res.RequeueAfter > conflictRetry {
		res.RequeueAfter = conflictRetry
	}
	return res, nil
}

// onlyConflicts says whether err, and each error joined in it, is a write
// conflict.
func onlyConflicts(err error) bool {
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range joined.Unwrap() {
			if !onlyConflicts(e) {
				return false
			}
		}
		return true
	}
	return apierrors.IsConflict(err)
}

// remaining is what is left of a requeue delay decided at started (the
// failover decisions count it from the reconcile's start): a reconcile
// that took a while does not delay a grace period's end by as much.
func remaining(after time.Duration, started time.Time) time.Duration {
	if after <= 0 {
		return after
	}
	return max(after-time.Since(started), time.Millisecond)
}

// block stops the phases on a problem only a change of the spec or of its
// layers can solve: the status reports it, and no retry is scheduled.
func (s *state) block(reason string, err error) (ctrl.Result, error) {
	s.blocked = &metav1.Condition{Reason: reason, Message: err.Error()}
	return ctrl.Result{}, nil
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// resolveTopology resolves the layers and the switch-backed layers'
// fabrics and lays out the cluster (package clusterresolve).
func (r *Reconciler) resolveTopology(ctx context.Context, s *state) (ctrl.Result, error) {
	c, err := clusterresolve.Resolve(ctx, r.Client, s.cc)
	if reason, ok := clusterresolve.Reason(err); ok {
		return s.block(reason, err) // the CacheLayer and SwitchFabric watches bring the cluster back
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	s.topo, s.switches = c.Cluster, switchObservations(c, s.now)
	return ctrl.Result{}, nil
}

// observePods lists the cluster's pods: their readiness drives failover and
// the status.
func (r *Reconciler) observePods(ctx context.Context, s *state) (ctrl.Result, error) {
	var pods corev1.PodList
	if err := r.List(ctx, &pods, client.InNamespace(s.cc.Namespace), client.MatchingLabels{LabelCluster: s.cc.Name}); err != nil {
		return ctrl.Result{}, fmt.Errorf("cannot list pods of %s: %w", s.cc.Name, err)
	}
	s.pods = make(map[string]*corev1.Pod, len(pods.Items))
	for i := range pods.Items {
		s.pods[pods.Items[i].Name] = &pods.Items[i]
	}
	return ctrl.Result{}, nil
}

// reconcileLayers creates or updates each software layer's StatefulSet and
// headless Service.
func (r *Reconciler) reconcileLayers(ctx context.Context, s *state) (ctrl.Result, error) {
	for _, l := range s.topo.SoftwareLayers() {
		svc := r.layerService(s, l)
		if err := r.apply(ctx, s.cc, svc, func() { svc.Spec = r.layerService(s, l).Spec }); err != nil {
			return ctrl.Result{}, err
		}
		sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: s.topo.LayerSetName(l.Name), Namespace: s.cc.Namespace}}
		if err := r.apply(ctx, s.cc, sts, func() { r.mutateLayerSet(s, l, sts) }); err != nil {
			return ctrl.Result{}, err
		}
		s.sets = append(s.sets, sts)
	}
	return ctrl.Result{}, nil
}

// apply creates obj or updates it with mutate, owned by cc.
func (r *Reconciler) apply(ctx context.Context, cc *v1alpha1.CacheCluster, obj client.Object, mutate func()) error {
	_, err := controllerutil.CreateOrUpdate(ctx, r.Client, obj, func() error {
		mutate()
		return controllerutil.SetControllerReference(cc, obj, r.Scheme)
	})
	if err != nil {
		return fmt.Errorf("cannot apply %T %s: %w", obj, obj.GetName(), err)
	}
	return nil
}

// publishMap computes the partition map from the topology and the published
// map, applies the failover decisions and writes it when it changed.
func (r *Reconciler) publishMap(ctx context.Context, s *state) (ctrl.Result, error) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: MapConfigMapName(s.cc.Name), Namespace: s.cc.Namespace}}
	err := r.Get(ctx, client.ObjectKeyFromObject(cm), cm)
	if client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, fmt.Errorf("cannot get ConfigMap %s: %w", cm.Name, err)
	}
	var prev *partmap.Map
	if data := cm.Data[MapKey]; data != "" {
		if prev, err = partmap.Decode([]byte(data)); err != nil {
			log.FromContext(ctx).Error(err, "published partition map unreadable; publishing a fresh one", "configmap", cm.Name)
			prev = nil
		}
	}
	recorded := recordedMembers(s.cc) // as the status last recorded them
	s.leaving = removeLeft(s, prev, recorded)
	shape := s.topo.Shape()
	shape.ReplayProtection = r.replayProtection(ctx, s, prev)
	next, err := shape.Map(prev, r.addresser(s, prev, r.domains(ctx, s, prev)))
	if err != nil {
		return s.block(v1alpha1.ReasonInvalidTopology, err)
	}
	policy := layout.FailoverPolicy(&s.cc.Spec, layout.APIMapDeliveryLag)
	s.obs = r.observations(s, next, recorded)
	next, changes, recheck := policy.Apply(next, s.obs, s.now)
	s.recheckWithin(recheck)
	if next, err = r.decideCopies(ctx, s, next); err != nil {
		return ctrl.Result{}, err
	}
	if next, err = r.decideSizing(ctx, s, next); errors.Is(err, errBudget) {
		return ctrl.Result{}, nil // blocked: the status says why
	} else if err != nil {
		return ctrl.Result{}, err
	}
	if next != prev {
		if err := r.writeMap(ctx, s.cc, cm, next); err != nil {
			return ctrl.Result{}, err
		}
		r.recordChanges(s.cc, next, changes, leavingLayers(s.topo))
		r.recordRemap(s.cc, cm, prev, next)
		r.recordReplayProtection(s.cc, prev, next)
	}
	s.published = next
	r.Metrics.published(s.cc.Namespace, s.cc.Name, next)
	return ctrl.Result{}, nil
}

func (r *Reconciler) writeMap(ctx context.Context, cc *v1alpha1.CacheCluster, cm *corev1.ConfigMap, m *partmap.Map) error {
	data, err := partmap.Encode(m)
	if err != nil {
		return fmt.Errorf("cannot encode partition map v%d: %w", m.Version, err)
	}
	return r.apply(ctx, cc, cm, func() {
		cm.Labels = labels(cc, "partition-map")
		cm.Data = map[string]string{MapKey: string(data)}
	})
}

// recordChanges emits an event and counts every remap.
func (r *Reconciler) recordChanges(cc *v1alpha1.CacheCluster, m *partmap.Map, changes []failover.Change, leaving map[string]bool) {
	for _, c := range changes {
		reason, kind := "MemberFailed", corev1.EventTypeWarning
		note := "member %s of layer %s not Ready for %s: marked failed, its keys remapped (partition map v%d)"
		switch {
		case c.To == partmap.Fenced && leaving[c.Layer]:
			reason = "MemberFenced"
			note = "member %s of layer %s fenced%.0s: its SwitchFabric is leaving; it serves no cached value and leaves the map once fenced long enough (partition map v%d)"
		case c.To == partmap.Fenced:
			reason = "MemberFenced"
			note = "member %s of layer %s not Ready for %s: fenced, it serves no cached value and readers leave it (partition map v%d)"
		case c.To == partmap.Active && c.From == partmap.Fenced:
			reason, kind = "MemberUnfenced", corev1.EventTypeNormal
			note = "member %s of layer %s Ready again after %s: serving again, its keys never moved (partition map v%d)"
		case c.To == partmap.Active:
			reason, kind = "MemberRestored", corev1.EventTypeNormal
			note = "member %s of layer %s Ready for %s: restored, its keys given back (partition map v%d)"
		}
		if r.Recorder != nil {
			// Related to the member's pod: events of several members in one
			// remap are each an event of their own, not a series of the
			// first (client-go aggregates events alike but for the note).
			pod := &corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: cc.Namespace, Name: c.Member}
			r.Recorder.Eventf(cc, pod, kind, reason, "Remap", note, c.Member, c.Layer, c.After.Round(time.Second), m.Version)
		}
		r.Metrics.remapped(cc.Namespace, cc.Name, string(c.To))
	}
}

// observations reads the readiness of every member of m: its pod's Ready condition
// and when it last changed; a member without a pod is not Ready since the
// time the status last recorded for it (or now).
func (r *Reconciler) observations(s *state, m *partmap.Map, recorded map[string]v1alpha1.MemberStatus) map[string]failover.Observation {
	obs := map[string]failover.Observation{}
	prefix := s.cc.Namespace + "/" + s.cc.Name + "/"
	for _, l := range m.Layers {
		for _, mb := range l.Members {
			if l.Switch {
				o, ok := s.switches[mb.Name]
				if !ok { // its fabric does not report it (yet)
					o = notSeen(recorded[mb.Name], s.now)
				}
				obs[mb.Name] = o
				continue
			}
			obs[mb.Name] = r.readiness.refine(prefix+mb.Name, observe(s.pods[mb.Name], recorded[mb.Name], s.now), s.now)
		}
	}
	departing(s, obs, recorded)
	return obs
}

// observe is one member's readiness observation.
func observe(pod *corev1.Pod, recorded v1alpha1.MemberStatus, now time.Time) failover.Observation {
	if live(pod) {
		o := failover.Observation{Since: pod.CreationTimestamp.Time}
		if c := readyCondition(pod); c != nil {
			o = failover.Observation{Ready: c.Status == corev1.ConditionTrue, Since: c.LastTransitionTime.Time}
		}
		// A new pod not Ready yet, of a member not Ready since before it
		// (its old pod deleted): the member's grace period goes on.
		if !o.Ready && !recorded.Ready && recorded.Since != nil && recorded.Since.Before(&metav1.Time{Time: o.Since}) {
			o.Since = recorded.Since.Time
		}
		return o
	}
	o := notSeen(recorded, now)
	o.Leaving = pod != nil // deleted: a drain, an eviction or a rollout
	return o
}

// notSeen is the observation of a member with nothing to observe (no pod,
// a switch its fabric does not report): not Ready since the time the
// status last recorded for it, or now.
func notSeen(recorded v1alpha1.MemberStatus, now time.Time) failover.Observation {
	if !recorded.Ready && recorded.Since != nil {
		return failover.Observation{Since: recorded.Since.Time}
	}
	return failover.Observation{Since: now}
}

// setCondition sets a condition for the cluster's current generation.
func setCondition(cc *v1alpha1.CacheCluster, t v1alpha1.ConditionType, ok bool, reason, msg string) {
	v1alpha1.SetCondition(&cc.Status.Conditions, cc.Generation, t, ok, reason, msg)
}

// appliedRecheck is how soon a cluster whose pods have not all installed
// the published map is looked at again.
const appliedRecheck = time.Second

// observeMapApplied counts the Ready pods whose process uses the published
// map version, and looks again soon while some do not.
func (r *Reconciler) observeMapApplied(ctx context.Context, s *state) (ctrl.Result, error) {
	var ready []*corev1.Pod
	for _, p := range s.pods {
		if podReady(p) {
			ready = append(ready, p)
		}
	}
	s.readyPods, s.mapApplied = int32(len(ready)), -1
	if r.Applied == nil {
		return ctrl.Result{}, nil
	}
	s.mapApplied = 0
	for _, ok := range r.Applied.Applied(ctx, s.cc.Namespace+"/"+s.cc.Name, ready, s.published.Version) {
		if ok {
			s.mapApplied++
		}
	}
	if s.mapApplied < s.readyPods {
		s.recheckWithin(appliedRecheck)
	}
	return ctrl.Result{}, nil
}

package cachecluster

import (
	"context"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/placement/partmap"
)

// patchStatus fills the status from what the phases found and patches it
// against base, the cluster as fetched.
func (r *Reconciler) patchStatus(ctx context.Context, base *v1alpha1.CacheCluster, s *state, reconcileErr error) error {
	cc := s.cc
	cc.Status.ObservedGeneration = cc.Generation
	cc.Status.MapConfigMap = MapConfigMapName(cc.Name)
	cc.Status.Persistence = persistence(cc)
	switch {
	case s.blocked != nil:
		setCondition(cc, v1alpha1.ConditionReady, false, s.blocked.Reason, s.blocked.Message)
		setCondition(cc, v1alpha1.ConditionProgressing, false, s.blocked.Reason, "waiting for the spec or its layers to change")
		setCondition(cc, v1alpha1.ConditionDegraded, true, s.blocked.Reason, s.blocked.Message)
	case reconcileErr != nil:
		setCondition(cc, v1alpha1.ConditionProgressing, true, v1alpha1.ReasonCreating, "retrying: "+reconcileErr.Error())
	case s.published != nil:
		r.memberStatus(s, base.Status.Conditions)
		setLeavingCondition(cc, s.leaving)
	}
	setGatewayStatus(cc, s.gateway)
	r.recordConditionChanges(base.Status.Conditions, cc)
	if err := r.Status().Patch(ctx, cc, client.MergeFrom(base)); err != nil {
		return fmt.Errorf("cannot patch status of %s: %w", cc.Name, client.IgnoreNotFound(err))
	}
	return nil
}

// memberStatus reports every member of the published map and sets the
// conditions from their states; before are the conditions as fetched.
func (r *Reconciler) memberStatus(s *state, before []metav1.Condition) {
	cc, m := s.cc, s.published
	cc.Status.MapVersion = m.Version
	cc.Status.LayerCount = int32(len(s.topo.Layers))
	cc.Status.ReadyShards = int32(len(s.readyShims))
	cc.Status.ReadyPods = s.readyPods
	cc.Status.MapApplied = max(s.mapApplied, 0)
	cc.Status.HotKeys = s.hotKeys
	cc.Status.CacheSizing = s.sizing
	cc.Status.DataPlane = replayStatus(m)
	cc.Status.Layers = cc.Status.Layers[:0]
	var members, ready, failed, fenced, recovering int32
	for _, l := range m.Layers {
		ls := v1alpha1.LayerStatus{Name: l.Name, HashSeed: strconv.FormatUint(l.Seed, 10)}
		for _, mb := range l.Members {
			o := s.obs[mb.Name]
			ms := v1alpha1.MemberStatus{Name: mb.Name, ID: int64(mb.ID), State: v1alpha1.MemberState(mb.State), Ready: o.Ready}
			if !o.Since.IsZero() {
				ms.Since = &metav1.Time{Time: o.Since}
			}
			members++
			if o.Ready {
				ls.ReadyMembers++
				ready++
			}
			if mb.State == partmap.Fenced {
				fenced++
			}
			if mb.State == partmap.Failed {
				ls.FailedMembers++
				failed++
				if o.Ready {
					recovering++
				}
			}
			ls.Members = append(ls.Members, ms)
		}
		cc.Status.Layers = append(cc.Status.Layers, ls)
	}
	cc.Status.Members, cc.Status.ReadyMembers = members, ready
	c := counts{members: members, ready: ready, failed: failed, fenced: fenced, recovering: recovering,
		shards: int32(s.topo.Racks() * s.topo.ShardsPerRack()), shardsReady: int32(len(s.readyShims)),
		readyPods: s.readyPods, mapApplied: s.mapApplied, outdated: s.outdatedPods}
	setReady(cc, m.Version, c, before)
	setProgressing(cc, c)
	setDegraded(cc, c, before)
}

// counts is what the conditions are computed from.
type counts struct {
	members, ready, failed, fenced, recovering int32
	shards, shardsReady                        int32
	readyPods, mapApplied                      int32 // mapApplied -1: not asked
	outdated                                   int32 // pods on an older template of their set
}

// shardsMissing is the number of shards known not to be Ready.
func (c counts) shardsMissing() int32 {
	return c.shards - c.shardsReady
}

func (c counts) shardsText() string {
	return fmt.Sprintf("%d of %d storage shards ready", c.shardsReady, c.shards)
}

// mapPending is the number of Ready pods known not to use the published map.
func (c counts) mapPending() int32 {
	if c.mapApplied < 0 {
		return 0
	}
	return c.readyPods - c.mapApplied
}

func (c counts) appliedText() string {
	if c.mapApplied < 0 {
		return ""
	}
	return fmt.Sprintf(", used by %d of %d Ready pods", c.mapApplied, c.readyPods)
}

// setReady sets Ready (v1alpha1.ConditionReady); before are the
// conditions as fetched. A cluster that has not served yet becomes Ready
// once every member and shard is Ready and every Ready pod uses the
// published map, which is what `kubectl wait` after a create waits for.
// A cluster that serves (Ready in before, or not Ready only for a lost
// shard) stays Ready while every shard is: every key then has its storage
// behind it, and its cached copies are served or remapped. Members not
// Ready, fenced or failed, and pods not yet on a new map, are then
// Degraded's and Progressing's to report, and Ready's reason is Serving.
func setReady(cc *v1alpha1.CacheCluster, version int64, c counts, before []metav1.Condition) {
	msg := fmt.Sprintf("partition map v%d published%s: %d of %d members ready, %s", version, c.appliedText(), c.ready, c.members, c.shardsText())
	served := meta.IsStatusConditionTrue(before, string(v1alpha1.ConditionReady)) || notReadyBy(before, v1alpha1.ReasonShardsNotReady)
	whole := c.ready == c.members && c.shardsMissing() == 0 && c.mapPending() == 0 && c.failed == 0 && c.fenced == 0
	switch {
	case whole:
		setCondition(cc, v1alpha1.ConditionReady, true, v1alpha1.ReasonReconciled, msg)
	case served && c.shardsMissing() > 0:
		setCondition(cc, v1alpha1.ConditionReady, false, v1alpha1.ReasonShardsNotReady, msg)
	case served:
		setCondition(cc, v1alpha1.ConditionReady, true, v1alpha1.ReasonServing, msg+c.remapText())
	case c.ready < c.members || c.shardsMissing() > 0:
		setCondition(cc, v1alpha1.ConditionReady, false, v1alpha1.ReasonPodsNotReady, msg)
	case c.mapPending() > 0:
		setCondition(cc, v1alpha1.ConditionReady, false, v1alpha1.ReasonMapNotApplied, msg)
	default: // every pod Ready on the map, members failed or fenced before they first served
		setCondition(cc, v1alpha1.ConditionReady, true, v1alpha1.ReasonServing, msg+c.remapText())
	}
}

// remapText says which members are out of the map's service.
func (c counts) remapText() string {
	if c.fenced == 0 && c.failed == 0 {
		return ""
	}
	return fmt.Sprintf("; %d fenced and %d failed members remapped", c.fenced, c.failed)
}

// notReadyBy reports whether conditions say not Ready for reason.
func notReadyBy(conditions []metav1.Condition, reason string) bool {
	r := meta.FindStatusCondition(conditions, string(v1alpha1.ConditionReady))
	return r != nil && r.Status == metav1.ConditionFalse && r.Reason == reason
}

// setProgressing sets Progressing: True while pods start or members recover.
func setProgressing(cc *v1alpha1.CacheCluster, c counts) {
	switch {
	case c.recovering > 0:
		setCondition(cc, v1alpha1.ConditionProgressing, true, v1alpha1.ReasonMembersRecovering,
			fmt.Sprintf("%d failed members are Ready again and wait out the hold-down", c.recovering))
	case c.outdated > 0:
		setCondition(cc, v1alpha1.ConditionProgressing, true, v1alpha1.ReasonRollingOut,
			fmt.Sprintf("%d pods to roll onto their StatefulSets' templates, one at a time (in place when only images changed)", c.outdated))
	case c.ready < c.members || c.shardsMissing() > 0:
		setCondition(cc, v1alpha1.ConditionProgressing, true, v1alpha1.ReasonPodsNotReady,
			fmt.Sprintf("%d of %d members not Ready, %s", c.members-c.ready, c.members, c.shardsText()))
	case c.mapPending() > 0:
		setCondition(cc, v1alpha1.ConditionProgressing, true, v1alpha1.ReasonMapNotApplied,
			fmt.Sprintf("the published partition map is on its way: %d of %d Ready pods use it", c.mapApplied, c.readyPods))
	default:
		setCondition(cc, v1alpha1.ConditionProgressing, false, v1alpha1.ReasonReconciled, "every member and shard is Ready")
	}
}

// setDegraded sets Degraded: True while part of the cluster does not serve:
// failed members, a shard that was Ready and is not (the cluster was Ready,
// or Degraded for it, in before, the conditions as fetched; a cluster still
// starting is Progressing, not Degraded).
func setDegraded(cc *v1alpha1.CacheCluster, c counts, before []metav1.Condition) {
	shardsLost := c.shardsMissing() > 0 &&
		(meta.IsStatusConditionTrue(before, string(v1alpha1.ConditionReady)) || degradedBy(before, v1alpha1.ReasonShardsNotReady))
	switch {
	case c.failed > 0:
		setCondition(cc, v1alpha1.ConditionDegraded, true, v1alpha1.ReasonMembersFailed,
			fmt.Sprintf("%d members marked failed; their keys are served by the survivors%s", c.failed, fencedText(c.fenced)))
	case c.fenced > 0:
		setCondition(cc, v1alpha1.ConditionDegraded, true, v1alpha1.ReasonMembersFenced,
			fmt.Sprintf("%d members fenced: they serve no cached value, and reads of their keys go to the keys' other cache nodes or to storage", c.fenced))
	case shardsLost:
		setCondition(cc, v1alpha1.ConditionDegraded, true, v1alpha1.ReasonShardsNotReady,
			fmt.Sprintf("%d of %d storage shards not Ready: writes and misses of their keys fail", c.shardsMissing(), c.shards))
	default:
		setCondition(cc, v1alpha1.ConditionDegraded, false, v1alpha1.ReasonReconciled, "no member is fenced or failed and no shard lost")
	}
}

func fencedText(n int32) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("; %d more fenced", n)
}

// degradedBy reports whether conditions say Degraded for reason.
func degradedBy(conditions []metav1.Condition, reason string) bool {
	d := meta.FindStatusCondition(conditions, string(v1alpha1.ConditionDegraded))
	return d != nil && d.Status == metav1.ConditionTrue && d.Reason == reason
}

// Events of the conditions' changes (recordConditionChanges).
const (
	EventClusterReady     = "ClusterReady"
	EventClusterNotReady  = "ClusterNotReady"
	EventClusterDegraded  = "ClusterDegraded"
	EventClusterRecovered = "ClusterRecovered"
)

// recordConditionChanges emits an event when Ready or Degraded changes
// status or reason against before, the conditions as fetched: Ready
// (ClusterReady), not Ready any more or for another reason
// (ClusterNotReady, with the reason and message), Degraded
// (ClusterDegraded) and no longer Degraded (ClusterRecovered). A new
// cluster's first conditions make an event only when they are news: Ready,
// Degraded, or not Ready for a reason other than its pods starting.
func (r *Reconciler) recordConditionChanges(before []metav1.Condition, cc *v1alpha1.CacheCluster) {
	if r.Recorder == nil {
		return
	}
	for _, t := range []v1alpha1.ConditionType{v1alpha1.ConditionReady, v1alpha1.ConditionDegraded} {
		cur := meta.FindStatusCondition(cc.Status.Conditions, string(t))
		old := meta.FindStatusCondition(before, string(t))
		switch {
		case cur == nil:
			continue
		case old != nil && old.Status == cur.Status && old.Reason == cur.Reason:
			continue
		case old != nil && old.Status == cur.Status && t == v1alpha1.ConditionReady && cur.Status == metav1.ConditionTrue:
			continue // Serving and Reconciled: Degraded's events say what changed
		case old == nil && !firstIsNews(t, cur):
			continue
		}
		isTrue := cur.Status == metav1.ConditionTrue
		switch {
		case t == v1alpha1.ConditionReady && isTrue:
			r.Recorder.Eventf(cc, nil, corev1.EventTypeNormal, EventClusterReady, "Status", "%s", cur.Message)
		case t == v1alpha1.ConditionReady:
			r.Recorder.Eventf(cc, nil, corev1.EventTypeWarning, EventClusterNotReady, "Status", "%s: %s", cur.Reason, cur.Message)
		case isTrue:
			r.Recorder.Eventf(cc, nil, corev1.EventTypeWarning, EventClusterDegraded, "Status", "%s: %s", cur.Reason, cur.Message)
		default:
			r.Recorder.Eventf(cc, nil, corev1.EventTypeNormal, EventClusterRecovered, "Status", "%s", cur.Message)
		}
	}
}

// firstIsNews reports whether a new cluster's first condition c of type t
// deserves an event.
func firstIsNews(t v1alpha1.ConditionType, c *metav1.Condition) bool {
	if c.Status == metav1.ConditionTrue {
		return true
	}
	return t == v1alpha1.ConditionReady && c.Reason != v1alpha1.ReasonPodsNotReady && c.Reason != v1alpha1.ReasonCreating
}

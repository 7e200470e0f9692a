package cachecluster

import (
	"context"
	"fmt"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/distcache/distcache/operator/api/v1alpha1"
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
		r.memberStatus(s)
	}
	if err := r.Status().Patch(ctx, cc, client.MergeFrom(base)); err != nil {
		return fmt.Errorf("cannot patch status of %s: %w", cc.Name, client.IgnoreNotFound(err))
	}
	return nil
}

// memberStatus reports every member of the published map and sets the
// conditions from their states.
func (r *Reconciler) memberStatus(s *state) {
	cc, m := s.cc, s.published
	cc.Status.MapVersion = m.Version
	cc.Status.LayerCount = int32(len(s.topo.Layers))
	cc.Status.ReadyShards = s.shardsReady
	cc.Status.Layers = cc.Status.Layers[:0]
	var members, ready, failed, recovering int32
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
	msg := fmt.Sprintf("partition map v%d published: %d of %d members ready", m.Version, ready, members)
	setCondition(cc, v1alpha1.ConditionReady, true, v1alpha1.ReasonReconciled, msg)
	switch {
	case recovering > 0:
		setCondition(cc, v1alpha1.ConditionProgressing, true, v1alpha1.ReasonMembersRecovering,
			fmt.Sprintf("%d failed members are Ready again and wait out the hold-down", recovering))
	case ready < members:
		setCondition(cc, v1alpha1.ConditionProgressing, true, v1alpha1.ReasonPodsNotReady,
			fmt.Sprintf("%d of %d members not Ready", members-ready, members))
	default:
		setCondition(cc, v1alpha1.ConditionProgressing, false, v1alpha1.ReasonReconciled, "every member is Ready")
	}
	switch switchLayers := len(s.topo.Layers) - len(s.topo.SoftwareLayers()); {
	case failed > 0:
		setCondition(cc, v1alpha1.ConditionDegraded, true, v1alpha1.ReasonMembersFailed,
			fmt.Sprintf("%d members marked failed; their keys are served by the survivors", failed))
	case switchLayers > 0:
		setCondition(cc, v1alpha1.ConditionDegraded, true, v1alpha1.ReasonSwitchLayersUnsupported,
			fmt.Sprintf("%d switch-backed layers are not programmed by this operator version; the map holds the software layers", switchLayers))
	default:
		setCondition(cc, v1alpha1.ConditionDegraded, false, v1alpha1.ReasonReconciled, "no member is failed")
	}
}

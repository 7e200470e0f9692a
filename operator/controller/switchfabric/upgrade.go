package switchfabric

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/distcache/distcache/api/v1alpha1"
)

// EventPipelineUpgraded: a new build of the same P4Info was handed to a
// running fleet; its switches in session take it with
// RECONCILE_AND_COMMIT and keep their cached keys.
const EventPipelineUpgraded = "PipelineUpgraded"

// upgrade hands the running fleet the build just read when it is a new
// one. A build of the same P4Info reaches every switch in session with
// RECONCILE_AND_COMMIT, which keeps its entries and cached keys, and the
// others at their next session. A build of another P4Info is refused
// (P4InfoMismatch): nothing of it is pushed, and the switches keep the
// build they run; a fleet that starts over pushes it (VERIFY_AND_COMMIT,
// the switches start empty). Switches that did not take the fleet's
// build are tried again at every reconcile.
//
// Every replica's fleet controller upgrades its fleet, so that a backup
// that takes a switch over pushes the newest build; the leader's records
// the event, and its status controller the condition.
func (r *Reconciler) upgrade(ctx context.Context, s *state) {
	run, want := s.run, s.binding.build
	run.upgrade.Lock()
	defer run.upgrade.Unlock()
	if have := run.build; want.p.Cookie != have.p.Cookie {
		if !want.p.SameP4Info(have.p) {
			s.pipelineIssue = &metav1.Condition{Reason: v1alpha1.ReasonP4InfoMismatch, Message: fmt.Sprintf(
				"the P4Info of %s (build %s) is not the one the switches run (%s, build %s): a new P4Info is not pushed into running sessions, "+
					"so nothing is pushed; a fleet that starts over (its switches, cluster or election id change, or the operator restarts) pushes it, "+
					"and its switches start empty", want.source, want.p.CookieHex(), have.source, have.p.CookieHex())}
		} else {
			b := *want
			b.since = time.Now()
			run.build = &b
			if r.Recorder != nil && r.fleets.leading() {
				r.Recorder.Eventf(s.f, nil, corev1.EventTypeNormal, EventPipelineUpgraded, "Upgrade",
					"build %s of %s (%d bytes of device config) handed to the switches: in session by RECONCILE_AND_COMMIT, keeping their cached keys; it replaces build %s",
					b.p.CookieHex(), b.source, len(b.p.DeviceConfig), have.p.CookieHex())
			}
		}
	}
	uctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := run.fleet.Upgrade(uctx, run.build.p); err != nil && s.pipelineIssue == nil {
		s.pipelineIssue = &metav1.Condition{Reason: v1alpha1.ReasonPipelineMismatch, Message: fmt.Sprintf(
			"switches did not take build %s: %v; they run the build they had and are tried again", run.build.p.CookieHex(), err)}
	}
}

package cachecluster

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/failover"
)

// TestReadinessClockRefines feeds the clock a member's observations as the
// API gives them (times truncated to the second) and checks the start of
// each readiness episode it returns.
func TestReadinessClockRefines(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 5, 0, 0, 0, time.UTC) // a truncated API time
	obs := func(ready bool, since time.Time) failover.Observation {
		return failover.Observation{Ready: ready, Since: since}
	}
	var c readinessClock
	steps := []struct {
		name string
		o    failover.Observation
		now  time.Time
		want time.Time
	}{
		{"not Ready, seen 300 ms into the API's second", obs(false, t0), t0.Add(300 * time.Millisecond), t0.Add(300 * time.Millisecond)},
		{"the same episode, read back truncated", obs(false, t0), t0.Add(900 * time.Millisecond), t0.Add(300 * time.Millisecond)},
		{"Ready again, seen as it happens", obs(true, t0.Add(2*time.Second)), t0.Add(2*time.Second + 40*time.Millisecond), t0.Add(2*time.Second + 40*time.Millisecond)},
		{"not Ready, first seen 5 s late", obs(false, t0.Add(3*time.Second)), t0.Add(8 * time.Second), t0.Add(3 * time.Second)},
		{"that episode again", obs(false, t0.Add(3*time.Second)), t0.Add(9 * time.Second), t0.Add(3 * time.Second)},
		{"its pod replaced by one not Ready yet", obs(false, t0.Add(9*time.Second)), t0.Add(9*time.Second + 500*time.Millisecond), t0.Add(3 * time.Second)},
		{"a Since in the future", obs(true, t0.Add(20*time.Second)), t0.Add(10 * time.Second), t0.Add(20 * time.Second)},
	}
	for _, s := range steps {
		if got := c.refine("ns/c/m", s.o, s.now).Since; !got.Equal(s.want) {
			t.Fatalf("%s: since %v, want %v", s.name, got.Sub(t0), s.want.Sub(t0))
		}
	}
	c.forget("ns/c")
	if got := c.refine("ns/c/m", obs(false, t0), t0.Add(900*time.Millisecond)).Since; !got.Equal(t0.Add(900 * time.Millisecond)) {
		t.Fatalf("after forget: since %v, want a new episode seen at 900ms", got.Sub(t0))
	}
}

// TestObserveKeepsTheGracePeriodOfAReplacedPod checks a member's readiness
// as the status recorded it and as its pod shows it: a pod not Ready that
// replaced the pod of a member already not Ready continues that member's
// grace period; a pod that became Ready, or a member that was Ready, starts
// from the pod's condition.
func TestObserveKeepsTheGracePeriodOfAReplacedPod(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 5, 0, 0, 0, time.UTC)
	pod := func(ready corev1.ConditionStatus, since time.Time) *corev1.Pod {
		return &corev1.Pod{Status: corev1.PodStatus{Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: ready, LastTransitionTime: metav1.NewTime(since)}}}}
	}
	recorded := func(ready bool, since time.Time) v1alpha1.MemberStatus {
		return v1alpha1.MemberStatus{Ready: ready, Since: &metav1.Time{Time: since}}
	}
	tests := []struct {
		name      string
		pod       *corev1.Pod
		recorded  v1alpha1.MemberStatus
		wantReady bool
		wantSince time.Time
	}{
		{"replaced pod not Ready yet", pod(corev1.ConditionFalse, t0.Add(2*time.Second)), recorded(false, t0), false, t0},
		{"first time not Ready", pod(corev1.ConditionFalse, t0.Add(2*time.Second)), recorded(true, t0), false, t0.Add(2 * time.Second)},
		{"Ready again", pod(corev1.ConditionTrue, t0.Add(2*time.Second)), recorded(false, t0), true, t0.Add(2 * time.Second)},
		{"no pod", nil, recorded(false, t0), false, t0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := observe(tc.pod, tc.recorded, t0.Add(3*time.Second))
			if o.Ready != tc.wantReady || !o.Since.Equal(tc.wantSince) {
				t.Fatalf("observed ready %v since %v, want %v since %v", o.Ready, o.Since.Sub(t0), tc.wantReady, tc.wantSince.Sub(t0))
			}
		})
	}
}

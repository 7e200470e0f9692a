package cachecluster_test

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/distcache/distcache/api/v1alpha1"
)

// TestDataPlanePodsRestricted checks that cache-node and storage pods run
// under the restricted Pod Security Standard, with the Secrets they mount
// readable by their group only.
func TestDataPlanePodsRestricted(t *testing.T) {
	startOperator(t, &clock{t: time.Now()})
	cc := newCluster(t, "sec", withStorage(v1alpha1.StorageManaged, 1, 1), withLayer("spine", 1, false))
	for _, name := range []string{"sec-spine", "sec-rack-0"} {
		sts := &appsv1.StatefulSet{}
		eventually(t, "StatefulSet "+name, func() (bool, error) { err := get(t, sts, cc.Namespace, name); return err == nil, nil })
		spec := sts.Spec.Template.Spec
		ps := spec.SecurityContext
		if ps == nil || ps.RunAsNonRoot == nil || !*ps.RunAsNonRoot || ps.FSGroup == nil || *ps.FSGroup != 65532 ||
			ps.SeccompProfile == nil || ps.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("%s: pod security context %+v, want non-root, fsGroup 65532, seccomp RuntimeDefault", name, ps)
		}
		for _, c := range spec.Containers {
			cs := c.SecurityContext
			if cs == nil || cs.AllowPrivilegeEscalation == nil || *cs.AllowPrivilegeEscalation || cs.ReadOnlyRootFilesystem == nil ||
				!*cs.ReadOnlyRootFilesystem || cs.Capabilities == nil || len(cs.Capabilities.Drop) != 1 || cs.Capabilities.Drop[0] != "ALL" {
				t.Errorf("%s/%s: security context %+v, want no escalation, read-only root, all capabilities dropped", name, c.Name, cs)
			}
		}
		for _, v := range spec.Volumes {
			if v.Secret != nil && (v.Secret.DefaultMode == nil || *v.Secret.DefaultMode != 0o440) {
				t.Errorf("%s: Secret volume %s mode %v, want 0440", name, v.Name, v.Secret.DefaultMode)
			}
		}
	}
}

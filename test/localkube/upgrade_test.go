package localkube

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/distcache/distcache/internal/buildinfo"
	"github.com/distcache/distcache/operator/controller/cachecluster"
)

// upgradeTag is the tag the upgrade moves to: the same build under a new
// name, which changes every data-plane pod template as a new release does.
const upgradeTag = buildinfo.Release + "-upgrade"

// upgradeUnderCheck upgrades the chart to a new image tag under a
// `distcache check` Job: the operator's Deployment rolls, the new
// operator moves every StatefulSet of the sample onto its image, and each
// set replaces its pods one at a time (new pods, new pod IPs). The check
// must pass.
func upgradeUnderCheck(k *kube) {
	k.t.Helper()
	image := buildinfo.Repository + ":" + upgradeTag
	script(k.ctx, k.t, k.dir, "load", imageArchive(k.ctx, k.t, k.t.TempDir(), image))
	check := k.startCheck(sample + "-upgrade-check")
	helmUpgrade(k.ctx, k.t, k.kubeconfig(), map[string]any{"image": map[string]any{"tag": upgradeTag}})
	k.await("every StatefulSet rolled onto "+image, 10*time.Minute, func() (bool, error) {
		sets, err := k.cs.AppsV1().StatefulSets("default").List(k.ctx, metav1.ListOptions{LabelSelector: cachecluster.LabelCluster + "=" + sample})
		if err != nil {
			return false, err
		}
		if len(sets.Items) == 0 {
			return false, fmt.Errorf("no StatefulSets of %s", sample)
		}
		for _, s := range sets.Items {
			st, want := s.Status, *s.Spec.Replicas
			for _, c := range s.Spec.Template.Spec.Containers {
				if c.Image == buildinfo.Image {
					return false, fmt.Errorf("%s's %s still on %s", s.Name, c.Name, buildinfo.Image)
				}
			}
			if st.ObservedGeneration != s.Generation || st.UpdateRevision != st.CurrentRevision || st.UpdatedReplicas != want || st.ReadyReplicas != want {
				return false, fmt.Errorf("%s: %d of %d updated, %d ready, revision %s → %s", s.Name, st.UpdatedReplicas, want, st.ReadyReplicas, st.CurrentRevision, st.UpdateRevision)
			}
		}
		return true, nil
	})
	k.awaitHealed(sample, samplePods)
	log := check.finish()
	// The operator updates the pods in place (only the image changed):
	// each shim restarts beside its running Redis server, each node at
	// its address, and no read fails.
	reads, unknown := failedReads(k.t, log)
	k.t.Logf("%s: %d failed reads, %d writes of unknown outcome", check.name, reads, unknown)
	if reads != 0 {
		k.t.Errorf("%s: %d reads failed during the upgrade, want none", check.name, reads)
	}
}

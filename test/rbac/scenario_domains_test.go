package rbac_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/internal/buildinfo"
	"github.com/distcache/distcache/operator/controller/cachecluster"
	"github.com/distcache/distcache/placement/partmap"
)

// domains: the pods of a cluster run the operator's release on a Node
// labelled with a zone; the published map names the node and its zone,
// which the operator reads from its cache of Nodes' metadata.
func (s *scenarios) domains(t *testing.T) {
	ctx := context.Background()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{GenerateName: "rbac-node-", Labels: map[string]string{cachecluster.LabelZone: "zone-a"}}}
	if err := env.Client.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), node) })
	cc := s.newCluster(t, "zoned", v1alpha1.StorageSpec{Racks: 1, ShardsPerRack: 1}, 1)
	spec := corev1.PodSpec{NodeName: node.Name, Containers: []corev1.Container{{Name: "distcache", Image: buildinfo.Image}}}
	for _, p := range []string{"zoned-spine-0", "zoned-rack-0-0"} {
		s.setPodOf(t, cc.Name, p, spec, true)
	}
	eventually(t, "the member's node and zone published", func() (bool, error) {
		cm := &corev1.ConfigMap{}
		if err := s.get(cm, cachecluster.MapConfigMapName("zoned")); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		m, err := partmap.Decode([]byte(cm.Data[cachecluster.MapKey]))
		if err != nil {
			return false, err
		}
		mb := m.Layers[0].Members[0]
		return mb.Host == node.Name && mb.Zone == "zone-a", nil
	})
}

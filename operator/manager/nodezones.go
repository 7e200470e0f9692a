package manager

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/distcache/distcache/operator/controller/cachecluster"
)

// nodeZones reads nodes' zones through the manager's cache, which keeps
// the Nodes' metadata only (cachecluster.NodeZones).
type nodeZones struct{ c client.Reader }

// Zone is node's topology.kubernetes.io/zone label.
func (n nodeZones) Zone(ctx context.Context, node string) (string, error) {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Node"))
	if err := n.c.Get(ctx, client.ObjectKey{Name: node}, m); err != nil {
		return "", fmt.Errorf("cannot get node %s: %w", node, err)
	}
	return m.Labels[cachecluster.LabelZone], nil
}

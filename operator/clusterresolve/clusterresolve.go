// Package clusterresolve lays out a CacheCluster as the API holds it: its
// CacheLayers (layerRefs) and the SwitchFabrics of its switch-backed
// layers are read, and layout.Resolve lays the cluster out from them. The
// CacheCluster controller builds the partition map from the result, and
// the SwitchFabric controller finds in it the member names of the
// switches it programs, so both see one layout.
package clusterresolve

import (
	"context"
	"errors"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/layout"
)

// Where a cluster's partition map is published.
const (
	// MapKey is the map's key in its ConfigMap.
	MapKey = "map.json"
)

// MapConfigMapName names the ConfigMap holding a cluster's partition map.
func MapConfigMapName(cluster string) string { return cluster + "-partition-map" }

// Reason is the condition reason of an error of Resolve that only a change
// of the objects can solve (LayerNotFound, FabricNotFound,
// InvalidTopology), and false for any other error (the API's).
func Reason(err error) (string, bool) {
	switch {
	case errors.Is(err, layout.ErrLayerNotFound):
		return v1alpha1.ReasonLayerNotFound, true
	case errors.Is(err, layout.ErrFabricNotFound):
		return v1alpha1.ReasonFabricNotFound, true
	case errors.Is(err, layout.ErrInvalid):
		return v1alpha1.ReasonInvalidTopology, true
	}
	return "", false
}

// Cluster is a laid-out cluster and the SwitchFabrics its switch-backed
// layers use, by name.
type Cluster struct {
	*layout.Cluster
	Fabrics map[string]*v1alpha1.SwitchFabric
}

// Resolve reads cc's CacheLayers and SwitchFabrics and lays it out with
// layout.Resolve. A SwitchFabric being deleted or gone is leaving
// (layout.Fabric.Leaving): its layers keep the switches that the
// published partition map still holds — from the fabric's spec, or from
// the map itself once the fabric is gone — so that the CacheCluster
// controller fences them before it removes them, and the SwitchFabric
// controller programs them until then. Errors wrap layout.ErrLayerNotFound,
// layout.ErrFabricNotFound or layout.ErrInvalid when only a change of the
// objects can help; other errors are the API's.
func Resolve(ctx context.Context, c client.Reader, cc *v1alpha1.CacheCluster) (*Cluster, error) {
	var apiErr error // the first error of the API, other than not found
	get := func(name string, obj client.Object) bool {
		err := c.Get(ctx, client.ObjectKey{Namespace: cc.Namespace, Name: name}, obj)
		if client.IgnoreNotFound(err) != nil && apiErr == nil {
			apiErr = fmt.Errorf("cannot get %T %s: %w", obj, name, err)
		}
		return err == nil
	}
	fabrics := map[string]*v1alpha1.SwitchFabric{}
	getLayer := func(name string) (*v1alpha1.CacheLayerSpec, bool) {
		l := &v1alpha1.CacheLayer{}
		if !get(name, l) {
			return nil, false
		}
		return &l.Spec, true
	}
	var published *leftInMap // read once a fabric is leaving
	t, err := layout.Resolve(cc.Name, &cc.Spec, getLayer,
		func(name string) (layout.Fabric, bool) {
			f := &v1alpha1.SwitchFabric{}
			found := get(name, f)
			if found && f.DeletionTimestamp.IsZero() {
				fabrics[name] = f
				return layout.Fabric{Spec: &f.Spec}, true
			}
			if published == nil {
				m, err := publishedMap(ctx, c, cc)
				if err != nil && apiErr == nil {
					apiErr = err
				}
				published = &leftInMap{cluster: cc, m: m, layers: getLayer}
			}
			if found {
				fabrics[name] = f
				return layout.Fabric{Spec: published.filter(name, &f.Spec), Leaving: true}, true
			}
			return layout.Fabric{Spec: published.switches(name), Leaving: true}, true
		})
	if apiErr != nil {
		return nil, apiErr
	}
	if err != nil {
		return nil, err
	}
	return &Cluster{Cluster: t, Fabrics: fabrics}, nil
}

// Package clusterresolve lays out a CacheCluster as the API holds it: its
// CacheLayers (layerRefs) and the SwitchFabrics of its switch-backed
// layers are read, and topology lays the cluster out from them. The
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
	"github.com/distcache/distcache/topology"
)

// Why a cluster cannot be laid out, besides an API error.
var (
	// ErrLayerNotFound: a layerRef names no CacheLayer.
	ErrLayerNotFound = errors.New("layer not found")
	// ErrInvalid: the spec and its layers passed the API's validation but
	// do not make a cluster.
	ErrInvalid = errors.New("invalid topology")
)

// Reason is the condition reason of an error of Resolve that only a change
// of the objects can solve (LayerNotFound, FabricNotFound,
// InvalidTopology), and false for any other error (the API's).
func Reason(err error) (string, bool) {
	switch {
	case errors.Is(err, ErrLayerNotFound):
		return v1alpha1.ReasonLayerNotFound, true
	case errors.Is(err, topology.ErrFabricNotFound):
		return v1alpha1.ReasonFabricNotFound, true
	case errors.Is(err, ErrInvalid):
		return v1alpha1.ReasonInvalidTopology, true
	}
	return "", false
}

// Cluster is a laid-out cluster and the SwitchFabrics its switch-backed
// layers use, by name.
type Cluster struct {
	*topology.Cluster
	Fabrics map[string]*v1alpha1.SwitchFabric
}

// Resolve lays out cc. Errors wrap ErrLayerNotFound,
// topology.ErrFabricNotFound or ErrInvalid when only a change of the
// objects can help; other errors are the API's.
func Resolve(ctx context.Context, c client.Reader, cc *v1alpha1.CacheCluster) (*Cluster, error) {
	refs := map[string]*v1alpha1.CacheLayerSpec{}
	for _, name := range cc.Spec.LayerRefs {
		l := &v1alpha1.CacheLayer{}
		err := c.Get(ctx, client.ObjectKey{Namespace: cc.Namespace, Name: name}, l)
		if client.IgnoreNotFound(err) != nil {
			return nil, fmt.Errorf("cannot get CacheLayer %s: %w", name, err)
		}
		if err == nil {
			refs[name] = &l.Spec
		}
	}
	layers, err := topology.ResolveLayers(&cc.Spec, func(name string) (*v1alpha1.CacheLayerSpec, bool) {
		spec, ok := refs[name]
		return spec, ok
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrLayerNotFound, err)
	}
	fabrics := map[string]*v1alpha1.SwitchFabric{}
	for _, l := range layers {
		if l.Software() {
			continue
		}
		name := l.Spec.Switch.FabricRef
		f := &v1alpha1.SwitchFabric{}
		err := c.Get(ctx, client.ObjectKey{Namespace: cc.Namespace, Name: name}, f)
		if client.IgnoreNotFound(err) != nil {
			return nil, fmt.Errorf("cannot get SwitchFabric %s: %w", name, err)
		}
		if err == nil {
			fabrics[name] = f
		}
	}
	err = topology.ResolveSwitches(layers, int(max(cc.Spec.Storage.Racks, 1)), func(name string) (*v1alpha1.SwitchFabricSpec, bool) {
		f, ok := fabrics[name]
		if !ok {
			return nil, false
		}
		return &f.Spec, true
	})
	if errors.Is(err, topology.ErrFabricNotFound) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	t, err := topology.New(cc.Name, cc.Spec, layers)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return &Cluster{Cluster: t, Fabrics: fabrics}, nil
}

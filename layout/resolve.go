package layout

import (
	"errors"
	"fmt"

	"github.com/distcache/distcache/api/v1alpha1"
)

// ErrInvalid is wrapped by Resolve when the layers and switches it found
// cannot form a cluster (ResolveSwitches' checks other than a missing
// fabric, and New's).
var ErrInvalid = errors.New("invalid topology")

// Resolve is the one way from a CacheCluster's spec to its topology, for
// the distcache commands, standalone mode and the operator: the cluster's
// layers (ResolveLayers, with layer), the members of its switch-backed
// layers (ResolveSwitches, with fabric), and the checks of New. Its errors
// wrap ErrLayerNotFound, ErrFabricNotFound or ErrInvalid.
func Resolve(name string, spec *v1alpha1.CacheClusterSpec, layer LayerGetter, fabric FabricGetter) (*Cluster, error) {
	layers, err := ResolveLayers(spec, layer)
	if err != nil {
		return nil, err
	}
	err = ResolveSwitches(layers, int(max(spec.Storage.Racks, 1)), fabric)
	switch {
	case errors.Is(err, ErrFabricNotFound):
		return nil, err
	case err != nil:
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	c, err := New(name, *spec, layers)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return c, nil
}

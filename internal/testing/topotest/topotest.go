// Package topotest builds topologies for tests from a spec with inline
// layers, as a cluster file's are resolved.
package topotest

import (
	"testing"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/layout"
)

// New returns the topology of cluster name with spec, whose layers are
// inline; it fails the test if the spec is not valid.
func New(t testing.TB, name string, spec v1alpha1.CacheClusterSpec) *layout.Cluster {
	t.Helper()
	layers, err := layout.ResolveLayers(&spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := layout.New(name, spec, layers)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

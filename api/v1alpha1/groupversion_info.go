// Package v1alpha1 is the distcache.io/v1alpha1 API: CacheCluster (the
// storage backend, its cache layers and how clients use them), CacheLayer
// (one cache layer, software cache-node pods or switches) and SwitchFabric
// (programmable switches managed through Stratum or ONOS).
//
// The types carry their validation as CEL rules and OpenAPI markers, so that
// the API server rejects a bad spec with a message that names the field, and
// standalone mode (distcache up) applies the same rules to the same YAML.
// Defaults that depend on other objects (a layer's hash seed, the member
// list) are computed by package topology and reported in the status.
//
// +kubebuilder:object:generate=true
// +groupName=distcache.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of these types.
	GroupVersion = schema.GroupVersion{Group: "distcache.io", Version: "v1alpha1"}

	// SchemeBuilder adds the types to a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the types of this group-version to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&CacheCluster{}, &CacheClusterList{},
		&CacheLayer{}, &CacheLayerList{},
		&SwitchFabric{}, &SwitchFabricList{},
	)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}

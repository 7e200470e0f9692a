package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LayerBackend says what serves a cache layer.
// +kubebuilder:validation:Enum=software;switch
type LayerBackend string

const (
	// BackendSoftware layers are cache-node pods, one per member.
	BackendSoftware LayerBackend = "software"
	// BackendSwitch layers are the programmable switches of a SwitchFabric
	// in one role.
	BackendSwitch LayerBackend = "switch"
)

// SwitchRole is a switch's place in the fabric.
// +kubebuilder:validation:Enum=spine;storage-leaf;client-leaf
type SwitchRole string

const (
	// RoleSpine switches connect the racks; a spine layer caches the keys
	// of all racks.
	RoleSpine SwitchRole = "spine"
	// RoleStorageLeaf switches are the top-of-rack switches of storage
	// racks; a storage-leaf layer is bound to the racks.
	RoleStorageLeaf SwitchRole = "storage-leaf"
	// RoleClientLeaf switches are the top-of-rack switches of client racks;
	// they route reads and do not cache: no layer has this role, and the
	// fabric's client leaves are programmed for the cluster whose layers
	// use the fabric.
	RoleClientLeaf SwitchRole = "client-leaf"
)

// CacheLayerSpec is the desired shape of one cache layer. Each layer
// partitions keys with its own consistent-hash ring (DistCache §3.1).
//
// +kubebuilder:validation:XValidation:rule="!has(self.switch) || (has(self.backend) && self.backend == 'switch')",message="switch is only for a layer with backend: switch"
// +kubebuilder:validation:XValidation:rule="!has(self.backend) || self.backend != 'switch' || has(self.switch)",message="a layer with backend: switch needs switch.fabricRef and switch.role"
// +kubebuilder:validation:XValidation:rule="!has(self.switch) || self.switch.role != 'client-leaf'",message="client-leaf switches cache nothing and cannot serve a layer: a fabric's client leaves route the reads of the clients behind them to its spine and storage-leaf layers"
// +kubebuilder:validation:XValidation:rule="!(has(self.boundToRacks) && self.boundToRacks && has(self.nodes))",message="a layer bound to storage racks has one node per rack: leave nodes unset"
// +kubebuilder:validation:XValidation:rule="(has(self.backend) && self.backend == 'switch') || (has(self.boundToRacks) && self.boundToRacks) || has(self.nodes)",message="nodes is required unless the layer is bound to storage racks (boundToRacks: true)"
// +kubebuilder:validation:XValidation:rule="has(self.hashSeed) == has(oldSelf.hashSeed) && (!has(self.hashSeed) || self.hashSeed == oldSelf.hashSeed)",message="hashSeed cannot be set, changed or removed once the layer exists: it decides which node of the layer caches each key, so every cached key would move at once and the layer's caches would all start cold; create a new layer instead"
type CacheLayerSpec struct {
	// Backend says what serves the layer: software cache-node pods (the
	// default) or the switches of a SwitchFabric.
	// +kubebuilder:default=software
	// +optional
	Backend LayerBackend `json:"backend,omitempty"`

	// Nodes is the number of members. A layer bound to storage racks has
	// one member per rack and leaves it unset.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=4096
	// +optional
	Nodes *int32 `json:"nodes,omitempty"`

	// BoundToRacks makes the layer's member for a rack cache the hot keys
	// stored in that rack, as the storage-leaf switches of DistCache §4.1.
	// Only a cluster's lowest layer may be bound.
	// +optional
	BoundToRacks bool `json:"boundToRacks,omitempty"`

	// HashSeed seeds the layer's ring. Layers must partition keys
	// independently, so each needs its own seed; when unset, one is
	// derived from the cluster and layer names (shown in the status). It
	// cannot be set, changed or removed once the layer exists.
	// +kubebuilder:validation:Minimum=1
	// +optional
	HashSeed *int64 `json:"hashSeed,omitempty"`

	// VirtualNodes is the number of ring points per member: more points
	// spread keys more evenly and cost memory in every client.
	// +kubebuilder:default=2048
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65536
	// +optional
	VirtualNodes int32 `json:"virtualNodes,omitempty"`

	// Capacity bounds what each member caches.
	// +kubebuilder:default={}
	// +optional
	Capacity NodeCapacity `json:"capacity,omitempty"`

	// Switch names the fabric and role of a switch-backed layer.
	// +optional
	Switch *SwitchLayerSpec `json:"switch,omitempty"`

	// Resources of each cache-node pod of a software layer.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// Scheduling is where the scheduler may put the layer's cache-node
	// pods (software layers; unset: spread over nodes and zones).
	// Standalone mode ignores it.
	// +optional
	Scheduling *PodScheduling `json:"scheduling,omitempty"`
}

// NodeCapacity bounds one member's cache.
type NodeCapacity struct {
	// Entries is the most keys cached, including those being inserted.
	// +kubebuilder:default=10000
	// +kubebuilder:validation:Minimum=1
	// +optional
	Entries int32 `json:"entries,omitempty"`
	// Bytes is the most value bytes cached.
	// +kubebuilder:default="64Mi"
	// +optional
	Bytes *resource.Quantity `json:"bytes,omitempty"`
	// Auto sizes the layer from the cluster's cacheBudget: the entries of
	// each member are chosen, and changed while it runs, from the
	// miss-ratio curves the nodes measure (docs/operator.md, "Cache
	// budget"); Entries is only what a member starts with.
	// +optional
	Auto bool `json:"auto,omitempty"`
}

// SwitchLayerSpec is where a switch-backed layer's members come from.
type SwitchLayerSpec struct {
	// FabricRef names a SwitchFabric in the same namespace.
	// +kubebuilder:validation:MinLength=1
	FabricRef string `json:"fabricRef"`
	// Role selects the fabric's switches of this role as the members.
	Role SwitchRole `json:"role"`
}

// CacheLayerStatus is the observed state of a CacheLayer.
type CacheLayerStatus struct {
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Ready when the layer is valid and its fabric (if any)
	// exists.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Clusters lists the CacheClusters that use this layer.
	// +optional
	Clusters []string `json:"clusters,omitempty"`
}

// CacheLayer is one cache layer, referenced by CacheClusters' layerRefs.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=cl,categories=distcache
// +kubebuilder:printcolumn:name="Backend",type=string,JSONPath=`.spec.backend`
// +kubebuilder:printcolumn:name="Nodes",type=integer,JSONPath=`.spec.nodes`
// +kubebuilder:printcolumn:name="Bound",type=boolean,JSONPath=`.spec.boundToRacks`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 20",message="a CacheLayer's name is part of its pods' names: at most 20 characters"
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z]([a-z0-9-]*[a-z0-9])?$')",message="a CacheLayer's name is part of its pods' names: lower-case letters, digits and '-', starting with a letter"
type CacheLayer struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   CacheLayerSpec   `json:"spec,omitempty"`
	Status CacheLayerStatus `json:"status,omitempty"`
}

// CacheLayerList is a list of CacheLayers.
//
// +kubebuilder:object:root=true
type CacheLayerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CacheLayer `json:"items"`
}

package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// HotKeySpec tunes hot-key detection and insertion (NetCache §4.4) and
// the copies each hot key gets.
type HotKeySpec struct {
	// Interval is how often each cache node inserts its hottest uncached
	// keys and evicts its coldest.
	// +kubebuilder:default="1s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +optional
	Interval *metav1.Duration `json:"interval,omitempty"`
	// Threshold is the misses of a key within an interval, at one cache
	// node, that make it a candidate for insertion. Unset, each node
	// adapts it to its traffic every interval: as low as 2 when the node is
	// lightly loaded, raised until the keys that cross it fit the node's
	// report list when it is busy (docs/dataplane.md, Hot keys). Switch
	// layers use a fixed threshold: this one, else their controller's
	// default.
	// +kubebuilder:validation:Minimum=1
	// +optional
	Threshold int32 `json:"threshold,omitempty"`
	// Replication decides each hot key's copies by cost and benefit
	// instead of one per layer (docs/operator.md, "Copies of hot keys").
	// Off when unset.
	// +optional
	Replication *HotKeyReplicationSpec `json:"replication,omitempty"`
}

// HotKeyReplicationSpec is the redundancy control: every interval the
// control plane reads the hits the cache nodes and the reads and writes
// the storage shims report for their hottest keys, and gives each key
// the copies that serve its reads best for what their coherence work
// costs its storage shard: none for a key whose writes cost more than its
// copies save, one, one per layer (plain DistCache), or more for a key
// hotter than half a cache node, on the upper layer's ring successors of
// its owner. The capacities are the model's: what one cache node and one
// storage shard serve, in requests per second.
//
// +kubebuilder:validation:XValidation:rule="!has(self.minRate) || self.minRate < (has(self.storageCapacity) ? self.storageCapacity : 20000)",message="hotKeys.replication.minRate must be below storageCapacity (20000 when unset): a key that hot is what the decision is for"
// +kubebuilder:validation:XValidation:rule="!has(self.interval) || duration(self.interval) >= duration('1s')",message="hotKeys.replication.interval must be at least 1s: each decision may publish a new partition map version"
type HotKeyReplicationSpec struct {
	// Enabled turns the decision on. Turned off, every cached key goes
	// back to one copy per layer.
	Enabled bool `json:"enabled"`
	// Interval is how often the copies are decided.
	// +kubebuilder:default="5s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +optional
	Interval *metav1.Duration `json:"interval,omitempty"`
	// MaxCopies bounds the copies of one key. Unset: every member of the
	// upper layer and one in each other layer.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	// +optional
	MaxCopies int32 `json:"maxCopies,omitempty"`
	// MinRate is the threshold, in requests per second, below which a
	// key keeps one copy per layer: a key that light costs or saves its
	// shard too little to be worth a map version. Unset: 2% of
	// storageCapacity.
	// +kubebuilder:validation:Minimum=1
	// +optional
	MinRate int64 `json:"minRate,omitempty"`
	// NodeCapacity is the requests per second one cache node serves.
	// Unset: 200000.
	// +kubebuilder:validation:Minimum=1
	// +optional
	NodeCapacity int64 `json:"nodeCapacity,omitempty"`
	// StorageCapacity is the requests per second one storage shard (a
	// shim and its Redis) serves. Unset: 20000.
	// +kubebuilder:validation:Minimum=1
	// +optional
	StorageCapacity int64 `json:"storageCapacity,omitempty"`
	// CoherenceCostPercent is a storage shard's work for one write of a
	// key per cached copy of it (invalidating and updating the copy), in
	// percent of a request's. Unset: 100.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	// +optional
	CoherenceCostPercent int32 `json:"coherenceCostPercent,omitempty"`
	// HysteresisPercent is the band, in percent around each threshold of
	// the rule, inside which a key keeps the copies it has: it keeps a
	// key whose rate wavers from flapping the map. Unset: 20.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	HysteresisPercent int32 `json:"hysteresisPercent,omitempty"`
	// HeadroomPercent, when set, is the growth of the reported load, in
	// percent, that the decision prepares for at most: copies that only a
	// larger load would need are not made. Unset: no bound — the copies
	// the most load the cluster can carry needs, whatever its load now.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	// +optional
	HeadroomPercent *int32 `json:"headroomPercent,omitempty"`
}

// HotKeyStatus is the last decision of the copies of hot keys.
type HotKeyStatus struct {
	// LastDecision is when the copies were last decided.
	// +optional
	LastDecision *metav1.Time `json:"lastDecision,omitempty"`
	// Uncached, OneCopy, TwoCopies and MoreCopies count the keys the last
	// decision considered (those reported at or above minRate) by the
	// copies they got: none, one, two, three or more.
	Uncached   int32 `json:"uncached"`
	OneCopy    int32 `json:"oneCopy"`
	TwoCopies  int32 `json:"twoCopies"`
	MoreCopies int32 `json:"moreCopies"`
	// Decided counts the keys whose copies in the partition map are not
	// one per layer.
	Decided int32 `json:"decided"`
	// LoadHeadroom is the factor by which the reported load can grow
	// before a storage shard is at its capacity under the decision; unset
	// when the decision considered no key.
	// +optional
	LoadHeadroom string `json:"loadHeadroom,omitempty"`
	// ReportsMissing counts the cache nodes and shims whose report the
	// last decision lacked (not Ready, or not answering).
	// +optional
	ReportsMissing int32 `json:"reportsMissing,omitempty"`
}

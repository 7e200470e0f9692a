package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// CacheBudgetSpec is the cache entries the layers with capacity.auto
// share. Every interval the control plane reads each of their nodes'
// miss-ratio curve (the fraction of its reads a cache of each size would
// miss) and gives each layer the entries a member that serve the most
// reads from the caches within the budget, as D3N sizes its cache layers;
// the nodes resize without a restart.
//
// +kubebuilder:validation:XValidation:rule="!has(self.interval) || duration(self.interval) >= duration('1s')",message="cacheBudget.interval must be at least 1s: each new split is a new partition map version"
type CacheBudgetSpec struct {
	// Entries is the keys all the members of the auto layers cache
	// together.
	// +kubebuilder:validation:Minimum=1
	Entries int64 `json:"entries"`
	// Interval is how often the split is evaluated again. The nodes'
	// curves cover their last 30 s of reads.
	// +kubebuilder:default="30s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +optional
	Interval *metav1.Duration `json:"interval,omitempty"`
	// HysteresisPercent is how much more of the reads, in percent of what
	// the current split is modelled to serve from the caches, a new split
	// must be modelled to serve to replace it. Unset: 2.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	HysteresisPercent int32 `json:"hysteresisPercent,omitempty"`
}

// CacheSizingStatus is the last split of the cache budget.
type CacheSizingStatus struct {
	// LastDecision is when the split was last evaluated.
	// +optional
	LastDecision *metav1.Time `json:"lastDecision,omitempty"`
	// Layers are the auto layers' split.
	// +optional
	Layers []LayerSizing `json:"layers,omitempty"`
	// ReportsMissing counts the cache nodes whose curve the last
	// evaluation lacked.
	// +optional
	ReportsMissing int32 `json:"reportsMissing,omitempty"`
}

// LayerSizing is one auto layer's share of the budget.
type LayerSizing struct {
	// Name of the layer.
	Name string `json:"name"`
	// Entries each member caches.
	Entries int32 `json:"entries"`
	// EstimatedHitRatio is the fraction of the layer's reads its caches
	// serve at Entries, as its nodes' curves estimate it.
	// +optional
	EstimatedHitRatio string `json:"estimatedHitRatio,omitempty"`
	// MeasuredHitRatio is the fraction of the layer's reads its caches
	// served over the curves' window.
	// +optional
	MeasuredHitRatio string `json:"measuredHitRatio,omitempty"`
}

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FabricDriver is how the operator programs a fabric's switches.
// +kubebuilder:validation:Enum=stratum;onos
type FabricDriver string

const (
	// DriverStratum talks to each switch's Stratum agent: P4Runtime for the
	// pipeline and table entries, gNMI for port state.
	DriverStratum FabricDriver = "stratum"
	// DriverONOS programs the switches through an ONOS controller's REST
	// API and network configuration.
	DriverONOS FabricDriver = "onos"
)

// Switch is one programmable switch.
type Switch struct {
	// Name of the switch, unique in the fabric.
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
	// DeviceID is the P4Runtime device id, unique in the fabric.
	// +kubebuilder:validation:Minimum=1
	DeviceID int64 `json:"deviceID"`
	// Role is the switch's place in the fabric.
	Role SwitchRole `json:"role"`
	// P4RuntimeAddress is the switch's P4Runtime endpoint (host:port);
	// required with the stratum driver.
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9.\-\[\]:]+:[0-9]{1,5}$`
	// +optional
	P4RuntimeAddress string `json:"p4runtimeAddress,omitempty"`
	// GNMIAddress is the switch's gNMI endpoint (host:port).
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9.\-\[\]:]+:[0-9]{1,5}$`
	// +optional
	GNMIAddress string `json:"gnmiAddress,omitempty"`
	// Rack is the storage rack a storage-leaf switch serves.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Rack *int32 `json:"rack,omitempty"`
	// DataAddress is the IPv4 address and UDP port of the switch's cache
	// program: its coherence port, the member's address in the partition
	// map. The read port of storage shard g is this port + 1 + g. Required
	// for the switches of a switch-backed layer.
	// +kubebuilder:validation:Pattern=`^([0-9]{1,3}\.){3}[0-9]{1,3}:[0-9]{1,5}$`
	// +optional
	DataAddress string `json:"dataAddress,omitempty"`
}

// ONOSSpec is the ONOS controller of a fabric with the onos driver.
type ONOSSpec struct {
	// Endpoint is the ONOS REST API's base URL.
	// +kubebuilder:validation:Pattern=`^https?://`
	Endpoint string `json:"endpoint"`
	// CredentialsSecretRef names a Secret with username and password keys.
	// +optional
	CredentialsSecretRef *LocalSecretReference `json:"credentialsSecretRef,omitempty"`
}

// LocalSecretReference names a Secret in the object's namespace.
type LocalSecretReference struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// SwitchFabricSpec is a set of programmable switches and how to reach them.
//
// The operator programs the switches of a fabric that a CacheCluster's
// switch-backed layer uses, with the stratum driver: every replica holds a
// P4Runtime session per switch, the leader's primary, which pushes the
// pipeline to a switch that does not run it (or takes over one that does,
// with its cache) and keeps the switch's entries and serving lease from
// the cluster's partition map; the leader also holds one per client-leaf
// switch, which pushes the client leaf program and keeps its routes from
// the same map (docs/switches.md). Standalone mode (distcache up) does the
// same with one controller. The onos driver is validated and reported
// (Ready False, DriverUnavailable).
//
// +kubebuilder:validation:XValidation:rule="self.driver != 'onos' || has(self.onos)",message="the onos driver needs onos.endpoint"
// +kubebuilder:validation:XValidation:rule="self.driver == 'onos' || !has(self.onos)",message="onos is only for driver: onos"
// +kubebuilder:validation:XValidation:rule="self.driver != 'stratum' || self.switches.all(s, has(s.p4runtimeAddress))",message="the stratum driver needs a p4runtimeAddress for every switch"
// +kubebuilder:validation:XValidation:rule="self.switches.map(s, s.deviceID).distinct().size() == size(self.switches)",message="switch deviceIDs must be unique in a fabric"
// +kubebuilder:validation:XValidation:rule="self.switches.all(s, s.role == 'storage-leaf' || !has(s.rack))",message="only storage-leaf switches serve a rack"
// +kubebuilder:validation:XValidation:rule="self.driver == 'stratum' || !has(self.pipelineSource)",message="pipelineSource is for driver: stratum (with onos, the pipeconf carries the program)"
type SwitchFabricSpec struct {
	// Driver is how the switches are programmed.
	Driver FabricDriver `json:"driver"`
	// Pipeline is the name of the P4 pipeline to load (from
	// stratum_pipelines/), e.g. distcache-tna or distcache-v1model.
	// +kubebuilder:validation:MinLength=1
	Pipeline string `json:"pipeline"`
	// Switches of the fabric.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=1024
	Switches []Switch `json:"switches"`
	// ONOS is the controller of a fabric with the onos driver.
	// +optional
	ONOS *ONOSSpec `json:"onos,omitempty"`
	// TLSSecretRef names a kubernetes.io/tls Secret (with ca.crt) for the
	// P4Runtime and gNMI connections; plaintext when unset.
	// +optional
	TLSSecretRef *LocalSecretReference `json:"tlsSecretRef,omitempty"`
	// PipelineSource is where the compiled program of the pipeline is
	// (P4Info and device config, built with p4c or bf-p4c): what a
	// Stratum switch needs. Without it the switches get the project's
	// P4Info and no device config, which only the software switch runs.
	// +optional
	PipelineSource *PipelineSource `json:"pipelineSource,omitempty"`
}

// SwitchFabricStatus is the observed state of a SwitchFabric.
type SwitchFabricStatus struct {
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Ready, Progressing, Degraded.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Switches counts the fabric's switches by role.
	// +optional
	Switches map[string]int32 `json:"switches,omitempty"`
	// Cluster is the CacheCluster whose switch-backed layers the fabric's
	// switches serve; empty while none uses the fabric.
	// +optional
	Cluster string `json:"cluster,omitempty"`
	// SwitchStatuses is each switch's session with the operator.
	// +listType=map
	// +listMapKey=name
	// +optional
	SwitchStatuses []SwitchStatus `json:"switchStatuses,omitempty"`
	// Pipeline is the build the operator hands the switches: the
	// project's own, or the compiled program of spec.pipelineSource last
	// read and accepted.
	// +optional
	Pipeline *PipelineStatus `json:"pipeline,omitempty"`
}

// SwitchStatus is what the operator's session with one switch observed.
type SwitchStatus struct {
	// Name of the switch.
	Name string `json:"name"`
	// Member is the switch's member name in the cluster's partition map;
	// empty for a client leaf, which is no member.
	// +optional
	Member string `json:"member,omitempty"`
	// Programmed says the reporting replica of the operator (the leader)
	// is the switch's primary controller and runs it with the pipeline it
	// pushed, or found, in the current session: the switch serves.
	// A switch that is not is failed over like a cache node that is not
	// Ready.
	Programmed bool `json:"programmed"`
	// Since is when Programmed last changed.
	// +optional
	Since *metav1.Time `json:"since,omitempty"`
	// Sessions counts the times the reporting replica became the switch's
	// primary and programmed it since it started: by pushing the pipeline,
	// which empties the switch, or by taking over a switch that ran it,
	// which keeps its cache.
	// +optional
	Sessions int32 `json:"sessions,omitempty"`
	// Cookie is the cookie of the build the switch runs in its session,
	// in hex (status.pipeline.cookie once it took the latest).
	// +optional
	Cookie string `json:"cookie,omitempty"`
	// Reason is why the switch is not programmed: SwitchUnreachable,
	// MastershipLost or PipelineMismatch.
	// +optional
	Reason string `json:"reason,omitempty"`
	// Message says more, in words.
	// +optional
	Message string `json:"message,omitempty"`
	// Ports is how many ports the switch reports over gNMI, and PortsUp
	// how many of them are up (both 0 without a gnmiAddress).
	// +optional
	Ports int32 `json:"ports,omitempty"`
	// +optional
	PortsUp int32 `json:"portsUp,omitempty"`
}

// SwitchFabric is a set of Stratum- or ONOS-managed programmable switches
// that switch-backed cache layers run on.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=sf,categories=distcache
// +kubebuilder:printcolumn:name="Driver",type=string,JSONPath=`.spec.driver`
// +kubebuilder:printcolumn:name="Pipeline",type=string,JSONPath=`.spec.pipeline`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type SwitchFabric struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   SwitchFabricSpec   `json:"spec,omitempty"`
	Status SwitchFabricStatus `json:"status,omitempty"`
}

// SwitchFabricList is a list of SwitchFabrics.
//
// +kubebuilder:object:root=true
type SwitchFabricList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SwitchFabric `json:"items"`
}

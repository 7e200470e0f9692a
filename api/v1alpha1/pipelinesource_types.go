package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PipelineFiles names the two files of a compiled program in its source:
// the keys of a ConfigMap or Secret, the file names (layer titles) of an
// OCI artefact.
//
// +kubebuilder:validation:XValidation:rule="!has(self.p4infoKey) || !has(self.deviceConfigKey) || self.p4infoKey != self.deviceConfigKey",message="p4infoKey and deviceConfigKey must name two different files"
type PipelineFiles struct {
	// P4InfoKey names the P4Info the compiler wrote, in protobuf text
	// (p4c's --p4runtime-files *.txt) or binary format.
	// +kubebuilder:default="p4info.txt"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	// +optional
	P4InfoKey string `json:"p4infoKey,omitempty"`
	// DeviceConfigKey names the target's compiled program: bmv2's JSON
	// for stratum-bmv2, the packed Tofino binary and context for
	// stratum-bf (docs/switches.md). In a ConfigMap, a binary program
	// goes under binaryData.
	// +kubebuilder:default="device_config.bin"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	// +optional
	DeviceConfigKey string `json:"deviceConfigKey,omitempty"`
}

// PipelineObjectRef names a ConfigMap or Secret in the fabric's namespace
// and its keys.
type PipelineObjectRef struct {
	// Name of the object.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	PipelineFiles `json:",inline"`
}

// PipelineImage is a compiled program pushed to an OCI registry as an
// artefact (`oras push`): an image manifest whose layers are the two
// files, titled with their names.
//
// +kubebuilder:validation:XValidation:rule="self.reference.matches('^[A-Za-z0-9.-]+(:[0-9]+)?(/[a-z0-9]+([._-]+[a-z0-9]+)*)+(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}(@sha256:[a-f0-9]{64})?|@sha256:[a-f0-9]{64})$')",message="image.reference must be REGISTRY/REPOSITORY:TAG or REGISTRY/REPOSITORY@sha256:DIGEST"
type PipelineImage struct {
	// Reference is the artefact's REGISTRY/REPOSITORY:TAG or
	// REGISTRY/REPOSITORY@sha256:DIGEST. The operator resolves a tag again
	// every minute and takes up a build pushed under it; a digest never
	// moves.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Reference string `json:"reference"`
	// PullSecretRef names a kubernetes.io/dockerconfigjson Secret with
	// the registry's credentials; the artefact is pulled anonymously
	// without one.
	// +optional
	PullSecretRef *LocalSecretReference `json:"pullSecretRef,omitempty"`

	PipelineFiles `json:",inline"`
}

// PipelineSource says where the compiled program of the fabric's
// pipeline is: exactly one of a ConfigMap, a Secret or an OCI artefact.
// The operator checks its P4Info against the pipeline's
// (P4InfoMismatch: nothing is pushed), pushes both to the switches, and
// takes up a new build of the same P4Info in the running sessions
// (RECONCILE_AND_COMMIT), which keeps the switches' cached keys.
//
// +kubebuilder:validation:XValidation:rule="(has(self.configMapRef) ? 1 : 0) + (has(self.secretRef) ? 1 : 0) + (has(self.image) ? 1 : 0) == 1",message="pipelineSource needs exactly one of configMapRef, secretRef or image"
type PipelineSource struct {
	// ConfigMapRef names a ConfigMap of the fabric's namespace with both
	// files, under data or binaryData. A ConfigMap holds at most 1 MiB: a
	// bigger program goes in an image. The operator watches it.
	// +optional
	ConfigMapRef *PipelineObjectRef `json:"configMapRef,omitempty"`
	// SecretRef names a Secret of the fabric's namespace with both files
	// (at most 1 MiB). The operator reads it again every 15 s; it does
	// not watch Secrets.
	// +optional
	SecretRef *PipelineObjectRef `json:"secretRef,omitempty"`
	// Image is an OCI artefact.
	// +optional
	Image *PipelineImage `json:"image,omitempty"`
}

// PipelineStatus is the compiled program the operator hands the fabric's
// switches.
type PipelineStatus struct {
	// Source is where it came from: "builtin" (the project's P4Info and
	// no device config: the software switch), "configMap/NAME",
	// "secret/NAME", or the image reference.
	Source string `json:"source"`
	// Digest is the artefact's manifest digest, for an image.
	// +optional
	Digest string `json:"digest,omitempty"`
	// Cookie is the build's P4Runtime cookie, in hex: a content hash of
	// the P4Info and the device config (docs/switches.md). A switch that
	// runs the build has this cookie (switchStatuses[].cookie).
	Cookie string `json:"cookie"`
	// DeviceConfigBytes is the size of the device config.
	// +optional
	DeviceConfigBytes int64 `json:"deviceConfigBytes,omitempty"`
	// Since is when the operator took the build.
	// +optional
	Since *metav1.Time `json:"since,omitempty"`
}

package v1alpha1

// DataPlaneSpec tunes the data plane's UDP transport.
// +kubebuilder:validation:XValidation:rule="!has(self.directWrites) || !self.directWrites || (has(self.directReads) && self.directReads)",message="dataPlane.directWrites needs dataPlane.directReads: clients write to the Redis servers they read"
type DataPlaneSpec struct {
	// Bundles makes the cache nodes, shims and gateways send the messages
	// that leave together for one peer as one bundle datagram instead of
	// a datagram each (about a tenth less CPU per request through the
	// gateway, docs/benchmarks.md). Every version since bundles receives
	// them; turn it on once no process of an older version is left, which
	// would drop them. Off when unset.
	// +optional
	Bundles bool `json:"bundles,omitempty"`
	// DirectReads lets clients and gateways read a key that no cache
	// holds from its shard's Redis themselves, on a pipelined connection
	// of their own, instead of through the cache node and the shim: the
	// node answers such a read at once, and the miss costs the storage
	// server one Redis GET, as behind a proxy. Writes and cache fills
	// still pass through the shim. The gateway runs transactions,
	// scripts, blocking commands, commands of several keys and those on
	// the whole keyspace at the shards' Redis only with it. Clients log
	// in as the shims do (storage.auth, storage.tls): the operator gives
	// its gateways the login, and its NetworkPolicy admits the gateways
	// and the cluster's clients to Redis's port. It needs every cache
	// node and client of a version that knows it. Off when unset.
	// +optional
	DirectReads bool `json:"directReads,omitempty"`
	// DirectWrites lets clients and gateways with direct reads also send
	// a plain SET or INCR of a key that no cache may hold straight to
	// its shard's Redis, as a script that Redis runs only while the key
	// is not in the shard's set of keys a cache may hold (package
	// dataplane/heldkeys); other writes, and writes of such keys, still
	// pass through the shim and its coherence protocol. It needs every
	// shim of a version that keeps that set (a shim older than it would
	// let a cache hold a key the set does not list), and a Redis whose
	// maxmemory policy never evicts keys without an expiry. Off when
	// unset.
	// +optional
	DirectWrites bool `json:"directWrites,omitempty"`
	// ReplayProtection is whether the data plane protects its signed
	// messages against replays (docs/dataplane.md, Replay protection).
	// Require (the default): a new cluster requires a stamp on every
	// signed message from the start; a cluster made by an older release
	// moves there by itself once every data-plane pod runs this release,
	// without restarts. Off keeps messages unstamped, as releases before
	// stamps send them: for clusters with clients of such a release
	// outside the operator's pods, which would drop stamped replies. A
	// cluster that required stamps steps down one mode at a time.
	// +kubebuilder:validation:Enum=Require;Off
	// +optional
	ReplayProtection ReplayProtectionPolicy `json:"replayProtection,omitempty"`
}

// ReplayProtectionPolicy is spec.dataPlane.replayProtection.
type ReplayProtectionPolicy string

const (
	// ReplayProtectionRequire moves the data plane to require a stamp on
	// every signed message.
	ReplayProtectionRequire ReplayProtectionPolicy = "Require"
	// ReplayProtectionOff keeps signed messages unstamped.
	ReplayProtectionOff ReplayProtectionPolicy = "Off"
)

// ReplayProtectionMode is the replay protection the published partition
// map asks of every data-plane process.
// +kubebuilder:validation:Enum=Accept;Stamp;Require
type ReplayProtectionMode string

const (
	// ReplayModeAccept: signed messages are sent unstamped and accepted
	// with or without a stamp; replays of unstamped ones are not caught.
	ReplayModeAccept ReplayProtectionMode = "Accept"
	// ReplayModeStamp: signed messages are stamped and accepted with or
	// without a stamp; a step on the way to Require.
	ReplayModeStamp ReplayProtectionMode = "Stamp"
	// ReplayModeRequire: signed messages are stamped and those without a
	// stamp are dropped; every replay of a signed message is caught.
	ReplayModeRequire ReplayProtectionMode = "Require"
)

// DataPlaneStatus is what the published partition map tells the data
// plane's processes to do.
type DataPlaneStatus struct {
	// ReplayProtection is the mode the published map asks for. A process
	// uses it once it installed that map (status.mapApplied).
	// +optional
	ReplayProtection ReplayProtectionMode `json:"replayProtection,omitempty"`
}

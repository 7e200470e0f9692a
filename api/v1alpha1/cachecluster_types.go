package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// StorageMode says who runs a cluster's Redis servers.
// +kubebuilder:validation:Enum=managed;redisOperator;external
type StorageMode string

const (
	// StorageManaged means that the operator runs one StatefulSet per rack, each pod
	// a redis-server with the storage shim beside it.
	StorageManaged StorageMode = "managed"
	// StorageRedisOperator means one OT-Container-Kit redis-operator Redis
	// per shard, with the shim as its sidecar.
	StorageRedisOperator StorageMode = "redisOperator"
	// StorageExternal means Redis servers that already exist, each fronted by a
	// shim Deployment the operator runs.
	StorageExternal StorageMode = "external"
)

// AppendOnly says whether a Redis logs every write to its append-only file
// (AOF) and how often it fsyncs the file: what the Redis servers keep across
// a crash. docs/durability.md tells, for each value, what a Redis process
// crash and a machine crash lose.
// +kubebuilder:validation:Enum=always;everysec;disabled
type AppendOnly string

const (
	// AppendOnlyAlways logs every write and fsyncs the file before Redis
	// acknowledges the write.
	AppendOnlyAlways AppendOnly = "always"
	// AppendOnlyEverySec logs every write, normally handing it to the
	// kernel before Redis acknowledges it (not while a background fsync
	// is still running), and fsyncs the file once a second.
	AppendOnlyEverySec AppendOnly = "everysec"
	// AppendOnlyDisabled keeps the data in memory only.
	AppendOnlyDisabled AppendOnly = "disabled"
)

// StorageSpec is the Redis backend, sharded into racks × shardsPerRack.
//
// +kubebuilder:validation:XValidation:rule="!has(self.mode) || self.mode != 'external' || (has(self.external) && size(self.external) == (has(self.racks) ? self.racks : 1) * (has(self.shardsPerRack) ? self.shardsPerRack : 1))",message="storage.external must list one Redis endpoint per shard: racks × shardsPerRack of them, rack by rack"
// +kubebuilder:validation:XValidation:rule="!has(self.external) || (has(self.mode) && self.mode == 'external')",message="storage.external is only for mode: external"
// +kubebuilder:validation:XValidation:rule="!has(self.persistence) || !has(self.mode) || self.mode != 'external'",message="storage.persistence is only for modes managed and redisOperator: external Redis servers keep their data where they run"
// +kubebuilder:validation:XValidation:rule="!has(self.tls) || has(self.tls.certSecretName) || (has(self.mode) && self.mode == 'external')",message="storage.tls needs tls.certSecretName in modes managed and redisOperator: the kubernetes.io/tls Secret whose tls.crt and tls.key the Redis servers serve"
// +kubebuilder:validation:XValidation:rule="!has(self.tls) || !has(self.tls.certSecretName) || !has(self.mode) || self.mode != 'external'",message="storage.tls.certSecretName is only for modes managed and redisOperator: external Redis servers serve their own certificate"
// +kubebuilder:validation:XValidation:rule="!has(self.auth) || !has(self.auth.username) || !has(self.mode) || self.mode != 'redisOperator'",message="storage.auth.username is not for mode redisOperator: the redis-operator sets the password of Redis's default user"
// +kubebuilder:validation:XValidation:rule="!has(self.appendOnly) || !has(self.mode) || self.mode == 'managed'",message="storage.appendOnly is only for mode: managed"
// +kubebuilder:validation:XValidation:rule="!has(self.backup) || !has(self.mode) || self.mode == 'managed'",message="storage.backup is only for mode: managed; back up the Redis servers of modes redisOperator and external where they run"
// +kubebuilder:validation:XValidation:rule="!has(self.persistence) || !has(self.appendOnly) || self.appendOnly != 'disabled'",message="storage.persistence is the volume of the append-only file: it needs appendOnly always or everysec"
// +kubebuilder:validation:XValidation:rule="has(self.persistence) == has(oldSelf.persistence)",message="storage.persistence cannot be added or removed once the cluster exists: the volume claims of a StatefulSet cannot change"
// +kubebuilder:validation:XValidation:rule="(has(self.mode) ? self.mode : 'managed') == (has(oldSelf.mode) ? oldSelf.mode : 'managed')",message="storage.mode cannot change once the cluster exists: the stored keys are in the Redis servers of the current mode, and the new ones would start empty; create a new CacheCluster and copy the data into it"
// +kubebuilder:validation:XValidation:rule="(has(self.racks) ? self.racks : 1) == (has(oldSelf.racks) ? oldSelf.racks : 1)",message="storage.racks cannot change once the cluster exists: it decides which shard stores each key, so stored keys would no longer be found; create a new CacheCluster and copy the data into it"
// +kubebuilder:validation:XValidation:rule="(has(self.shardsPerRack) ? self.shardsPerRack : 1) == (has(oldSelf.shardsPerRack) ? oldSelf.shardsPerRack : 1)",message="storage.shardsPerRack cannot change once the cluster exists: it decides which shard stores each key, so stored keys would no longer be found; create a new CacheCluster and copy the data into it"
// +kubebuilder:validation:XValidation:rule="(has(self.hashTags) && self.hashTags) == (has(oldSelf.hashTags) && oldSelf.hashTags)",message="storage.hashTags cannot change once the cluster exists: it decides which shard stores each key with a hash tag, so stored keys would no longer be found; create a new CacheCluster and copy the data into it"
type StorageSpec struct {
	// Mode says who runs the Redis servers (default managed). It cannot
	// change once the cluster exists.
	// +kubebuilder:default=managed
	// +optional
	Mode StorageMode `json:"mode,omitempty"`
	// Racks is the number of storage racks. It cannot change once the
	// cluster exists: with ShardsPerRack it decides where each key is
	// stored.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=4096
	// +optional
	Racks int32 `json:"racks,omitempty"`
	// ShardsPerRack is the number of Redis shards in each rack. It cannot
	// change once the cluster exists.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=256
	// +optional
	ShardsPerRack int32 `json:"shardsPerRack,omitempty"`
	// HashTags places a key with a hash tag, the text between its first
	// '{' and the first '}' after it (Redis Cluster's rule), by the tag
	// alone: keys that share a tag share a shard, so that transactions,
	// scripts and commands of several keys can run on them (the gateway
	// refuses them with CROSSSLOT for keys of several shards). It cannot
	// change once the cluster exists. Off when unset.
	// +optional
	HashTags bool `json:"hashTags,omitempty"`
	// External lists the Redis endpoints (host:port) of mode external,
	// rack by rack: shard s of rack r is entry r × shardsPerRack + s.
	// +kubebuilder:validation:MaxItems=65536
	// +kubebuilder:validation:items:Pattern=`^[A-Za-z0-9.\-\[\]:]+:[0-9]{1,5}$`
	// +optional
	External []string `json:"external,omitempty"`
	// AppendOnly is whether each managed Redis logs writes to an
	// append-only file and how often it fsyncs it: always, everysec or
	// disabled. Unset means everysec.
	// +optional
	AppendOnly AppendOnly `json:"appendOnly,omitempty"`
	// Persistence gives each managed Redis a PersistentVolumeClaim for its
	// append-only file, which then outlives the pod. Without it the file
	// is in an emptyDir volume: it survives a restart of the Redis
	// container, not the loss of the pod. In redisOperator mode it is the
	// Redis objects' volume claim template (storage.volumeClaimTemplate);
	// whether Redis writes to it is the redis-operator's configuration.
	// +optional
	Persistence *PersistenceSpec `json:"persistence,omitempty"`
	// Resources of each Redis container (managed and redisOperator modes).
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`
	// Auth is how the shims log in to the Redis servers: an ACL user and
	// a password kept in a Secret, which the shims read from a mounted
	// volume (never from their arguments). In mode managed the operator's
	// Redis servers require it; in mode redisOperator it becomes the Redis
	// objects' redisSecret.
	// +optional
	Auth *RedisAuthSpec `json:"auth,omitempty"`
	// TLS makes the shims connect to the Redis servers with TLS. In modes
	// managed and redisOperator the Redis servers serve TLS only, with
	// the certificate of tls.certSecretName.
	// +optional
	TLS *RedisTLSSpec `json:"tls,omitempty"`
	// Scheduling is where the scheduler may put the storage pods: each
	// rack's StatefulSet (managed), the shims' Deployments (external),
	// or the Redis objects (redisOperator: nodeSelector, tolerations,
	// affinity and priorityClassName only). Unset: spread over nodes and
	// zones. Standalone mode ignores it.
	// +optional
	Scheduling *PodScheduling `json:"scheduling,omitempty"`
	// Backup schedules backups of the managed Redis servers into a
	// volume claim (backup_types.go). Mode managed only.
	// +optional
	Backup *BackupSpec `json:"backup,omitempty"`
}

// RedisAuthSpec is the login of the shims to their Redis servers.
type RedisAuthSpec struct {
	// SecretName names the Secret, in the cluster's namespace, that holds
	// the password. A changed password reaches the shims as the kubelet
	// refreshes the mounted Secret; they read it at every new connection.
	// +kubebuilder:validation:MinLength=1
	SecretName string `json:"secretName"`
	// PasswordKey is the Secret's key of the password.
	// +kubebuilder:default=password
	// +optional
	PasswordKey string `json:"passwordKey,omitempty"`
	// PreviousPasswordKey is the Secret's key of a second password, which
	// the shims try when Redis refuses the first and, in mode managed,
	// the Redis servers also accept: a rotation adds the new password
	// here, makes it current with the old one here, then drops this key
	// (docs/operator.md). The key may be absent.
	// +kubebuilder:default=previous
	// +optional
	PreviousPasswordKey string `json:"previousPasswordKey,omitempty"`
	// Username is the Redis ACL user (unset: the default user, as with
	// requirepass).
	// +optional
	Username string `json:"username,omitempty"`
}

// RedisTLSSpec is how the shims verify their Redis servers over TLS.
type RedisTLSSpec struct {
	// CASecretName names a Secret, in the cluster's namespace, with the PEM
	// bundle of the CAs that sign the servers' certificates (unset: the
	// image's system roots, which the distcache image does not have).
	// +optional
	CASecretName string `json:"caSecretName,omitempty"`
	// CAKey is the Secret's key of the bundle.
	// +kubebuilder:default=ca.crt
	// +optional
	CAKey string `json:"caKey,omitempty"`
	// ServerName is the name the servers' certificates must carry (unset:
	// the host of each endpoint; in mode managed the pod's name under its
	// rack's headless Service, <pod>.<cluster>-rack-<r>.<namespace>.svc
	// (docs/operator.md); in mode redisOperator <shard>.<namespace>.svc).
	// +optional
	ServerName string `json:"serverName,omitempty"`
	// CertSecretName names a kubernetes.io/tls Secret, in the cluster's
	// namespace, whose tls.crt and tls.key the Redis servers of modes
	// managed and redisOperator serve. Without caSecretName the shims
	// verify it with the Secret's caKey (ca.crt, as cert-manager writes).
	// +optional
	CertSecretName string `json:"certSecretName,omitempty"`
}

// PersistenceSpec is the volume of a managed Redis's append-only file.
type PersistenceSpec struct {
	// Size of each shard's volume.
	Size resource.Quantity `json:"size"`
	// StorageClassName of the volume claims (the cluster's default when
	// unset).
	// +optional
	StorageClassName *string `json:"storageClassName,omitempty"`
}

// NamedLayer is a cache layer defined inside a CacheCluster.
type NamedLayer struct {
	// Name of the layer, part of its pods' names.
	// +kubebuilder:validation:Pattern=`^[a-z]([a-z0-9-]*[a-z0-9])?$`
	// +kubebuilder:validation:MaxLength=20
	Name string `json:"name"`

	CacheLayerSpec `json:",inline"`
}

// RoutingSpec is how clients choose among a key's cache nodes. Its fields
// are reserved: no component reads them yet (see each field).
type RoutingSpec struct {
	// Choices is k of power-of-k-choices: how many layers' owners of a key
	// a read compares by load. 0 (the default) means every layer.
	// Reserved: not read yet. Clients compare every layer's owner; an
	// application sets its client's routing in the client's own
	// configuration.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Choices int32 `json:"choices,omitempty"`
	// TelemetryStaleAfter is the age after which a node's reported load is
	// no longer trusted and decays towards unknown. Reserved: not read yet;
	// clients age loads by their own configuration.
	// +kubebuilder:default="1s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +optional
	TelemetryStaleAfter *metav1.Duration `json:"telemetryStaleAfter,omitempty"`
}

// CoherenceSpec tunes the two-phase write protocol (DistCache §4.3).
//
// +kubebuilder:validation:XValidation:rule="!has(self.servingLease) || duration(self.servingLease) >= duration('100ms')",message="coherence.servingLease must be at least 100ms"
// +kubebuilder:validation:XValidation:rule="!has(self.servingLease) || !has(self.previousMapGrace) || duration(self.previousMapGrace) >= duration(self.servingLease)",message="coherence.previousMapGrace must be at least coherence.servingLease"
type CoherenceSpec struct {
	// InvalidateTimeout bounds phase 1: a write whose invalidations are not
	// all acknowledged in time is refused and not applied.
	// +kubebuilder:default="2s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +optional
	InvalidateTimeout *metav1.Duration `json:"invalidateTimeout,omitempty"`
	// PreviousMapGrace is how long after a map change writes also
	// invalidate the owners under the maps it replaced.
	// +kubebuilder:default="2m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +optional
	PreviousMapGrace *metav1.Duration `json:"previousMapGrace,omitempty"`
	// ServingLease is how long a cache node serves cached values after it
	// last read the partition map and found itself Active. A node that is
	// paused, partitioned or slow stops serving when its lease runs out;
	// storage shims stop waiting for a node that left a key's ownership, or
	// was fenced, only after the lease (plus the map's delivery lag), and
	// the failover fences a member that long before failing it. Shorter
	// leases free writes of a dead node's keys sooner; every node reads its
	// map several times per lease.
	// +kubebuilder:default="1s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +optional
	ServingLease *metav1.Duration `json:"servingLease,omitempty"`
}

// FailoverSpec is when a member is remapped away and given its keys back.
//
// +kubebuilder:validation:XValidation:rule="!has(self.gracePeriod) || duration(self.gracePeriod) >= duration('100ms')",message="failover.gracePeriod must be at least 100ms"
// +kubebuilder:validation:XValidation:rule="!has(self.holdDown) || duration(self.holdDown) >= duration('1s')",message="failover.holdDown must be at least 1s"
type FailoverSpec struct {
	// GracePeriod is how long a member's pod may be not Ready before the
	// member is marked failed and its keys move to the survivors. Until
	// then each of its keys has one cache copy left, in the other layer,
	// which takes all of the key's reads: a short grace period moves the
	// hottest keys to a second copy sooner, a long one spares the
	// survivors' caches when a member comes back quickly. Kubernetes sees
	// a pod not Ready only after its readiness probe fails, so a grace
	// period shorter than the probe period remaps at the first failed probe.
	// +kubebuilder:default="30s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +optional
	GracePeriod *metav1.Duration `json:"gracePeriod,omitempty"`
	// HoldDown is how long a failed member's pod must stay Ready before the
	// member gets its keys back; it keeps a flapping node from flapping the
	// map.
	// +kubebuilder:default="60s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +optional
	HoldDown *metav1.Duration `json:"holdDown,omitempty"`
}

// ImagesSpec names the container images.
type ImagesSpec struct {
	// DistCache is the image with the distcache binary (cache node, shim).
	// Empty: the operator's data-plane image (its own image when installed
	// with the Helm chart), so that upgrading the operator rolls every
	// data-plane pod onto the new release; set it to pin a release.
	// +optional
	DistCache string `json:"distcache,omitempty"`
	// Redis is the redis-server image of managed storage.
	// +kubebuilder:default="redis:7.4"
	// +optional
	Redis string `json:"redis,omitempty"`
	// PullPolicy of every container.
	// +kubebuilder:default=IfNotPresent
	// +kubebuilder:validation:Enum=Always;IfNotPresent;Never
	// +optional
	PullPolicy corev1.PullPolicy `json:"pullPolicy,omitempty"`
}

// CacheClusterSpec is the desired state of a cache cluster.
//
// +kubebuilder:validation:XValidation:rule="has(self.layers) != has(self.layerRefs)",message="set either layers (inline) or layerRefs (CacheLayer names), not both and not neither"
// +kubebuilder:validation:XValidation:rule="!has(self.layers) || self.layers.filter(l, has(l.boundToRacks) && l.boundToRacks).size() == 0 || (self.layers.filter(l, has(l.boundToRacks) && l.boundToRacks).size() == 1 && has(self.layers[size(self.layers) - 1].boundToRacks) && self.layers[size(self.layers) - 1].boundToRacks)",message="only the lowest (last) layer may be bound to storage racks"
// +kubebuilder:validation:XValidation:rule="!has(self.layers) || self.layers.all(a, !has(a.hashSeed) || self.layers.filter(b, has(b.hashSeed) && b.hashSeed == a.hashSeed).size() == 1)",message="layers must have distinct hashSeeds: layers with the same seed partition keys alike and defeat power-of-k-choices"
// +kubebuilder:validation:XValidation:rule="!has(self.routing) || !has(self.routing.choices) || self.routing.choices <= (has(self.layers) ? size(self.layers) : (has(self.layerRefs) ? size(self.layerRefs) : 0))",message="routing.choices cannot exceed the number of layers"
// +kubebuilder:validation:XValidation:rule="!has(self.layers) || !self.layers.exists(l, has(l.capacity) && has(l.capacity.auto) && l.capacity.auto) || has(self.cacheBudget)",message="a layer with capacity.auto needs spec.cacheBudget: the entries its members share with the other auto layers"
// +kubebuilder:validation:XValidation:rule="!has(self.cacheBudget) || !has(self.layers) || self.layers.exists(l, has(l.capacity) && has(l.capacity.auto) && l.capacity.auto)",message="spec.cacheBudget sizes only layers with capacity.auto: set it on at least one layer"
// +kubebuilder:validation:XValidation:rule="!has(self.gateway) || !has(self.gateway.hostNetwork) || !self.gateway.hostNetwork || !has(self.networkPolicy) || !self.networkPolicy.enabled",message="gateway.hostNetwork cannot be used with networkPolicy.enabled: network plugins do not match host-network pods by their labels, so the policy would drop the gateway's requests to the cache nodes and shims"
type CacheClusterSpec struct {
	// Storage is the Redis backend.
	// +kubebuilder:default={}
	// +optional
	Storage StorageSpec `json:"storage,omitempty"`

	// Layers defines the cache layers inline, upper layers first.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +optional
	Layers []NamedLayer `json:"layers,omitempty"`

	// LayerRefs names CacheLayers in the same namespace, upper layers first.
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MaxLength=20
	// +kubebuilder:validation:items:Pattern=`^[a-z]([a-z0-9-]*[a-z0-9])?$`
	// +optional
	LayerRefs []string `json:"layerRefs,omitempty"`

	// Routing is how clients choose among a key's cache nodes.
	// +kubebuilder:default={}
	// +optional
	Routing RoutingSpec `json:"routing,omitempty"`
	// Coherence tunes the two-phase write protocol.
	// +kubebuilder:default={}
	// +optional
	Coherence CoherenceSpec `json:"coherence,omitempty"`
	// HotKeys tunes hot-key detection and insertion.
	// +kubebuilder:default={}
	// +optional
	HotKeys HotKeySpec `json:"hotKeys,omitempty"`
	// Failover is when failed members are remapped and restored.
	// +kubebuilder:default={}
	// +optional
	Failover FailoverSpec `json:"failover,omitempty"`
	// Images of the data plane.
	// +kubebuilder:default={}
	// +optional
	Images ImagesSpec `json:"images,omitempty"`
	// ShimResources are the resources of each storage shim container.
	// +optional
	ShimResources corev1.ResourceRequirements `json:"shimResources,omitempty"`
	// NetworkPolicy restricts who reaches the cluster's pods: the data
	// plane (unauthenticated UDP) only from the cluster's own pods and
	// from client pods, Redis from nobody else. Off when unset.
	// +optional
	NetworkPolicy *NetworkPolicySpec `json:"networkPolicy,omitempty"`
	// Gateway is the Redis-compatible gateway (`distcache gateway`,
	// docs/gateway.md): unmodified Redis clients reach the cluster through
	// its Service.
	// +kubebuilder:default={}
	// +optional
	Gateway GatewaySpec `json:"gateway,omitempty"`
	// DataPlane tunes how the cache nodes, shims and gateways talk to one
	// another (docs/dataplane.md).
	// +optional
	DataPlane *DataPlaneSpec `json:"dataPlane,omitempty"`
	// CacheBudget is the entries the members of the layers with
	// capacity.auto cache together, split among those layers from their
	// nodes' miss-ratio curves.
	// +optional
	CacheBudget *CacheBudgetSpec `json:"cacheBudget,omitempty"`
}

// NetworkPolicySpec is the NetworkPolicy the operator keeps for a cluster.
// It takes effect only where the cluster's network plugin enforces
// NetworkPolicies.
type NetworkPolicySpec struct {
	// Enabled creates the policy (and deletes it when false).
	Enabled bool `json:"enabled"`
	// Clients selects the pods, in any namespace, that may send
	// requests to the cache nodes and shims. Unset: pods labelled
	// distcache.io/client=<cluster name>.
	// +optional
	Clients *metav1.LabelSelector `json:"clients,omitempty"`
}

// MemberState is a member's state in the published partition map.
// +kubebuilder:validation:Enum=Active;Fenced;Failed
type MemberState string

const (
	// MemberActive members own their share of the layer's keys.
	MemberActive MemberState = "Active"
	// MemberFenced members keep their share but serve no cached value:
	// the operator fences a member that is not Ready before it fails it.
	MemberFenced MemberState = "Fenced"
	// MemberFailed members own no keys; their share is remapped.
	MemberFailed MemberState = "Failed"
)

// MemberStatus is one cache member as the operator sees it.
type MemberStatus struct {
	// Name is the member's name: its pod's name for software layers.
	Name string `json:"name"`
	// ID is the node id the member stamps into packet telemetry.
	ID int64 `json:"id"`
	// State in the published partition map.
	State MemberState `json:"state"`
	// Ready says whether the member's pod is Ready.
	Ready bool `json:"ready"`
	// Since is when Ready last changed as observed by the operator: the
	// start of the grace period or of the hold-down.
	// +optional
	Since *metav1.Time `json:"since,omitempty"`
}

// LayerStatus is one layer of a CacheCluster as published.
type LayerStatus struct {
	// Name of the layer.
	Name string `json:"name"`
	// HashSeed is the layer's effective ring seed.
	HashSeed string `json:"hashSeed"`
	// ReadyMembers counts members whose pods are Ready.
	ReadyMembers int32 `json:"readyMembers"`
	// FailedMembers counts members marked failed in the map.
	FailedMembers int32 `json:"failedMembers"`
	// Members lists every member.
	// +optional
	Members []MemberStatus `json:"members,omitempty"`
}

// CacheClusterStatus is the observed state of a CacheCluster.
type CacheClusterStatus struct {
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Ready, Progressing, Degraded and, while the cluster runs
	// a gateway, GatewayReady.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// MapVersion is the version of the published partition map.
	// +optional
	MapVersion int64 `json:"mapVersion,omitempty"`
	// MapConfigMap names the ConfigMap that holds the partition map.
	// +optional
	MapConfigMap string `json:"mapConfigMap,omitempty"`
	// Members counts cache members of every layer.
	// +optional
	Members int32 `json:"members,omitempty"`
	// ReadyMembers counts cache members whose pods are Ready.
	// +optional
	ReadyMembers int32 `json:"readyMembers,omitempty"`
	// LayerCount is the number of cache layers.
	// +optional
	LayerCount int32 `json:"layerCount,omitempty"`
	// Layers lists each layer's members and their states.
	// +optional
	Layers []LayerStatus `json:"layers,omitempty"`
	// ReadyShards counts storage shards that are Ready.
	// +optional
	ReadyShards int32 `json:"readyShards,omitempty"`
	// ReadyPods counts the cluster's Ready data-plane pods (cache members
	// and storage shards).
	// +optional
	ReadyPods int32 `json:"readyPods,omitempty"`
	// MapApplied counts the Ready data-plane pods whose process reports
	// (GET /status on its metrics port) that it uses the published map
	// version. The cluster is Ready only when it equals ReadyPods.
	// +optional
	MapApplied int32 `json:"mapApplied,omitempty"`
	// Persistence is what the storage keeps across crashes:
	// "aof-always/pvc", "aof-everysec/pvc" (append-only file on a
	// PersistentVolumeClaim), "aof-always/emptyDir", "aof-everysec/emptyDir"
	// (on an emptyDir volume: for the pod's lifetime), "none" (memory
	// only), "unmanaged" (redisOperator and external modes: the Redis
	// servers' own configuration decides), or "unmanaged/pvc"
	// (redisOperator with storage.persistence: a volume per shard, used as
	// the redis-operator configures Redis).
	// +optional
	Persistence string `json:"persistence,omitempty"`
	// Gateway is the Redis-compatible gateway as last observed; unset
	// while the cluster runs none (spec.gateway.replicas 0).
	// +optional
	Gateway *GatewayStatus `json:"gateway,omitempty"`
	// HotKeys is the last decision of the copies of hot keys; unset while
	// spec.hotKeys.replication is not enabled.
	// +optional
	HotKeys *HotKeyStatus `json:"hotKeys,omitempty"`
	// CacheSizing is the last split of spec.cacheBudget; unset without
	// one.
	// +optional
	CacheSizing *CacheSizingStatus `json:"cacheSizing,omitempty"`
	// Backup is the scheduled backup as last observed; unset without
	// spec.storage.backup.
	// +optional
	Backup *BackupStatus `json:"backup,omitempty"`
	// DataPlane is what the published partition map tells the data
	// plane's processes to do.
	// +optional
	DataPlane *DataPlaneStatus `json:"dataPlane,omitempty"`
}

// CacheCluster is a multi-layer cache in front of a sharded Redis backend.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=cc,categories=distcache
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyMembers`,description="Cache members whose pods are Ready"
// +kubebuilder:printcolumn:name="Members",type=integer,JSONPath=`.status.members`
// +kubebuilder:printcolumn:name="Layers",type=integer,JSONPath=`.status.layerCount`
// +kubebuilder:printcolumn:name="Map",type=integer,JSONPath=`.status.mapVersion`,description="Published partition map version"
// +kubebuilder:printcolumn:name="Applied",type=integer,JSONPath=`.status.mapApplied`,priority=1,description="Ready pods whose process uses the published map version"
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Persistence",type=string,JSONPath=`.status.persistence`,priority=1,description="What the storage keeps across crashes"
// +kubebuilder:printcolumn:name="Gateway",type=string,JSONPath=`.status.conditions[?(@.type=="GatewayReady")].status`,priority=1,description="Whether every gateway pod is Ready (GatewayReady); empty without a gateway"
// +kubebuilder:printcolumn:name="Replay",type=string,JSONPath=`.status.dataPlane.replayProtection`,priority=1,description="The replay protection the published map asks of the data plane"
// +kubebuilder:printcolumn:name="Last Backup",type=date,JSONPath=`.status.backup.lastSuccessfulTime`,priority=1,description="When the last scheduled backup completed"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 30",message="a CacheCluster's name is part of its pods' names: at most 30 characters"
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z]([a-z0-9-]*[a-z0-9])?$')",message="a CacheCluster's name is part of its pods' names: lower-case letters, digits and '-', starting with a letter"
type CacheCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   CacheClusterSpec   `json:"spec,omitempty"`
	Status CacheClusterStatus `json:"status,omitempty"`
}

// CacheClusterList is a list of CacheClusters.
//
// +kubebuilder:object:root=true
type CacheClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CacheCluster `json:"items"`
}

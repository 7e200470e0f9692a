package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ConditionType is the type of a status condition of the distcache.io
// objects. Every object reports Ready, Progressing and Degraded; a
// CacheCluster also GatewayReady while it runs a gateway.
type ConditionType string

const (
	// ConditionReady is True when the object's desired state is in place
	// and serving. A CacheCluster is Ready first when the partition map is
	// published, every cache member and every storage shard is Ready (the
	// pods the operator runs; in redisOperator mode the shards' Redis pods
	// are not observed), every switch of a switch-backed layer is
	// programmed (as its SwitchFabric's status reports) and every Ready
	// pod uses the published map: `kubectl wait --for=condition=Ready`
	// after a create waits for all of that. From then on it stays Ready
	// while every storage shard is Ready, with reason Serving when members
	// are not Ready, fenced or failed or pods have not installed a new map
	// yet: every key still has a cache node or its storage to serve it.
	// Degraded and Progressing say what is remapped and what is under
	// way. A storage shard lost makes it not Ready (ShardsNotReady).
	ConditionReady ConditionType = "Ready"
	// ConditionProgressing is True while the operator is moving towards the
	// desired state: objects being created or scaled, pods not yet ready, a
	// failed member waiting out its hold-down before it is restored.
	ConditionProgressing ConditionType = "Progressing"
	// ConditionDegraded is True while part of the object does not serve: a
	// cache member fenced (it serves no cached value) or marked failed (its
	// keys remapped to the survivors), a storage shard not ready, or a spec
	// the operator cannot act on.
	ConditionDegraded ConditionType = "Degraded"
	// ConditionGatewayReady is True when every pod of a CacheCluster's
	// Redis-compatible gateway (spec.gateway) runs the current spec and is
	// Ready: for mode Deployment, the Deployment controller has observed
	// its latest spec and replicas pods are updated and Ready; for mode
	// DaemonSet, the DaemonSet controller has observed it and every node
	// that should run a gateway pod (at least one) runs an updated, Ready
	// one. False otherwise, with reason PodsNotReady (some pods not Ready)
	// or Creating (a rollout under way), and a message counting the Ready
	// pods. The condition is absent while the cluster runs no gateway
	// (spec.gateway.replicas 0). The cluster's Ready condition does not
	// depend on it: Ready is about the data plane, which the client
	// library reaches without the gateway; wait for both when clients use
	// the gateway (`kubectl wait --for=condition=GatewayReady`).
	ConditionGatewayReady ConditionType = "GatewayReady"
)

// Reasons of the conditions, in CamelCase as metav1.Condition requires.
const (
	// ReasonReconciled: the desired state is in place.
	ReasonReconciled = "Reconciled"
	// ReasonServing: the cluster serves every key while part of it is
	// remapped or starting (Ready True; Degraded and Progressing say
	// what).
	ReasonServing = "Serving"
	// ReasonCreating: objects are being created or updated.
	ReasonCreating = "Creating"
	// ReasonPodsNotReady: some pods are not Ready yet.
	ReasonPodsNotReady = "PodsNotReady"
	// ReasonMapNotApplied: the partition map is published, and some Ready
	// pods' processes do not use it yet (status.mapApplied).
	ReasonMapNotApplied = "MapNotApplied"
	// ReasonShardsNotReady: a storage shard that was Ready is not any more:
	// the writes and misses of its keys fail until it is back (Ready False
	// and Degraded True).
	ReasonShardsNotReady = "ShardsNotReady"
	// ReasonMembersFailed: members are marked failed in the partition map.
	ReasonMembersFailed = "MembersFailed"
	// ReasonMembersFenced: members are fenced in the partition map: they
	// keep their keys and serve no cached value.
	ReasonMembersFenced = "MembersFenced"
	// ReasonMembersRecovering: failed members are Ready again and wait out
	// the hold-down before they are restored.
	ReasonMembersRecovering = "MembersRecovering"
	// ReasonRollingOut: pods run an older template of their StatefulSet;
	// the operator rolls them one at a time, in place when only images
	// changed.
	ReasonRollingOut = "RollingOut"
	// ReasonLayerNotFound: a layerRef names no CacheLayer.
	ReasonLayerNotFound = "LayerNotFound"
	// ReasonFabricNotFound: a switch-backed layer names a SwitchFabric that
	// does not exist or is being deleted: the layer has no member, or its
	// switches are fenced and leave the map.
	ReasonFabricNotFound = "FabricNotFound"
	// ReasonInvalidTopology: the spec passed the API's validation but the
	// topology cannot be built from it (e.g. layers that reference each
	// other's names twice).
	ReasonInvalidTopology = "InvalidTopology"
	// ReasonCacheBudgetTooSmall: spec.cacheBudget cannot give every member
	// of the layers of capacity.auto an entry.
	ReasonCacheBudgetTooSmall = "CacheBudgetTooSmall"
	// ReasonDriverUnavailable: a SwitchFabric's driver cannot run the cache
	// switch controller (the onos driver: ONOS's REST API has no register
	// writes, packet-outs or digests).
	ReasonDriverUnavailable = "DriverUnavailable"
	// ReasonSwitchUnreachable: the operator has no session with a switch
	// (it does not answer, or its session broke).
	ReasonSwitchUnreachable = "SwitchUnreachable"
	// ReasonMastershipLost: another controller claimed a switch with a
	// higher election id and is its primary: the operator cannot program
	// it until that controller leaves.
	ReasonMastershipLost = "MastershipLost"
	// ReasonPipelineMismatch: a switch refused the pipeline pushed to it,
	// or the fabric names a pipeline this operator does not have.
	ReasonPipelineMismatch = "PipelineMismatch"
	// ReasonP4InfoMismatch: the P4Info of a SwitchFabric's compiled
	// program (spec.pipelineSource) is not the pipeline's, or not the one
	// the switches run: nothing of it is pushed, and the message lists
	// the differences.
	ReasonP4InfoMismatch = "P4InfoMismatch"
	// ReasonPipelineSourceInvalid: a SwitchFabric's spec.pipelineSource
	// cannot be read: the ConfigMap, Secret or artefact is missing, lacks
	// a key or file, or its P4Info does not parse.
	ReasonPipelineSourceInvalid = "PipelineSourceInvalid"
	// ReasonNotInUse: no CacheCluster's switch-backed layer uses a
	// SwitchFabric, so its switches are not programmed.
	ReasonNotInUse = "NotInUse"
	// ReasonFabricShared: switch-backed layers of several CacheClusters
	// use one SwitchFabric; a switch caches for one cluster.
	ReasonFabricShared = "FabricShared"
	// ReasonTLSSecretInvalid: a SwitchFabric's tlsSecretRef names no
	// Secret, or one without a usable tls.crt, tls.key and ca.crt.
	ReasonTLSSecretInvalid = "TLSSecretInvalid"
	// ReasonSecretsForbidden: the operator holds no permission on Secrets
	// in the object's namespace (the Helm chart's secretNamespaces), so it
	// cannot create a CacheCluster's data-plane key or read a
	// SwitchFabric's TLS Secret.
	ReasonSecretsForbidden = "SecretsForbidden"
	// ReasonDeleting: the object is being deleted.
	ReasonDeleting = "Deleting"
)

// SetCondition sets condition t of an object at generation to True (ok)
// or False with reason and message, keeping its transition time when the
// status does not change.
func SetCondition(conds *[]metav1.Condition, generation int64, t ConditionType, ok bool, reason, msg string) {
	st := metav1.ConditionFalse
	if ok {
		st = metav1.ConditionTrue
	}
	meta.SetStatusCondition(conds, metav1.Condition{
		Type: string(t), Status: st, Reason: reason, Message: msg, ObservedGeneration: generation,
	})
}

package v1alpha1_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/distcache/distcache/api/v1alpha1"
)

// Messages of the CEL rules: the XValidation markers of the *_types.go files.
const (
	msgLayersXorRefs   = "set either layers (inline) or layerRefs (CacheLayer names), not both and not neither"
	msgOnlyLowestBound = "only the lowest (last) layer may be bound to storage racks"
	msgDistinctSeeds   = "layers must have distinct hashSeeds: layers with the same seed partition keys alike and defeat power-of-k-choices"
	msgChoices         = "routing.choices cannot exceed the number of layers"
	msgExternalCount   = "storage.external must list one Redis endpoint per shard: racks × shardsPerRack of them, rack by rack"
	msgExternalOnly    = "storage.external is only for mode: external"
	msgPersistenceOnly = "storage.persistence is only for modes managed and redisOperator"
	msgAppendOnlyOnly  = "storage.appendOnly is only for mode: managed"
	msgAuthUsername    = "storage.auth.username is not for mode redisOperator"
	msgDirectWrites    = "dataPlane.directWrites needs dataPlane.directReads"
	msgTLSNeedsCert    = "storage.tls needs tls.certSecretName in modes managed and redisOperator"
	msgTLSCertOnly     = "storage.tls.certSecretName is only for modes managed and redisOperator"
	msgPersistenceAOF  = "storage.persistence is the volume of the append-only file: it needs appendOnly always or everysec"
	msgGracePeriod     = "failover.gracePeriod must be at least 100ms"
	msgHoldDown        = "failover.holdDown must be at least 1s"
	msgServingLease    = "coherence.servingLease must be at least 100ms"
	msgGraceOverLease  = "coherence.previousMapGrace must be at least coherence.servingLease"
	msgSwitchOnly      = "switch is only for a layer with backend: switch"
	msgSwitchNeeded    = "a layer with backend: switch needs switch.fabricRef and switch.role"
	msgBoundNoNodes    = "a layer bound to storage racks has one node per rack: leave nodes unset"
	msgNodesRequired   = "nodes is required unless the layer is bound to storage racks (boundToRacks: true)"
	msgClientLeafLayer = "client-leaf switches cache nothing and cannot serve a layer"
	msgONOSNeeded      = "the onos driver needs onos.endpoint"
	msgONOSOnly        = "onos is only for driver: onos"
	msgP4RuntimeNeeded = "the stratum driver needs a p4runtimeAddress for every switch"
	msgDeviceIDs       = "switch deviceIDs must be unique in a fabric"
	msgRackOnlyLeaf    = "only storage-leaf switches serve a rack"
	msgClusterName     = "a CacheCluster's name is part of its pods' names: at most 30 characters"
	msgLayerName       = "a CacheLayer's name is part of its pods' names: at most 20 characters"
	msgHostNetworkMode = "gateway.hostNetwork is only for mode: DaemonSet"
	msgDaemonSetScale  = "gateway.replicas cannot be set with mode: DaemonSet, which runs one gateway pod on every node"
	msgHostNetworkPort = "gateway.port must be at least 1024 with hostNetwork"
	msgHostNetworkNP   = "gateway.hostNetwork cannot be used with networkPolicy.enabled"
	msgCopiesMinRate   = "hotKeys.replication.minRate must be below storageCapacity (20000 when unset)"
	msgCopiesInterval  = "hotKeys.replication.interval must be at least 1s"
	msgAutoNeedsBudget = "a layer with capacity.auto needs spec.cacheBudget"
	msgBudgetNeedsAuto = "spec.cacheBudget sizes only layers with capacity.auto"
	msgBudgetInterval  = "cacheBudget.interval must be at least 1s"
)

// ruleCase is an object that breaks exactly one CEL rule: the API server
// must refuse it with one cause, naming field, whose message has msg.
type ruleCase struct {
	name  string
	obj   client.Object
	field string
	msg   string
}

// external is n Redis endpoints.
func external(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "redis-" + string(rune('a'+i)) + ".example:6379"
	}
	return out
}

// persistence is a managed Redis volume of 1Gi.
func persistence() *v1alpha1.PersistenceSpec {
	return &v1alpha1.PersistenceSpec{Size: resource.MustParse("1Gi")}
}

// layerRuleCases break each CacheLayerSpec rule once in an inline layer of
// a CacheCluster and once in a CacheLayer.
func layerRuleCases() []ruleCase {
	rules := []struct {
		name string
		opts []layerOption
		msg  string
	}{
		{"switch without backend switch", []layerOption{withSwitch("fabric", v1alpha1.RoleSpine)}, msgSwitchOnly},
		{"backend switch without switch", []layerOption{withBackend(v1alpha1.BackendSwitch)}, msgSwitchNeeded},
		{"bound with nodes", []layerOption{withBoundToRacks(), withNodes(2)}, msgBoundNoNodes},
		{"unbound without nodes", []layerOption{withoutNodes()}, msgNodesRequired},
		{"client-leaf role", []layerOption{withBackend(v1alpha1.BackendSwitch), withSwitch("fabric", v1alpha1.RoleClientLeaf)}, msgClientLeafLayer},
	}
	var out []ruleCase
	for _, r := range rules {
		out = append(out,
			ruleCase{"inline layer: " + r.name, newCluster(withLayers(newLayer("spine", r.opts...))), "spec.layers[0]", r.msg},
			ruleCase{"CacheLayer: " + r.name, newCacheLayer(r.opts...), "spec", r.msg})
	}
	return out
}

// celRuleCases are every ruleCase: the rules of CacheClusterSpec,
// StorageSpec, FailoverSpec, the kinds' names and SwitchFabricSpec, and
// layerRuleCases.
func celRuleCases() []ruleCase {
	spine, leaf := newLayer("spine"), newLayer("leaf", withBoundToRacks())
	longLayer := newCacheLayer()
	longLayer.Name = uniqueNameOfLength("cl", 21)
	cases := []ruleCase{
		{"layers and layerRefs", newCluster(withLayerRefs("spine"), withLayers(spine)), "spec", msgLayersXorRefs},
		{"neither layers nor layerRefs", newCluster(withLayers()), "spec", msgLayersXorRefs},
		{"bound layer above the lowest", newCluster(withLayers(leaf, spine)), "spec", msgOnlyLowestBound},
		{"two bound layers", newCluster(withLayers(newLayer("a", withBoundToRacks()), leaf)), "spec", msgOnlyLowestBound},
		{"same hashSeed twice", newCluster(withLayers(newLayer("a", withHashSeed(7)), newLayer("b"), newLayer("c", withHashSeed(7)))), "spec", msgDistinctSeeds},
		{"choices above inline layers", newCluster(withRouting(func(r *v1alpha1.RoutingSpec) { r.Choices = 2 })), "spec", msgChoices},
		{"choices above layerRefs", newCluster(withLayerRefs("a", "b"), withRouting(func(r *v1alpha1.RoutingSpec) { r.Choices = 3 })), "spec", msgChoices},
		{"external without endpoints", newCluster(withStorage(func(s *v1alpha1.StorageSpec) { s.Mode = v1alpha1.StorageExternal })), "spec.storage", msgExternalCount},
		{"external with too few endpoints", newCluster(withStorage(func(s *v1alpha1.StorageSpec) {
			s.Mode, s.Racks, s.ShardsPerRack, s.External = v1alpha1.StorageExternal, 2, 2, external(3)
		})), "spec.storage", msgExternalCount},
		{"endpoints in managed mode", newCluster(withStorage(func(s *v1alpha1.StorageSpec) { s.External = external(1) })), "spec.storage", msgExternalOnly},
		{"persistence in external mode", newCluster(withStorage(func(s *v1alpha1.StorageSpec) {
			s.Mode, s.External, s.Persistence = v1alpha1.StorageExternal, []string{"192.0.2.1:6379"}, persistence()
		})), "spec.storage", msgPersistenceOnly},
		{"direct writes without direct reads", newCluster(withDataPlane(v1alpha1.DataPlaneSpec{DirectWrites: true})), "spec.dataPlane", msgDirectWrites},
		{"auth username in redisOperator mode", newCluster(withStorage(func(s *v1alpha1.StorageSpec) {
			s.Mode, s.Auth = v1alpha1.StorageRedisOperator, &v1alpha1.RedisAuthSpec{SecretName: "redis-login", Username: "shim"}
		})), "spec.storage", msgAuthUsername},
		{"tls without a certificate in managed mode", newCluster(withStorage(func(s *v1alpha1.StorageSpec) {
			s.TLS = &v1alpha1.RedisTLSSpec{CASecretName: "redis-ca"}
		})), "spec.storage", msgTLSNeedsCert},
		{"tls without a certificate in redisOperator mode", newCluster(withStorage(func(s *v1alpha1.StorageSpec) {
			s.Mode, s.TLS = v1alpha1.StorageRedisOperator, &v1alpha1.RedisTLSSpec{ServerName: "redis.example"}
		})), "spec.storage", msgTLSNeedsCert},
		{"tls certificate in external mode", newCluster(withStorage(func(s *v1alpha1.StorageSpec) {
			s.Mode, s.External = v1alpha1.StorageExternal, external(1)
			s.TLS = &v1alpha1.RedisTLSSpec{CertSecretName: "redis-tls"}
		})), "spec.storage", msgTLSCertOnly},
		{"appendOnly in redisOperator mode", newCluster(withStorage(func(s *v1alpha1.StorageSpec) {
			s.Mode, s.AppendOnly = v1alpha1.StorageRedisOperator, v1alpha1.AppendOnlyEverySec
		})), "spec.storage", msgAppendOnlyOnly},
		{"appendOnly in external mode", newCluster(withStorage(func(s *v1alpha1.StorageSpec) {
			s.Mode, s.External, s.AppendOnly = v1alpha1.StorageExternal, external(1), v1alpha1.AppendOnlyAlways
		})), "spec.storage", msgAppendOnlyOnly},
		{"persistence with appendOnly disabled", newCluster(withStorage(func(s *v1alpha1.StorageSpec) {
			s.AppendOnly, s.Persistence = v1alpha1.AppendOnlyDisabled, persistence()
		})), "spec.storage", msgPersistenceAOF},
		{"gracePeriod under 100ms", newCluster(withFailover(func(f *v1alpha1.FailoverSpec) { f.GracePeriod = duration("99ms") })), "spec.failover", msgGracePeriod},
		{"holdDown of 0s", newCluster(withFailover(func(f *v1alpha1.FailoverSpec) { f.HoldDown = duration("0s") })), "spec.failover", msgHoldDown},
		{"servingLease under 100ms", newCluster(withCoherence(func(c *v1alpha1.CoherenceSpec) { c.ServingLease = duration("99ms") })), "spec.coherence", msgServingLease},
		{"previousMapGrace under servingLease", newCluster(withCoherence(func(c *v1alpha1.CoherenceSpec) {
			c.ServingLease, c.PreviousMapGrace = duration("5s"), duration("4s")
		})), "spec.coherence", msgGraceOverLease},
		{"gateway hostNetwork with mode Deployment", newCluster(withGateway(func(g *v1alpha1.GatewaySpec) { g.HostNetwork = true })),
			"spec.gateway", msgHostNetworkMode},
		{"gateway DaemonSet with 3 replicas", newCluster(withGateway(func(g *v1alpha1.GatewaySpec) {
			daemonSetGateway(false)(g)
			g.Replicas = ptr.To[int32](3)
		})), "spec.gateway", msgDaemonSetScale},
		{"gateway on the host network on port 80", newCluster(withGateway(func(g *v1alpha1.GatewaySpec) {
			daemonSetGateway(true)(g)
			g.Port = 80
		})), "spec.gateway", msgHostNetworkPort},
		{"gateway on the host network with the NetworkPolicy", newCluster(withGateway(daemonSetGateway(true)), withNetworkPolicy()),
			"spec", msgHostNetworkNP},
		{"replication minRate at storageCapacity", newCluster(withReplication(func(r *v1alpha1.HotKeyReplicationSpec) {
			r.MinRate, r.StorageCapacity = 5000, 5000
		})), "spec.hotKeys.replication", msgCopiesMinRate},
		{"replication minRate above the default storageCapacity", newCluster(withReplication(func(r *v1alpha1.HotKeyReplicationSpec) { r.MinRate = 20000 })),
			"spec.hotKeys.replication", msgCopiesMinRate},
		{"replication interval under 1s", newCluster(withReplication(func(r *v1alpha1.HotKeyReplicationSpec) { r.Interval = duration("999ms") })),
			"spec.hotKeys.replication", msgCopiesInterval},
		{"auto layer without a budget", newCluster(withLayers(newLayer("spine", withAutoCapacity()))), "spec", msgAutoNeedsBudget},
		{"budget without an auto layer", newCluster(withCacheBudget(1000, "")), "spec", msgBudgetNeedsAuto},
		{"budget interval under 1s", newCluster(withLayers(newLayer("spine", withAutoCapacity())), withCacheBudget(1000, "500ms")), "spec.cacheBudget", msgBudgetInterval},
		{"CacheCluster name of 31 characters", newCluster(withName(uniqueNameOfLength("cc", 31))), "<nil>", msgClusterName},
		{"CacheLayer name of 21 characters", longLayer, "<nil>", msgLayerName},
		{"onos driver without onos", newFabric(withDriver(v1alpha1.DriverONOS)), "spec", msgONOSNeeded},
		{"onos with stratum driver", newFabric(withONOS("http://onos:8181/onos/v1")), "spec", msgONOSOnly},
		{"stratum switch without p4runtimeAddress", newFabric(withSwitchEdit(1, func(s *v1alpha1.Switch) { s.P4RuntimeAddress = "" })), "spec", msgP4RuntimeNeeded},
		{"duplicate deviceID", newFabric(withSwitchEdit(1, func(s *v1alpha1.Switch) { s.DeviceID = 1 })), "spec", msgDeviceIDs},
		{"spine switch with a rack", newFabric(withSwitchEdit(0, func(s *v1alpha1.Switch) { s.Rack = ptr.To[int32](0) })), "spec", msgRackOnlyLeaf},
	}
	cases = append(cases, layerRuleCases()...)
	cases = append(cases, pipelineRuleCases()...)
	cases = append(cases, backupRuleCases()...)
	return append(cases, schedulingRuleCases()...)
}

func TestCELRulesReject(t *testing.T) {
	for _, tc := range celRuleCases() {
		t.Run(tc.name, func(t *testing.T) {
			err := create(t, tc.obj)
			cs := invalidCauses(t, err)
			if len(cs) != 1 || cs[0].Field != tc.field || !strings.Contains(cs[0].Message, tc.msg) {
				t.Fatalf("Create: got %v (causes %+v), want only %s: %q", err, cs, tc.field, tc.msg)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("Create: error %q does not say %q", err, tc.msg)
			}
		})
	}
}

// schemaCase is an object that breaks an OpenAPI marker: the API server
// must refuse it with a cause naming field whose message has every want.
type schemaCase struct {
	name  string
	obj   client.Object
	field string
	want  []string
}

// schemaCases are objects that each break an OpenAPI marker.
func schemaCases(t *testing.T) []schemaCase {
	t.Helper()
	tooMany := make([]v1alpha1.NamedLayer, 9)
	for i := range tooMany {
		tooMany[i] = newLayer("l" + string(rune('a'+i)))
	}
	cases := []schemaCase{
		{"racks 0", withRawField(t, newCluster(), int64(0), "spec", "storage", "racks"), "spec.storage.racks",
			[]string{"spec.storage.racks", "should be greater than or equal to 1"}},
		{"racks above 4096", newCluster(withStorage(func(s *v1alpha1.StorageSpec) { s.Racks = 4097 })), "spec.storage.racks",
			[]string{"spec.storage.racks", "should be less than or equal to 4096"}},
		{"shardsPerRack 0", withRawField(t, newCluster(), int64(0), "spec", "storage", "shardsPerRack"), "spec.storage.shardsPerRack",
			[]string{"spec.storage.shardsPerRack", "should be greater than or equal to 1"}},
		{"replication maxCopies above 64", newCluster(withReplication(func(r *v1alpha1.HotKeyReplicationSpec) { r.MaxCopies = 65 })),
			"spec.hotKeys.replication.maxCopies", []string{"spec.hotKeys.replication.maxCopies", "should be less than or equal to 64"}},
		{"replication hysteresisPercent above 100", newCluster(withReplication(func(r *v1alpha1.HotKeyReplicationSpec) { r.HysteresisPercent = 101 })),
			"spec.hotKeys.replication.hysteresisPercent", []string{"spec.hotKeys.replication.hysteresisPercent", "should be less than or equal to 100"}},
		{"replication negative headroomPercent", newCluster(withReplication(func(r *v1alpha1.HotKeyReplicationSpec) { r.HeadroomPercent = ptr.To[int32](-1) })),
			"spec.hotKeys.replication.headroomPercent", []string{"spec.hotKeys.replication.headroomPercent", "should be greater than or equal to 0"}},
		{"unknown appendOnly", newCluster(withStorage(func(s *v1alpha1.StorageSpec) { s.AppendOnly = "no" })), "spec.storage.appendOnly",
			[]string{`Unsupported value: "no"`, `supported values: "always", "everysec", "disabled"`}},
		{"unknown storage mode", newCluster(withStorage(func(s *v1alpha1.StorageSpec) { s.Mode = "sentinel" })), "spec.storage.mode",
			[]string{`Unsupported value: "sentinel"`, `supported values: "managed", "redisOperator", "external"`}},
		{"replayProtection not Require or Off", newCluster(withDataPlane(v1alpha1.DataPlaneSpec{ReplayProtection: "Stamp"})), "spec.dataPlane.replayProtection",
			[]string{`Unsupported value: "Stamp"`, `supported values: "Require", "Off"`}},
		{"external endpoint without port", newCluster(withStorage(func(s *v1alpha1.StorageSpec) {
			s.Mode, s.External = v1alpha1.StorageExternal, []string{"redis.example"}
		})), "spec.storage.external[0]", []string{"spec.storage.external[0]", "should match"}},
		{"upper-case layer name", newCluster(withLayers(newLayer("Spine"))), "spec.layers[0].name",
			[]string{"spec.layers[0].name", "should match"}},
		{"layer name of 21 characters", newCluster(withLayers(newLayer(strings.Repeat("a", 21)))), "spec.layers[0].name",
			[]string{"spec.layers[0].name", "may not be more than 20"}},
		{"duplicate layer name", newCluster(withLayers(newLayer("spine"), newLayer("spine"))), "spec.layers[1]",
			[]string{"Duplicate value", `"name":"spine"`}},
		{"nine layers", newCluster(withLayers(tooMany...)), "spec.layers", []string{"spec.layers", "must have at most 8 items"}},
		{"duplicate layerRef", newCluster(withLayerRefs("a", "a")), "spec.layerRefs[1]", []string{"Duplicate value", `"a"`}},
		{"duration that does not parse", withRawField(t, newCluster(), "abc", "spec", "routing", "telemetryStaleAfter"),
			"spec.routing.telemetryStaleAfter", []string{"spec.routing.telemetryStaleAfter", "should match"}},
		{"negative duration", withRawField(t, newCluster(), "-1s", "spec", "coherence", "invalidateTimeout"),
			"spec.coherence.invalidateTimeout", []string{"spec.coherence.invalidateTimeout", "should match"}},
		{"layerRef that is no layer name", newCluster(withLayerRefs("9.lay")), "spec.layerRefs[0]",
			[]string{"spec.layerRefs[0]", "should match"}},
		{"layer nodes 0", withRawField(t, newCacheLayer(), int64(0), "spec", "nodes"), "spec.nodes",
			[]string{"spec.nodes", "should be greater than or equal to 1"}},
		{"unknown switch role", newCacheLayer(withSwitchBackend("fabric", "core")), "spec.switch.role",
			[]string{`Unsupported value: "core"`, `supported values: "spine", "storage-leaf", "client-leaf"`}},
		{"unknown pull policy", newCluster(withImages(func(i *v1alpha1.ImagesSpec) { i.PullPolicy = "Sometimes" })), "spec.images.pullPolicy",
			[]string{`Unsupported value: "Sometimes"`}},
		{"p4runtimeAddress without port", newFabric(withSwitchEdit(0, func(s *v1alpha1.Switch) { s.P4RuntimeAddress = "192.0.2.1" })),
			"spec.switches[0].p4runtimeAddress", []string{"spec.switches[0].p4runtimeAddress", "should match"}},
		{"duplicate switch name", newFabric(withSwitchEdit(1, func(s *v1alpha1.Switch) { s.Name = "spine-0" })), "spec.switches[1]",
			[]string{"Duplicate value", `"name":"spine-0"`}},
		{"onos endpoint without scheme", newFabric(withDriver(v1alpha1.DriverONOS), withONOS("onos:8181")), "spec.onos.endpoint",
			[]string{"spec.onos.endpoint", "should match"}},
		{"unknown driver", newFabric(withDriver("p4rt")), "spec.driver", []string{`Unsupported value: "p4rt"`}},
		{"unknown gateway mode", newCluster(withGateway(func(g *v1alpha1.GatewaySpec) { g.Mode = "StatefulSet" })), "spec.gateway.mode",
			[]string{`Unsupported value: "StatefulSet"`, `supported values: "Deployment", "DaemonSet"`}},
		{"two spread constraints on one key", newCluster(withGateway(func(g *v1alpha1.GatewaySpec) {
			g.Scheduling = &v1alpha1.PodScheduling{TopologySpreadConstraints: []corev1.TopologySpreadConstraint{
				spread("kubernetes.io/hostname", 1, corev1.ScheduleAnyway), spread("kubernetes.io/hostname", 2, corev1.ScheduleAnyway)}}
		})), "spec.gateway.scheduling.topologySpreadConstraints[1]", []string{"Duplicate value", `"topologyKey":"kubernetes.io/hostname"`}},
		{"nodeSelector of 33 labels", newCluster(withGateway(func(g *v1alpha1.GatewaySpec) {
			g.Scheduling = &v1alpha1.PodScheduling{NodeSelector: map[string]string{}}
			for i := range 33 {
				g.Scheduling.NodeSelector[fmt.Sprintf("label-%d", i)] = "x"
			}
		})), "spec.gateway.scheduling.nodeSelector", []string{"spec.gateway.scheduling.nodeSelector", "must have at most 32 items"}},
	}
	cases = append(cases, pipelineSchemaCases()...)
	return append(cases, backupSchemaCases(t)...)
}

func TestSchemaRejects(t *testing.T) {
	for _, tc := range schemaCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			err := create(t, tc.obj)
			for _, c := range invalidCauses(t, err) {
				if c.Field == tc.field {
					for _, w := range tc.want {
						if !strings.Contains(err.Error(), w) {
							t.Errorf("Create: error %q does not say %q", err, w)
						}
					}
					return
				}
			}
			t.Fatalf("Create: got %v, want a cause for %s", err, tc.field)
		})
	}
}

// validCase is an object the API server must accept.
type validCase struct {
	name string
	obj  client.Object
}

// validCases are valid objects of every kind, each at the edge of a rule.
func validCases() []validCase {
	clusterName30 := uniqueNameOfLength("cc", 30)
	layer20 := newCacheLayer()
	layer20.Name = uniqueNameOfLength("cl", 20)
	cases := []validCase{
		{"minimal CacheCluster", newCluster()},
		{"CacheCluster name of 30 characters", newCluster(withName(clusterName30))},
		{"external storage with one endpoint per shard", newCluster(withStorage(func(s *v1alpha1.StorageSpec) {
			s.Mode, s.Racks, s.ShardsPerRack, s.External = v1alpha1.StorageExternal, 2, 3, external(6)
		}))},
		{"external storage with a password and TLS", newCluster(withStorage(func(s *v1alpha1.StorageSpec) {
			s.Mode, s.External = v1alpha1.StorageExternal, external(1)
			s.Auth = &v1alpha1.RedisAuthSpec{SecretName: "redis-login", Username: "shim"}
			s.TLS = &v1alpha1.RedisTLSSpec{CASecretName: "redis-ca"}
		}))},
		{"managed storage with a password and TLS", newCluster(withStorage(func(s *v1alpha1.StorageSpec) {
			s.Auth = &v1alpha1.RedisAuthSpec{SecretName: "redis-login", Username: "shim", PreviousPasswordKey: "next"}
			s.TLS = &v1alpha1.RedisTLSSpec{CertSecretName: "redis-tls"}
		}))},
		{"redisOperator storage with a password and TLS", newCluster(withStorage(func(s *v1alpha1.StorageSpec) {
			s.Mode = v1alpha1.StorageRedisOperator
			s.Auth = &v1alpha1.RedisAuthSpec{SecretName: "redis-login"}
			s.TLS = &v1alpha1.RedisTLSSpec{CertSecretName: "redis-tls", CASecretName: "redis-ca"}
		}))},
		{"redisOperator storage", newCluster(withStorage(func(s *v1alpha1.StorageSpec) { s.Mode = v1alpha1.StorageRedisOperator }))},
		{"redisOperator storage with persistence", newCluster(withStorage(func(s *v1alpha1.StorageSpec) {
			s.Mode, s.Persistence = v1alpha1.StorageRedisOperator, persistence()
		}))},
		{"managed storage with persistence", newCluster(withStorage(func(s *v1alpha1.StorageSpec) { s.Persistence = persistence() }))},
		{"managed storage with appendOnly always on a volume", newCluster(withStorage(func(s *v1alpha1.StorageSpec) {
			s.AppendOnly, s.Persistence = v1alpha1.AppendOnlyAlways, persistence()
		}))},
		{"managed storage with appendOnly everysec", newCluster(withStorage(func(s *v1alpha1.StorageSpec) { s.AppendOnly = v1alpha1.AppendOnlyEverySec }))},
		{"managed storage with appendOnly disabled", newCluster(withStorage(func(s *v1alpha1.StorageSpec) { s.AppendOnly = v1alpha1.AppendOnlyDisabled }))},
		{"bound lowest layer", newCluster(withLayers(newLayer("spine"), newLayer("leaf", withBoundToRacks())))},
		{"only layer bound", newCluster(withLayers(newLayer("leaf", withBoundToRacks())))},
		{"distinct hashSeeds", newCluster(withLayers(newLayer("a", withHashSeed(1)), newLayer("b", withHashSeed(2)), newLayer("c")))},
		{"choices equal to the layers", newCluster(withLayers(newLayer("a"), newLayer("b")), withRouting(func(r *v1alpha1.RoutingSpec) { r.Choices = 2 }))},
		{"layerRefs instead of inline layers", newCluster(withLayerRefs("spine", "leaf"), withRouting(func(r *v1alpha1.RoutingSpec) { r.Choices = 2 }))},
		{"replication with every knob at its edge", newCluster(withReplication(func(r *v1alpha1.HotKeyReplicationSpec) {
			r.Interval, r.MaxCopies, r.MinRate, r.NodeCapacity, r.StorageCapacity = duration("1s"), 64, 999, 1, 1000
			r.CoherenceCostPercent, r.HysteresisPercent, r.HeadroomPercent = 10000, 100, ptr.To[int32](0)
		}))},
		{"auto layers with a budget", newCluster(withLayers(newLayer("spine", withAutoCapacity()), newLayer("leaf", withBoundToRacks(), withAutoCapacity())),
			withCacheBudget(5000, "1s"))},
		{"replication off with a minRate for later", newCluster(withReplication(func(r *v1alpha1.HotKeyReplicationSpec) { r.Enabled, r.MinRate = false, 19999 }))},
		{"failover of exactly 1s", newCluster(withFailover(func(f *v1alpha1.FailoverSpec) { f.GracePeriod, f.HoldDown = duration("1s"), duration("1000ms") }))},
		{"inline switch-backed layer", newCluster(withLayers(newLayer("spine", withSwitchBackend("fabric", v1alpha1.RoleSpine))))},
		{"gateway DaemonSet with the default replicas", newCluster(withGateway(daemonSetGateway(false)))},
		{"gateway DaemonSet with replicas 1", newCluster(withGateway(func(g *v1alpha1.GatewaySpec) {
			daemonSetGateway(false)(g)
			g.Replicas = ptr.To[int32](1)
		}))},
		{"gateway DaemonSet with replicas 0: no gateway", newCluster(withGateway(func(g *v1alpha1.GatewaySpec) {
			daemonSetGateway(true)(g)
			g.Replicas = ptr.To[int32](0)
		}))},
		{"gateway on the host network on port 1024", newCluster(withGateway(func(g *v1alpha1.GatewaySpec) {
			daemonSetGateway(true)(g)
			g.Port = 1024
		}))},
		{"gateway DaemonSet on the pod network with the NetworkPolicy", newCluster(withGateway(daemonSetGateway(false)), withNetworkPolicy())},
		{"gateway Deployment of 3 replicas with the NetworkPolicy", newCluster(withGateway(func(g *v1alpha1.GatewaySpec) {
			g.Replicas = ptr.To[int32](3)
		}), withNetworkPolicy())},
		{"minimal CacheLayer", newCacheLayer()},
		{"CacheLayer name of 20 characters", layer20},
		{"bound CacheLayer", newCacheLayer(withBoundToRacks())},
		{"switch-backed CacheLayer", newCacheLayer(withSwitchBackend("fabric", v1alpha1.RoleSpine))},
		{"switch-backed CacheLayer without nodes: the fabric gives the members", newCacheLayer(withoutNodes(), withSwitchBackend("fabric", v1alpha1.RoleSpine))},
		{"bound storage-leaf CacheLayer", newCacheLayer(withSwitchBackend("fabric", v1alpha1.RoleStorageLeaf), withBoundToRacks())},
		{"stratum fabric", newFabric()},
		{"onos fabric with onos.endpoint", newFabric(withDriver(v1alpha1.DriverONOS), withONOS("https://onos.example:8181/onos/v1"),
			withSwitches(v1alpha1.Switch{Name: "s1", DeviceID: 1, Role: v1alpha1.RoleSpine}))},
	}
	cases = append(cases, backupValidCases()...)
	cases = append(cases, pipelineValidCases()...)
	return append(cases, schedulingValidCases()...)
}

func TestValidSpecsAccepted(t *testing.T) {
	for _, tc := range validCases() {
		t.Run(tc.name, func(t *testing.T) {
			if err := create(t, tc.obj); err != nil {
				t.Fatalf("Create: %v", err)
			}
		})
	}
}

func TestDefaultsApplied(t *testing.T) {
	c := newCluster()
	if err := create(t, c); err != nil {
		t.Fatalf("Create CacheCluster: %v", err)
	}
	l := newCacheLayer()
	if err := create(t, l); err != nil {
		t.Fatalf("Create CacheLayer: %v", err)
	}
	gotC, gotL := &v1alpha1.CacheCluster{}, &v1alpha1.CacheLayer{}
	if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(c), gotC); err != nil {
		t.Fatalf("Get CacheCluster: %v", err)
	}
	if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(l), gotL); err != nil {
		t.Fatalf("Get CacheLayer: %v", err)
	}
	s := gotC.Spec
	checks := []struct {
		field     string
		got, want any
	}{
		{"storage.mode", s.Storage.Mode, v1alpha1.StorageManaged},
		{"storage.racks", s.Storage.Racks, int32(1)},
		{"storage.shardsPerRack", s.Storage.ShardsPerRack, int32(1)},
		{"routing.telemetryStaleAfter", durationOf(s.Routing.TelemetryStaleAfter), time.Second},
		{"coherence.invalidateTimeout", durationOf(s.Coherence.InvalidateTimeout), 2 * time.Second},
		{"coherence.previousMapGrace", durationOf(s.Coherence.PreviousMapGrace), 2 * time.Minute},
		{"coherence.servingLease", durationOf(s.Coherence.ServingLease), time.Second},
		{"hotKeys.interval", durationOf(s.HotKeys.Interval), time.Second},
		{"hotKeys.threshold", s.HotKeys.Threshold, int32(0)}, // adaptive
		{"failover.gracePeriod", durationOf(s.Failover.GracePeriod), 30 * time.Second},
		{"failover.holdDown", durationOf(s.Failover.HoldDown), 60 * time.Second},
		{"images.distcache", s.Images.DistCache, ""}, // the operator's data-plane image
		{"images.redis", s.Images.Redis, "redis:7.4"},
		{"images.pullPolicy", s.Images.PullPolicy, corev1.PullIfNotPresent},
		{"gateway.mode", s.Gateway.Mode, v1alpha1.GatewayDeployment},
		{"gateway.replicas", *s.Gateway.Replicas, int32(1)},
		{"gateway.hostNetwork", s.Gateway.HostNetwork, false},
	}
	for prefix, ls := range map[string]v1alpha1.CacheLayerSpec{"layers[0].": s.Layers[0].CacheLayerSpec, "CacheLayer spec.": gotL.Spec} {
		checks = append(checks, []struct {
			field     string
			got, want any
		}{
			{prefix + "backend", ls.Backend, v1alpha1.BackendSoftware},
			{prefix + "virtualNodes", ls.VirtualNodes, int32(2048)},
			{prefix + "capacity.entries", ls.Capacity.Entries, int32(10000)},
			{prefix + "capacity.bytes", quantityOf(ls.Capacity.Bytes), "64Mi"},
		}...)
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: got %v, want default %v", c.field, c.got, c.want)
		}
	}
}

// create creates obj on the package's API server.
func create(t *testing.T, obj client.Object) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	return env.Client.Create(ctx, obj)
}

// invalidCauses fails the test unless err is the API server's Invalid error,
// and returns its causes.
func invalidCauses(t *testing.T, err error) []metav1.StatusCause {
	t.Helper()
	if !apierrors.IsInvalid(err) {
		t.Fatalf("Create: got %v, want an Invalid error", err)
	}
	var st apierrors.APIStatus
	if !errors.As(err, &st) || st.Status().Details == nil {
		t.Fatalf("Create: error %v has no details", err)
	}
	return st.Status().Details.Causes
}

// withRawField is obj as unstructured with the field at path set to value,
// for values the Go types cannot send (they omit a zero int).
func withRawField(t *testing.T, obj client.Object, value any, path ...string) *unstructured.Unstructured {
	t.Helper()
	gvk, err := apiutil.GVKForObject(obj, env.Scheme)
	if err != nil {
		t.Fatalf("cannot find the kind of %T: %v", obj, err)
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatalf("cannot convert %T: %v", obj, err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(gvk)
	if err := unstructured.SetNestedField(u.Object, value, path...); err != nil {
		t.Fatalf("cannot set %v: %v", path, err)
	}
	return u
}

// durationOf is d's duration, 0 when unset.
func durationOf(d *metav1.Duration) time.Duration {
	if d == nil {
		return 0
	}
	return d.Duration
}

// quantityOf is q as a string, "" when unset.
func quantityOf(q *resource.Quantity) string {
	if q == nil {
		return ""
	}
	return q.String()
}

// TestDefaultsOfOmittedSections creates a CacheCluster as kubectl would from
// YAML that names only its layers: every section still gets its defaults.
func TestDefaultsOfOmittedSections(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "distcache.io/v1alpha1", "kind": "CacheCluster",
		"metadata": map[string]any{"name": "omitted", "namespace": "default"},
		"spec":     map[string]any{"layers": []any{map[string]any{"name": "spine", "nodes": int64(2)}}},
	}}
	ctx := context.Background()
	if err := env.Client.Create(ctx, u); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), u) }) // the name is reused under -count > 1
	cc := &v1alpha1.CacheCluster{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(u), cc); err != nil {
		t.Fatal(err)
	}
	s := cc.Spec
	if s.Storage.Mode != v1alpha1.StorageManaged || s.Storage.Racks != 1 || s.Failover.GracePeriod == nil ||
		s.Failover.GracePeriod.Duration != 30*time.Second || s.HotKeys.Threshold != 0 || s.Images.Redis == "" ||
		s.Layers[0].Capacity.Entries != 10000 || s.Layers[0].Capacity.Bytes == nil || s.Layers[0].Capacity.Bytes.String() != "64Mi" {
		t.Fatalf("sections left out of the YAML were not defaulted: %+v", s)
	}
}

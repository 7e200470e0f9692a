package switchfabric_test

import (
	"context"
	"strings"
	"testing"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/fabric/stratum"
	"github.com/distcache/distcache/internal/testing/poll"
	"github.com/distcache/distcache/internal/testing/switchtest"
	"github.com/distcache/distcache/placement/partmap"
	"github.com/distcache/distcache/softswitch"
	pipelines "github.com/distcache/distcache/stratum_pipelines"
)

// leaseUntil reads the switch's serving lease register (0: no lease).
func leaseUntil(sw *softswitch.Switch) (uint64, error) {
	info, _, ok := sw.Pipeline()
	if !ok {
		return 0, nil
	}
	id, _ := pipelines.ObjectID(info, "lease_until")
	es, err := sw.Read([]*p4v1.Entity{{Entity: &p4v1.Entity_RegisterEntry{RegisterEntry: &p4v1.RegisterEntry{RegisterId: id, Index: &p4v1.Index{Index: 0}}}}})
	if err != nil || len(es) != 1 {
		return 0, err
	}
	return pipelines.BytesUint(es[0].GetRegisterEntry().GetData().GetBitstring()), nil
}

// memberState is member's state in the cluster's published map.
func memberState(cc *v1alpha1.CacheCluster, member string) (partmap.MemberState, error) {
	m, err := publishedMap(cc)
	if err != nil {
		return "", err
	}
	l, i, ok := m.Member(member)
	if !ok {
		return "", nil
	}
	return m.Layers[l].Members[i].State, nil
}

// TestOperatorProgramsASwitchLayer: the operator drives a software switch
// (a real P4Runtime and gNMI target on loopback) as a member of a
// cluster's spine layer: it pushes the pipeline, renews the switch's lease
// from the published map, reports the session, fails the switch over
// when it stops answering or another controller takes it, programs it
// again — empty — when it comes back after a restart, and takes it over
// with its pipeline when the other controller leaves.
func TestOperatorProgramsASwitchLayer(t *testing.T) {
	// Two spine switches: the failover never fails a layer's last member.
	target, f, cc := twoSpines(t, namespace(t))
	member := partmap.MemberName("shop", "spine", 0)
	reg := startOperator(t)

	fabricStatus(t, f, "fabric Ready, its switch programmed for shop", func(s *v1alpha1.SwitchFabricStatus) bool {
		return is(s, v1alpha1.ConditionReady, true, v1alpha1.ReasonReconciled) && s.Cluster == "shop" &&
			len(s.SwitchStatuses) == 2 && s.SwitchStatuses[0].Programmed && s.SwitchStatuses[0].Member == member
	})
	poll.Eventually(t, "switch in the map at its dataAddress, Active", func() (bool, error) {
		m, err := publishedMap(cc)
		if err != nil {
			return false, err
		}
		l, i, ok := m.Member(member)
		return ok && m.Layers[l].Switch && m.Layers[l].Members[i].Address == target.Addr().String() &&
			m.Layers[l].Members[i].State == partmap.Active, nil
	})
	poll.Eventually(t, "lease renewed from the map's ConfigMap", func() (bool, error) {
		until, err := leaseUntil(target.Switch())
		return until > 0, err
	})
	poll.Eventually(t, "SwitchProgrammed event", func() (bool, error) { return hasEvent(f, "SwitchProgrammed", "spine-0") })
	poll.Eventually(t, "fleet metrics: switch programmed, lease renewed", func() (bool, error) {
		programmed, renewals := series(t, reg, "distcache_fabric_switch_programmed", member), series(t, reg, "distcache_fabric_lease_renewals_total", member)
		return programmed == 1 && renewals > 0, nil
	})
	fabricStatus(t, f, "ports reported over gNMI", func(s *v1alpha1.SwitchFabricStatus) bool {
		return len(s.SwitchStatuses) == 2 && s.SwitchStatuses[0].Ports > 0 && s.SwitchStatuses[0].PortsUp == s.SwitchStatuses[0].Ports
	})

	// The switch stops answering: reported, failed over.
	target.Stop()
	fabricStatus(t, f, "switch unreachable", func(s *v1alpha1.SwitchFabricStatus) bool {
		return is(s, v1alpha1.ConditionReady, false, v1alpha1.ReasonSwitchUnreachable) &&
			is(s, v1alpha1.ConditionDegraded, true, v1alpha1.ReasonSwitchUnreachable) && !s.SwitchStatuses[0].Programmed
	})
	poll.Eventually(t, "SwitchLost event", func() (bool, error) { return hasEvent(f, "SwitchLost", "SwitchUnreachable") })
	poll.Eventually(t, "switch member failed in the map", func() (bool, error) {
		st, err := memberState(cc, member)
		return st == partmap.Failed, err
	})

	// It comes back empty: programmed in a new session, lease renewed,
	// restored after the hold-down.
	if err := target.Restart(); err != nil {
		t.Fatal(err)
	}
	fabricStatus(t, f, "switch programmed again", func(s *v1alpha1.SwitchFabricStatus) bool {
		return is(s, v1alpha1.ConditionReady, true, v1alpha1.ReasonReconciled) && s.SwitchStatuses[0].Sessions == 2
	})
	poll.Eventually(t, "switch member restored", func() (bool, error) {
		st, err := memberState(cc, member)
		return st == partmap.Active, err
	})
	poll.Eventually(t, "lease renewed on the new switch", func() (bool, error) {
		until, err := leaseUntil(target.Switch())
		return until > 0, err
	})

	// Another controller claims the switch: the operator reports the lost
	// mastership, and takes the switch over again once that controller
	// leaves, without pushing the pipeline (the rival did not change it).
	installs := target.Switch().Stats().PipelineInstalls.Load()
	rival, err := stratum.Dial(context.Background(), stratum.Config{Address: target.P4Runtime, DeviceID: 1, ElectionID: 10})
	if err != nil {
		t.Fatal(err)
	}
	fabricStatus(t, f, "mastership lost", func(s *v1alpha1.SwitchFabricStatus) bool {
		return is(s, v1alpha1.ConditionReady, false, v1alpha1.ReasonMastershipLost) && !s.SwitchStatuses[0].Programmed
	})
	if err := rival.Close(); err != nil {
		t.Fatal(err)
	}
	fabricStatus(t, f, "primary again", func(s *v1alpha1.SwitchFabricStatus) bool {
		return is(s, v1alpha1.ConditionReady, true, v1alpha1.ReasonReconciled) && s.SwitchStatuses[0].Sessions == 3
	})
	if pushes := series(t, reg, "distcache_fabric_pipeline_pushes_total", member); pushes != 2 {
		t.Errorf("%v pipelines pushed, want 2: at the start and after the restart", pushes)
	}
	if n := target.Switch().Stats().PipelineInstalls.Load(); n != installs {
		t.Errorf("the switch installed %d pipelines since the rival came, want none", n-installs)
	}

	// The cluster goes: the fabric is not in use, its switches left alone.
	if err := env.Client.Delete(context.Background(), cc); err != nil {
		t.Fatal(err)
	}
	fabricStatus(t, f, "not in use", func(s *v1alpha1.SwitchFabricStatus) bool {
		return is(s, v1alpha1.ConditionReady, false, v1alpha1.ReasonNotInUse) && !is(s, v1alpha1.ConditionDegraded, true, v1alpha1.ReasonNotInUse) &&
			s.Cluster == "" && len(s.SwitchStatuses) == 0
	})
	poll.Eventually(t, "the stopped fleet's metrics gone", func() (bool, error) {
		n, err := testutil.GatherAndCount(reg)
		return n == 0, err
	})
}

// series is the value of the series name of member in reg (-1: none).
func series(t *testing.T, reg *prometheus.Registry, name, member string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "switch_member" && l.GetValue() == member {
					if m.GetCounter() != nil {
						return m.GetCounter().GetValue()
					}
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	return -1
}

// TestFabricsNotProgrammed: what keeps a fabric's switches unprogrammed is
// reported, each with its reason, and no switch is dialed.
func TestFabricsNotProgrammed(t *testing.T) {
	startOperator(t)
	// Loopback ports where nothing listens: nothing must dial them.
	sw := spineSwitch("spine-0", "127.0.0.1:1", "127.0.0.1:2000")
	for _, tc := range []struct {
		name     string
		opts     []fabricOption
		clusters int
		reason   string
		degraded bool
	}{
		{"no cluster uses it", nil, 0, v1alpha1.ReasonNotInUse, false},
		{"two clusters use it", nil, 2, v1alpha1.ReasonFabricShared, true},
		{"onos driver", []fabricOption{withDriver(v1alpha1.DriverONOS)}, 1, v1alpha1.ReasonDriverUnavailable, true},
		{"unknown pipeline", []fabricOption{withPipeline("distcache-p4-14")}, 1, v1alpha1.ReasonPipelineMismatch, true},
		{"TLS Secret missing", []fabricOption{withTLSSecret("switch-tls")}, 1, v1alpha1.ReasonTLSSecretInvalid, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := namespace(t)
			f := newFabric(t, ns, "fabric", append([]fabricOption{sw}, tc.opts...)...)
			for i := range tc.clusters {
				newCluster(t, ns, []string{"shop", "cart"}[i], "fabric")
			}
			fabricStatus(t, f, tc.reason, func(s *v1alpha1.SwitchFabricStatus) bool {
				return is(s, v1alpha1.ConditionReady, false, tc.reason) && is(s, v1alpha1.ConditionDegraded, tc.degraded, tc.reason) &&
					len(s.SwitchStatuses) == 0 && s.Switches["spine"] == 1
			})
		})
	}
}

// TestTLSSecretInvalid: a Secret without a usable key pair is reported
// with what is wrong.
func TestTLSSecretInvalid(t *testing.T) {
	startOperator(t)
	ns := namespace(t)
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "switch-tls", Namespace: ns}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: []byte("not a certificate"), corev1.TLSPrivateKeyKey: []byte("nor a key")}}
	if err := env.Client.Create(context.Background(), sec); err != nil {
		t.Fatal(err)
	}
	f := newFabric(t, ns, "fabric", spineSwitch("spine-0", "127.0.0.1:1", "127.0.0.1:2000"), withTLSSecret("switch-tls"))
	newCluster(t, ns, "shop", "fabric")
	fabricStatus(t, f, "TLSSecretInvalid naming the keys", func(s *v1alpha1.SwitchFabricStatus) bool {
		c := condition(s, v1alpha1.ConditionReady)
		return is(s, v1alpha1.ConditionReady, false, v1alpha1.ReasonTLSSecretInvalid) && c != nil &&
			strings.Contains(c.Message, "tls.crt and tls.key")
	})
}

// TestPipelineRefusedBySwitch: a switch that refuses the pipeline pushed
// to it (the software switch runs the v1model program, not the Tofino
// one) is reported as a pipeline mismatch, not as unreachable.
func TestPipelineRefusedBySwitch(t *testing.T) {
	startOperator(t)
	ns := namespace(t)
	target := switchtest.StartTarget(t, 1, 1)
	f := newFabric(t, ns, "fabric", spineSwitch("spine-0", target.P4Runtime, target.Addr().String()), withPipeline("distcache-tna"))
	newCluster(t, ns, "shop", "fabric")
	fabricStatus(t, f, "PipelineMismatch from the switch", func(s *v1alpha1.SwitchFabricStatus) bool {
		return is(s, v1alpha1.ConditionReady, false, v1alpha1.ReasonPipelineMismatch) &&
			len(s.SwitchStatuses) == 1 && s.SwitchStatuses[0].Reason == v1alpha1.ReasonPipelineMismatch
	})
	if _, _, ok := target.Switch().Pipeline(); ok {
		t.Error("the switch runs a pipeline it should have refused")
	}
}

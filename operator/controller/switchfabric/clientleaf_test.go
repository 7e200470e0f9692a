package switchfabric_test

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/internal/testing/poll"
	"github.com/distcache/distcache/internal/testing/switchtest"
	"github.com/distcache/distcache/placement/partmap"
	"github.com/distcache/distcache/softswitch"
	pipelines "github.com/distcache/distcache/stratum_pipelines"
)

// clientLeafSwitch adds a client leaf at the given P4Runtime and data
// addresses.
func clientLeafSwitch(name, p4rt, data string) fabricOption {
	return func(f *v1alpha1.SwitchFabric) {
		f.Spec.Switches = append(f.Spec.Switches, v1alpha1.Switch{Name: name, DeviceID: int64(len(f.Spec.Switches) + 1),
			Role: v1alpha1.RoleClientLeaf, P4RuntimeAddress: p4rt, DataAddress: data})
	}
}

// arc is a spine_owner entry: keys whose point is in [low, high] go to
// the spine member of id.
type arc struct {
	low, high uint64
	id        uint32
}

// leafArcs reads the client leaf's spine_owner table over P4Runtime (a
// read needs no arbitration): its arcs, sorted.
func leafArcs(p4rt string, device uint64) ([]arc, error) {
	info, err := pipelines.ProgramP4Info(softswitch.ClientLeafProgram)
	if err != nil {
		return nil, err
	}
	table, _ := pipelines.ObjectID(info, "spine_owner")
	conn, err := grpc.NewClient(p4rt, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	rs, err := p4v1.NewP4RuntimeClient(conn).Read(context.Background(), &p4v1.ReadRequest{DeviceId: device,
		Entities: []*p4v1.Entity{{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{TableId: table}}}}})
	if err != nil {
		return nil, err
	}
	var out []arc
	for {
		r, err := rs.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		for _, e := range r.Entities {
			te := e.GetTableEntry()
			if te.IsDefaultAction {
				continue
			}
			a := arc{high: ^uint64(0), id: uint32(pipelines.BytesUint(te.GetAction().GetAction().GetParams()[0].GetValue()))}
			if len(te.Match) == 1 {
				a.low, a.high = pipelines.BytesUint(te.Match[0].GetRange().Low), pipelines.BytesUint(te.Match[0].GetRange().High)
			}
			out = append(out, a)
		}
	}
	slices.SortFunc(out, func(a, b arc) int { return cmp.Compare(a.low, b.low) })
	return out, nil
}

// mapArcs are the spine layer's arcs of m that a client leaf routes to:
// those of Active members.
func mapArcs(m *partmap.Map) ([]arc, error) {
	p, err := partmap.Compile(m)
	if err != nil {
		return nil, err
	}
	var out []arc
	for _, a := range p.SwitchArcs(0) {
		if mb := m.Layers[0].Members[a.Member]; mb.State == partmap.Active {
			out = append(out, arc{low: a.Low, high: a.High, id: mb.ID})
		}
	}
	slices.SortFunc(out, func(a, b arc) int { return cmp.Compare(a.low, b.low) })
	return out, nil
}

// TestOperatorProgramsAClientLeaf: the operator programs a fabric's
// client leaf beside its spine switches once a cluster uses the fabric:
// its spine_owner table, read back over P4Runtime, holds the published
// map's arcs; when a spine stops answering and the cluster fences it, the
// leaf is programmed again without the spine's arcs, and with them once
// the spine is back. The status reports the leaf (programmed, no member)
// and Ready counts it.
//
// The cluster's grace period is an hour and its serving lease half an
// hour, so a member that stops answering is Fenced from 30 to 60 minutes
// after; the CacheCluster controller's clock runs 45 minutes ahead once
// the spine is stopped, so the spine stays Fenced while the test looks.
func TestOperatorProgramsAClientLeaf(t *testing.T) {
	ns := namespace(t)
	spine0, spine1 := switchtest.StartTarget(t, 1, 1), switchtest.StartTarget(t, 1, 2)
	leaf := switchtest.StartClientLeaf(t, 1, 3)
	f := newFabric(t, ns, "fabric", spineSwitch("spine-0", spine0.P4Runtime, spine0.Addr().String()),
		spineSwitch("spine-1", spine1.P4Runtime, spine1.Addr().String()), clientLeafSwitch("c0", leaf.P4Runtime, leaf.Addr().String()))
	cc := &v1alpha1.CacheCluster{ObjectMeta: metav1.ObjectMeta{Name: "store", Namespace: ns}, Spec: v1alpha1.CacheClusterSpec{
		Storage: v1alpha1.StorageSpec{Mode: v1alpha1.StorageManaged, Racks: 1, ShardsPerRack: 1},
		Layers: []v1alpha1.NamedLayer{{Name: "spine", CacheLayerSpec: v1alpha1.CacheLayerSpec{Backend: v1alpha1.BackendSwitch,
			Switch: &v1alpha1.SwitchLayerSpec{FabricRef: "fabric", Role: v1alpha1.RoleSpine}}}},
		Coherence: v1alpha1.CoherenceSpec{ServingLease: &metav1.Duration{Duration: 30 * time.Minute}, PreviousMapGrace: &metav1.Duration{Duration: 30 * time.Minute}},
		Failover:  v1alpha1.FailoverSpec{GracePeriod: &metav1.Duration{Duration: time.Hour}, HoldDown: &metav1.Duration{Duration: time.Second}},
	}}
	if err := env.Client.Create(context.Background(), cc); err != nil {
		t.Fatal(err)
	}
	// Gone when the test ends, so that the operators of later tests do
	// not program its fabric.
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), cc) })
	var ahead atomic.Int64
	reg := startOperator(t, withClusterClock(func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }))

	fabricStatus(t, f, "fabric Ready with its client leaf programmed", func(s *v1alpha1.SwitchFabricStatus) bool {
		c := condition(s, v1alpha1.ConditionReady)
		return is(s, v1alpha1.ConditionReady, true, v1alpha1.ReasonReconciled) && c.Message == "3 of 3 switches programmed for CacheCluster store" &&
			len(s.SwitchStatuses) == 3 && s.SwitchStatuses[2].Name == "c0" && s.SwitchStatuses[2].Programmed && s.SwitchStatuses[2].Member == "" &&
			s.Switches["client-leaf"] == 1
	})
	member0 := partmap.MemberName("store", "spine", 0)
	state0 := func(m *partmap.Map) partmap.MemberState {
		l, i, _ := m.Member(member0)
		return m.Layers[l].Members[i].State
	}
	// sameArcs waits until the leaf holds the arcs of the published map,
	// and that map satisfies cond.
	sameArcs := func(what string, cond func(*partmap.Map) bool) {
		t.Helper()
		poll.Eventually(t, what, func() (bool, error) {
			m, err := publishedMap(cc)
			if err != nil {
				return false, err
			}
			want, err := mapArcs(m)
			if err != nil {
				return false, err
			}
			got, err := leafArcs(leaf.P4Runtime, 3)
			if err != nil {
				return false, err
			}
			if !slices.Equal(got, want) {
				return false, fmt.Errorf("the leaf has %d arcs, map version %d has %d", len(got), m.Version, len(want))
			}
			return cond(m), nil
		})
	}
	owners := func(arcs []arc) map[uint32]bool {
		out := map[uint32]bool{}
		for _, a := range arcs {
			out[a.id] = true
		}
		return out
	}
	sameArcs("the leaf holds the arcs of both spines", func(m *partmap.Map) bool {
		arcs, _ := mapArcs(m)
		return len(owners(arcs)) == 2
	})
	poll.Until(t, "the fleet exports the leaf's applies", func() bool {
		return series(t, reg, "distcache_fabric_client_leaf_applies_total", "store-c0") > 0 &&
			series(t, reg, "distcache_fabric_switch_programmed", "store-c0") == 1
	})

	// Spine 0 stops answering: the cluster fences it, and the leaf is
	// programmed again without its arcs.
	ahead.Store(int64(45 * time.Minute))
	spine0.Stop()
	sameArcs("the leaf holds no arc of the fenced spine", func(m *partmap.Map) bool {
		arcs, _ := mapArcs(m)
		return state0(m) == partmap.Fenced && len(owners(arcs)) == 1
	})
	fabricStatus(t, f, "the lost spine reported, the leaf still programmed", func(s *v1alpha1.SwitchFabricStatus) bool {
		return is(s, v1alpha1.ConditionReady, false, v1alpha1.ReasonSwitchUnreachable) && len(s.SwitchStatuses) == 3 &&
			!s.SwitchStatuses[0].Programmed && s.SwitchStatuses[2].Programmed
	})

	// It comes back: Active at once (it was only fenced), and the leaf
	// routes to it again.
	if err := spine0.Restart(); err != nil {
		t.Fatal(err)
	}
	sameArcs("the leaf holds the arcs of both spines again", func(m *partmap.Map) bool {
		arcs, _ := mapArcs(m)
		return state0(m) == partmap.Active && len(owners(arcs)) == 2
	})
}

package switchfabric_test

import (
	"fmt"
	"testing"
	"time"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/internal/testing/poll"
	"github.com/distcache/distcache/placement/hashing"
	"github.com/distcache/distcache/placement/partmap"
	"github.com/distcache/distcache/softswitch"
	pipelines "github.com/distcache/distcache/stratum_pipelines"
	"github.com/distcache/distcache/stratum_pipelines/p4entity"
)

// heldKey is a key member holds in cc's published map.
func heldKey(t *testing.T, cc *v1alpha1.CacheCluster, member string) string {
	t.Helper()
	m, err := publishedMap(cc)
	if err != nil {
		t.Fatal(err)
	}
	p, err := partmap.Compile(m)
	if err != nil {
		t.Fatal(err)
	}
	l, i, _ := m.Member(member)
	for n := range 1000 {
		if k := fmt.Sprintf("key-%d", n); p.Holds(l, i, k) {
			return k
		}
	}
	t.Fatalf("no key of %s among 1000", member)
	return ""
}

// cacheSlot puts a filled slot for key into sw's tables and registers, as
// a controller leaves a key it cached (the lookup entry names the key in
// its metadata).
func cacheSlot(t *testing.T, sw *softswitch.Switch, key string, index int64) {
	t.Helper()
	info, _, _ := sw.Pipeline()
	id := func(name string) uint32 { v, _ := pipelines.ObjectID(info, name); return v }
	d := hashing.DigestOfString(key)
	e := p4entity.TableEntry(id("cache_lookup"), id("cached"), [][]byte{d[:]}, p4entity.U32(uint32(index)))
	e.GetTableEntry().Metadata = []byte(key)
	for _, err := range sw.Write([]*p4v1.Update{p4entity.Update(p4v1.Update_INSERT, e),
		p4entity.Update(p4v1.Update_MODIFY, p4entity.Register(id("valid"), index, p4entity.U16(1)))}) {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// slotKept says sw still holds key's lookup entry and its slot is valid.
func slotKept(sw *softswitch.Switch, key string, index int64) (bool, error) {
	info, _, _ := sw.Pipeline()
	id := func(name string) uint32 { v, _ := pipelines.ObjectID(info, name); return v }
	d := hashing.DigestOfString(key)
	es, err := sw.Read([]*p4v1.Entity{p4entity.TableEntry(id("cache_lookup"), 0, [][]byte{d[:]}), p4entity.Register(id("valid"), index, nil)})
	if err != nil || len(es) != 2 {
		return false, err
	}
	return pipelines.BytesUint(es[1].GetRegisterEntry().GetData().GetBitstring()) == 1, nil
}

// TestLeaderChangeKeepsTheSwitches: two replicas of the operator, each
// with a session with every switch; the leader's is primary. When the
// leader's manager stops (a rolling upgrade, its pod deleted), the other
// replica's backup session takes the switch over before the lease runs
// out: the switch is not given the pipeline again, keeps its cached key
// and its lease is renewed by the new primary, which reports the switch
// programmed — taken over, not pushed — once it leads.
func TestLeaderChangeKeepsTheSwitches(t *testing.T) {
	ns := namespace(t)
	target, f, cc := twoSpines(t, ns)
	member := partmap.MemberName("shop", "spine", 0)

	first := runOperator(t, asReplica(ns, "leader-"+ns, "operator-a"))
	<-first.elected
	second := runOperator(t, asReplica(ns, "leader-"+ns, "operator-b"))
	fabricStatus(t, f, "switches programmed by the leader", func(s *v1alpha1.SwitchFabricStatus) bool {
		return is(s, v1alpha1.ConditionReady, true, v1alpha1.ReasonReconciled) && len(s.SwitchStatuses) == 2 && s.SwitchStatuses[0].Programmed
	})
	poll.Eventually(t, "the second replica waiting as a backup", func() (bool, error) {
		return series(t, second.reg, "distcache_fabric_switch_programmed", member) == 0 &&
			series(t, first.reg, "distcache_fabric_lease_renewals_total", member) > 0, nil
	})
	key := heldKey(t, cc, member)
	cacheSlot(t, target.Switch(), key, 5)
	_, cookie, _ := target.Switch().Pipeline()
	installs := target.Switch().Stats().PipelineInstalls.Load()
	pushes := series(t, second.reg, "distcache_fabric_pipeline_pushes_total", member)

	first.stop()
	poll.Eventually(t, "the second replica primary, the pipeline not pushed", func() (bool, error) {
		return series(t, second.reg, "distcache_fabric_switch_programmed", member) == 1 &&
			series(t, second.reg, "distcache_fabric_pipeline_pushes_total", member) == pushes &&
			series(t, second.reg, "distcache_fabric_lease_renewals_total", member) > 0, nil
	})
	<-second.elected
	fabricStatus(t, f, "fabric Ready under the new leader", func(s *v1alpha1.SwitchFabricStatus) bool {
		return is(s, v1alpha1.ConditionReady, true, v1alpha1.ReasonReconciled) && s.SwitchStatuses[0].Programmed
	})
	if _, c, _ := target.Switch().Pipeline(); c != cookie || target.Switch().Stats().PipelineInstalls.Load() != installs {
		t.Fatalf("the switch was given the pipeline again (cookie %d → %d)", cookie, c)
	}
	if kept, err := slotKept(target.Switch(), key, 5); !kept {
		t.Fatalf("the switch lost its cached key across the leader change (%v)", err)
	}
	until, err := leaseUntil(target.Switch())
	if err != nil {
		t.Fatal(err)
	}
	// A bound, not a threshold: the new leader claims the switch again
	// with its larger election id, and a loaded machine (CI's) has taken
	// over 30 s to renew after it.
	poll.Within(t, "the lease renewed by the new primary", 2*time.Minute, func() (bool, error) {
		now, err := leaseUntil(target.Switch())
		return now > until, err
	})
}

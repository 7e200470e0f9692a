package ring_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/distcache/distcache/placement/ring"
	"github.com/distcache/distcache/workload"
)

const testKeys = 1_000_000

func memberNames(n int) []string {
	ms := make([]string, n)
	for i := range ms {
		ms[i] = fmt.Sprintf("spine-%d", i)
	}
	return ms
}

// owners returns the owner name of each of the first n test keys.
func owners(r *ring.Ring, n int) []string {
	out := make([]string, n)
	var buf []byte
	for k := range n {
		buf = workload.AppendKey(buf[:0], uint64(k))
		out[k] = r.Owner(string(buf))
	}
	return out
}

// TestRemovalMovesOnlyTheRemovedShare removes one member of n and checks the
// consistent-hashing guarantees the failover remap relies on (DistCache
// §4.4): only keys of the removed member move, and its share, like every
// member's, is at most 1.1/n.
func TestRemovalMovesOnlyTheRemovedShare(t *testing.T) {
	for _, n := range []int{8, 16, 32, 64, 128, 256} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			members := memberNames(n)
			full, err := ring.New(11, ring.DefaultVirtualNodes, members)
			if err != nil {
				t.Fatal(err)
			}
			before := owners(full, testKeys)
			share := map[string]int{}
			for _, o := range before {
				share[o]++
			}
			for m, c := range share {
				if frac := float64(c) / testKeys; frac > 1.1/float64(n) {
					t.Errorf("member %s owns %.4f of keys, more than 1.1/n = %.4f", m, frac, 1.1/float64(n))
				}
			}
			removed := members[n/2]
			survivors := slices.Delete(slices.Clone(members), n/2, n/2+1)
			shrunk, err := ring.New(11, ring.DefaultVirtualNodes, survivors)
			if err != nil {
				t.Fatal(err)
			}
			moved := 0
			for k, o := range owners(shrunk, testKeys) {
				if o == before[k] {
					continue
				}
				moved++
				if before[k] != removed {
					t.Fatalf("key %d moved from surviving member %s to %s", k, before[k], o)
				}
			}
			if moved != share[removed] {
				t.Fatalf("moved %d keys, want exactly the removed member's %d", moved, share[removed])
			}
			if frac := float64(moved) / testKeys; frac > 1.1/float64(n) {
				t.Fatalf("removal moved %.4f of keys, more than 1.1/n = %.4f", frac, 1.1/float64(n))
			}
		})
	}
}

// TestAdditionMovesKeysOnlyToNewMember adds a member and checks keys move
// only onto it, about 1/(n+1) of them.
func TestAdditionMovesKeysOnlyToNewMember(t *testing.T) {
	members := memberNames(32)
	r1, _ := ring.New(5, ring.DefaultVirtualNodes, members)
	r2, _ := ring.New(5, ring.DefaultVirtualNodes, append(slices.Clone(members), "spine-new"))
	moved := 0
	a, b := owners(r1, testKeys), owners(r2, testKeys)
	for k := range a {
		if a[k] == b[k] {
			continue
		}
		moved++
		if b[k] != "spine-new" {
			t.Fatalf("key %d moved between existing members %s -> %s", k, a[k], b[k])
		}
	}
	if frac := float64(moved) / testKeys; frac > 1.1/33 || frac < 0.9/33 {
		t.Fatalf("addition moved %.4f of keys, want about 1/33", frac)
	}
}

func TestOrderIndependent(t *testing.T) {
	members := memberNames(16)
	rev := slices.Clone(members)
	slices.Reverse(rev)
	r1, _ := ring.New(3, 64, members)
	r2, _ := ring.New(3, 64, rev)
	a, b := owners(r1, 10_000), owners(r2, 10_000)
	if !slices.Equal(a, b) {
		t.Fatal("owner assignment depends on member order")
	}
}

func TestSeedsPartitionIndependently(t *testing.T) {
	members := memberNames(16)
	r1, _ := ring.New(1, 256, members)
	r2, _ := ring.New(2, 256, members)
	same := 0
	a, b := owners(r1, 100_000), owners(r2, 100_000)
	for k := range a {
		if a[k] == b[k] {
			same++
		}
	}
	// Independent partitions agree on about 1/16 of keys.
	if frac := float64(same) / 100_000; frac > 1.5/16 {
		t.Fatalf("two seeds agree on %.3f of keys, want about 1/16", frac)
	}
}

func TestNewRejectsBadInput(t *testing.T) {
	tests := []struct {
		name    string
		vnodes  int
		members []string
	}{
		{"zero vnodes", 0, []string{"a"}},
		{"too many vnodes", ring.MaxVirtualNodes + 1, []string{"a"}},
		{"empty name", 8, []string{"a", ""}},
		{"duplicate", 8, []string{"a", "b", "a"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ring.New(1, tc.vnodes, tc.members); err == nil {
				t.Fatal("want error")
			}
		})
	}
}

func TestEmptyRing(t *testing.T) {
	r, err := ring.New(1, 8, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.LocateKey("x") != -1 || r.Owner("x") != "" {
		t.Fatal("empty ring must locate nothing")
	}
}

// TestLocateMatchesLinearScan checks the bucket index against the
// definition: first point at or after the hash, wrapping around.
func TestLocateMatchesLinearScan(t *testing.T) {
	r, _ := ring.New(9, 3, memberNames(5))
	ref := ring.Reference(r)
	for _, h := range []uint64{0, 1, 1 << 63, ^uint64(0), ^uint64(0) - 1} {
		if got, want := r.Locate(h), ref(h); got != want {
			t.Errorf("Locate(%#x) = %d, want %d", h, got, want)
		}
	}
	for k := range uint64(100_000) {
		h := k * 0x9e3779b97f4a7c15
		if got, want := r.Locate(h), ref(h); got != want {
			t.Fatalf("Locate(%#x) = %d, want %d", h, got, want)
		}
	}
}

func BenchmarkLocateKey(b *testing.B) {
	for _, n := range []int{32, 1024} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			r, _ := ring.New(1, ring.DefaultVirtualNodes, memberNames(n))
			keys := make([]string, 4096)
			for i := range keys {
				keys[i] = workload.Key(uint64(i))
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				_ = r.LocateKey(keys[i&4095])
				i++
			}
		})
	}
}

// BenchmarkLocate compares the bucket-indexed lookup with a plain binary
// search over the same ring (the baseline recorded in docs/benchmarks.md).
func BenchmarkLocate(b *testing.B) {
	for _, n := range []int{32, 1024} {
		r, _ := ring.New(1, ring.DefaultVirtualNodes, memberNames(n))
		hashes := make([]uint64, 4096)
		for i := range hashes {
			hashes[i] = r.KeyHash(workload.Key(uint64(i)))
		}
		search := ring.BinarySearch(r)
		b.Run(fmt.Sprintf("bucket/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				_ = r.Locate(hashes[i&4095])
				i++
			}
		})
		b.Run(fmt.Sprintf("binarysearch/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				_ = search(hashes[i&4095])
				i++
			}
		})
	}
}

func TestSuccessors(t *testing.T) {
	r, _ := ring.New(4, 16, memberNames(6))
	for k := range 1000 {
		h := r.KeyHash(workload.Key(uint64(k)))
		got := r.Successors(h, 4, nil)
		if len(got) != 4 || got[0] != r.Locate(h) {
			t.Fatalf("Successors = %v, want 4 members starting with the owner %d", got, r.Locate(h))
		}
		seen := map[int]bool{}
		for _, m := range got {
			if seen[m] {
				t.Fatalf("Successors = %v repeats a member", got)
			}
			seen[m] = true
		}
	}
	if got := r.Successors(0, 10, nil); len(got) != 6 {
		t.Fatalf("asking for more successors than members gave %v", got)
	}
}

// TestWithMembersMatchesNew changes a ring's members step by step —
// removals, additions, both at once, a new order — and checks that the ring
// WithMembers derives is the one New builds for the same members: the same
// points, owned by the same members.
func TestWithMembersMatchesNew(t *testing.T) {
	steps := []struct {
		name    string
		members []string
	}{
		{"remove one", []string{"a", "c", "d"}},
		{"add it back", []string{"a", "b", "c", "d"}},
		{"remove two", []string{"b", "d"}},
		{"add three, one of them new", []string{"a", "b", "c", "d", "e"}},
		{"remove and add at once", []string{"a", "c", "e", "f"}},
		{"reorder", []string{"f", "e", "c", "a"}},
		{"to one", []string{"c"}},
		{"to none", nil},
		{"from none", []string{"b", "a"}},
	}
	r, err := ring.New(7, 256, []string{"a", "b", "c", "d"})
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			next, err := r.WithMembers(st.members)
			if err != nil {
				t.Fatal(err)
			}
			want, err := ring.New(7, 256, st.members)
			if err != nil {
				t.Fatal(err)
			}
			gotPoints, gotOwners := ring.Points(next)
			wantPoints, wantOwners := ring.Points(want)
			if !slices.Equal(gotPoints, wantPoints) || !slices.Equal(gotOwners, wantOwners) {
				t.Fatalf("WithMembers(%v) differs from New: %d points, want %d", st.members, len(gotPoints), len(wantPoints))
			}
			if !slices.Equal(owners(next, 10_000), owners(want, 10_000)) || !slices.Equal(next.Members(), want.Members()) {
				t.Fatal("WithMembers places keys differently from New")
			}
			r = next
		})
	}
	if _, err := r.WithMembers([]string{"a", "a"}); err == nil {
		t.Error("WithMembers accepted a duplicate member")
	}
}

// BenchmarkWithMembers derives a demo-sized spine ring (4 members of 2048
// points) without one member and with it back, against New.
func BenchmarkWithMembers(b *testing.B) {
	all := memberNames(4)
	full, _ := ring.New(1, ring.DefaultVirtualNodes, all)
	less, _ := ring.New(1, ring.DefaultVirtualNodes, all[1:])
	b.Run("new", func(b *testing.B) {
		for b.Loop() {
			if _, err := ring.New(1, ring.DefaultVirtualNodes, all[1:]); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("remove", func(b *testing.B) {
		for b.Loop() {
			if _, err := full.WithMembers(all[1:]); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("restore", func(b *testing.B) {
		for b.Loop() {
			if _, err := less.WithMembers(all); err != nil {
				b.Fatal(err)
			}
		}
	})
}

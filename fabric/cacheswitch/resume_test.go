package cacheswitch_test

import (
	"errors"
	"testing"
	"time"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/distcache/distcache/fabric/cacheswitch"
	"github.com/distcache/distcache/placement/hashing"
	"github.com/distcache/distcache/placement/partmap"
	pipelines "github.com/distcache/distcache/stratum_pipelines"
	"github.com/distcache/distcache/stratum_pipelines/p4entity"
)

// putSlot writes a filled slot for key straight into the switch, as an
// earlier controller left it: the lookup entry (with the key in its
// metadata unless bare) and the valid bit.
func (k *controlled) putSlot(t *testing.T, key string, index uint32, bare bool) {
	t.Helper()
	info, _, _ := k.sw.Pipeline()
	id := func(name string) uint32 { v, _ := pipelines.ObjectID(info, name); return v }
	d := hashing.DigestOfString(key)
	e := p4entity.TableEntry(id("cache_lookup"), id("cached"), [][]byte{d[:]}, p4entity.U32(index))
	if !bare {
		e.GetTableEntry().Metadata = []byte(key)
	}
	err := k.conn.Write(t.Context(), p4entity.Update(p4v1.Update_INSERT, e),
		p4entity.Update(p4v1.Update_MODIFY, p4entity.Register(id("valid"), int64(index), p4entity.U16(1))))
	if err != nil {
		t.Fatal(err)
	}
}

// validBit reads the valid bit of slot index.
func (k *controlled) validBit(t *testing.T, index int64) uint64 {
	t.Helper()
	info, _, _ := k.sw.Pipeline()
	id, _ := pipelines.ObjectID(info, "valid")
	es, err := k.conn.Read(t.Context(), p4entity.Register(id, index, nil))
	if err != nil || len(es) != 1 {
		t.Fatalf("read valid[%d]: %v", index, err)
	}
	return pipelines.BytesUint(es[0].GetRegisterEntry().GetData().GetBitstring())
}

// version is k's map at version v (the same members and states).
func (k *controlled) version(v int64) *partmap.Map {
	m := k.m.Clone()
	m.Version = v
	return m
}

// TestResumeReadsTheSwitchBack: a controller that takes over a switch
// another controller programmed finds its keys (from the lookup entries'
// metadata) and its installed entries — so that renewing under the next
// map version writes nothing twice and keeps the keys — and removes the
// entries it cannot tell: one without a key, one whose slot is outside
// its capacity.
func TestResumeReadsTheSwitchBack(t *testing.T) {
	k := newControlled(t)
	k.renew(t, k.m)
	k.putSlot(t, "kept", 3, false)
	k.putSlot(t, "bare", 4, true)
	k.putSlot(t, "far", 100, false)

	c, err := cacheswitch.Resume(t.Context(), k.conn, cacheswitch.Config{Member: k.m.Layers[0].Members[0].Name, Info: k.info, Capacity: 64, Lease: time.Hour, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if n := c.Keys(); n != 1 {
		t.Errorf("the controller took over %d keys, want 1", n)
	}
	if n := k.entries(t, "cache_lookup"); n != 1 {
		t.Errorf("cache_lookup holds %d entries, want the kept key's", n)
	}
	if k.validBit(t, 4) != 0 || k.validBit(t, 3) != 1 {
		t.Error("the bare entry's slot is still valid, or the kept one is not")
	}
	p, err := partmap.Compile(k.version(k.m.Version + 1))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Renew(t.Context(), p, time.Now()); err != nil {
		t.Fatalf("renewing after the takeover: %v", err)
	}
	if n := c.Keys(); n != 1 {
		t.Errorf("after the next map version the controller holds %d keys, want 1", n)
	}
}

// TestMapVersionsSkippedReleaseEveryKey: a map more than one version ahead
// of the last one applied to the switch releases every key, whether the
// controller missed the versions between its own renewals or took over a
// switch whose last map it did not apply; a map older than the switch's is
// refused and renews nothing.
func TestMapVersionsSkippedReleaseEveryKey(t *testing.T) {
	for _, tc := range []struct {
		name     string
		versions []int64 // applied in turn after the takeover
		keys     int
		behind   bool // the last one is refused
	}{
		{"the next version: kept", []int64{2}, 1, false},
		{"the same version again: kept", []int64{1, 1}, 1, false},
		{"a version skipped at the takeover: released", []int64{3}, 0, false},
		{"a version skipped between renewals: released", []int64{2, 4}, 0, false},
		{"an older version: refused", []int64{3, 2}, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := newControlled(t)
			k.renew(t, k.m) // version 1, applied by the first controller
			k.putSlot(t, "hot", 7, false)
			c, err := cacheswitch.Resume(t.Context(), k.conn, cacheswitch.Config{Member: k.m.Layers[0].Members[0].Name, Info: k.info, Lease: time.Hour, Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range tc.versions {
				p, err := partmap.Compile(k.version(v))
				if err != nil {
					t.Fatal(err)
				}
				err = c.Renew(t.Context(), p, time.Now())
				last := i == len(tc.versions)-1
				if last && tc.behind {
					if !errors.Is(err, cacheswitch.ErrMapBehind) {
						t.Fatalf("version %d after %d: %v, want ErrMapBehind", v, tc.versions[i-1], err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("version %d: %v", v, err)
				}
			}
			if n := c.Keys(); n != tc.keys {
				t.Errorf("%d keys kept, want %d", n, tc.keys)
			}
			if want := uint64(tc.keys); k.validBit(t, 7) != want {
				t.Errorf("valid bit of the key's slot: %d, want %d", k.validBit(t, 7), want)
			}
		})
	}
}

// TestResumeWithoutAMapVersion: a switch whose identity was never written
// (no map version applied) has its keys released at the takeover.
func TestResumeWithoutAMapVersion(t *testing.T) {
	k := newControlled(t)
	k.putSlot(t, "hot", 7, false)
	c, err := cacheswitch.Resume(t.Context(), k.conn, cacheswitch.Config{Member: k.m.Layers[0].Members[0].Name, Info: k.info, Lease: time.Hour, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if c.Keys() != 0 || k.validBit(t, 7) != 0 || k.entries(t, "cache_lookup") != 0 {
		t.Errorf("keys %d, valid %d, entries %d: want none", c.Keys(), k.validBit(t, 7), k.entries(t, "cache_lookup"))
	}
}

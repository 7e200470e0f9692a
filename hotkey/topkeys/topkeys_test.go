package topkeys

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)

type op struct {
	key   string
	write bool
}

func feed(c *Counter, ops []op) {
	for _, o := range ops {
		if o.write {
			c.Write([]byte(o.key))
		} else {
			c.Read([]byte(o.key))
		}
	}
}

func TestExactWithinCapacity(t *testing.T) {
	c := New(4, t0)
	feed(c, []op{{"a", false}, {"b", true}, {"a", false}, {"c", false}, {"a", true}, {"b", true}})
	c.Rotate(t0.Add(2 * time.Second))
	want := []Count{{Key: "a", Reads: 2, Writes: 1}, {Key: "b", Writes: 2}, {Key: "c", Reads: 1}}
	got := c.Last()
	if got.Interval != 2*time.Second || fmt.Sprint(got.Keys) != fmt.Sprint(want) {
		t.Fatalf("snapshot %+v, want 2s and %+v", got, want)
	}
}

// TestFindsHeavyHitters: under Zipf-1.1 over 10,000 keys with 10 % writes,
// a 64-slot counter monitors every key with more than N/64 of the N
// operations, and reports for each counts that the true ones lie between
// (reads + writes) and (reads + writes + error).
func TestFindsHeavyHitters(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	z := rand.NewZipf(r, 1.1, 1, 9999)
	const n = 200_000
	trueReads, trueWrites := map[string]uint64{}, map[string]uint64{}
	c := New(64, t0)
	for range n {
		k := fmt.Sprint("key", z.Uint64())
		if r.IntN(10) == 0 {
			trueWrites[k]++
			c.Write([]byte(k))
		} else {
			trueReads[k]++
			c.Read([]byte(k))
		}
	}
	c.Rotate(t0.Add(time.Second))
	got := map[string]Count{}
	for _, k := range c.Last().Keys {
		got[k.Key] = k
	}
	for k, reads := range trueReads {
		total := reads + trueWrites[k]
		g, ok := got[k]
		if total > n/64 && !ok {
			t.Errorf("%s with %d of %d operations is not reported", k, total, n)
		}
		if ok && (g.Reads > reads || g.Writes > trueWrites[k] || g.Reads+g.Writes+g.Error < total) {
			t.Errorf("%s: reported %+v, true reads %d writes %d", k, g, reads, trueWrites[k])
		}
	}
	keys := c.Last().Keys
	for i := 1; i < len(keys); i++ {
		if keys[i].Reads+keys[i].Writes > keys[i-1].Reads+keys[i-1].Writes {
			t.Fatalf("snapshot not most frequent first at %d: %+v after %+v", i, keys[i], keys[i-1])
		}
	}
}

func TestRotateStartsEmpty(t *testing.T) {
	c := New(8, t0)
	if s := c.Last(); s.Interval != 0 || len(s.Keys) != 0 {
		t.Fatalf("before the first Rotate: %+v", s)
	}
	feed(c, []op{{"a", false}})
	c.Rotate(t0.Add(time.Second))
	feed(c, []op{{"b", true}})
	c.Rotate(t0.Add(3 * time.Second))
	if s := c.Last(); s.Interval != 2*time.Second || len(s.Keys) != 1 || s.Keys[0].Key != "b" {
		t.Fatalf("second interval: %+v", s)
	}
}

func TestCountingAMonitoredKeyDoesNotAllocate(t *testing.T) {
	c := New(8, t0)
	key := []byte("monitored")
	c.Read(key)
	if n := testing.AllocsPerRun(100, func() { c.Read(key) }); n != 0 {
		t.Fatalf("Read of a monitored key allocates %v times", n)
	}
}

func TestConcurrentUse(t *testing.T) {
	c := New(16, t0)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 1000 {
				c.Read([]byte(fmt.Sprint("k", (g+i)%32)))
				if i%100 == 0 {
					c.Rotate(t0.Add(time.Duration(i) * time.Millisecond))
					_ = c.Last()
				}
			}
		})
	}
	wg.Wait()
	c.Rotate(t0.Add(time.Hour))
	if n := len(c.Last().Keys); n > 16 {
		t.Fatalf("%d keys monitored by a counter of 16", n)
	}
}

func BenchmarkRead(b *testing.B) {
	keys := make([][]byte, 1024)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "key:%d", i)
	}
	r := rand.New(rand.NewPCG(1, 2))
	z := rand.NewZipf(r, 1.1, 1, uint64(len(keys)-1))
	seq := make([]int, 4096)
	for i := range seq {
		seq[i] = int(z.Uint64())
	}
	c := New(256, t0)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		c.Read(keys[seq[i%len(seq)]])
		i++
	}
}

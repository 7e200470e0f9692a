package e2e

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/distcache/distcache/client"
	"github.com/distcache/distcache/dataplane/transport"
	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/fabric/cacheswitch"
	"github.com/distcache/distcache/internal/testing/clustertest"
	"github.com/distcache/distcache/internal/testing/switchtest"
	"github.com/distcache/distcache/placement/partmap"
	"github.com/distcache/distcache/softswitch"
	"github.com/distcache/distcache/workload"
)

var handover = flag.Bool("handover", false, "run TestSwitchHitsAcrossHandover, a benchmark (docs/benchmarks.md)")

// Shape of the handover benchmark.
const (
	handoverKeys    = 2000
	handoverWorkers = 4
	handoverPace    = 2 * time.Millisecond // per worker: at most 2,000 GETs a second in all
	handoverWarm    = 8 * time.Second
	handoverWindow  = 250 * time.Millisecond
	handoverBefore  = 8 // windows before the primary controller stops
	handoverAfter   = 24
)

// window is what the switch saw in one window: GETs answered from its
// cache, and GETs in all (hits, relayed misses, refused hedges).
type window struct{ hits, gets uint64 }

func (w window) ratio() float64 {
	if w.gets == 0 {
		return 0
	}
	return float64(w.hits) / float64(w.gets)
}

// TestSwitchHitsAcrossHandover measures a switch's hit ratio, window by
// window, before and after its primary controller stops with a backup
// controller waiting — the operator's leader going away — with takeovers
// (the backup keeps the switch's cache) and, as the baseline in the same
// run, with the pipeline pushed at every session (the switch starts
// empty). A Zipf (0.99) read load of 2,000 keys at a bounded rate, sent
// straight to the switch, runs throughout. It prints a table; -handover
// runs it.
func TestSwitchHitsAcrossHandover(t *testing.T) {
	if !*handover {
		t.Skip("a benchmark: -handover runs it")
	}
	takeover := measureHandover(t, false)
	push := measureHandover(t, true)
	var b strings.Builder
	fmt.Fprintf(&b, "| window (ms from the stop) | takeover: hits/GETs | ratio | push at every session: hits/GETs | ratio |\n|---:|---:|---:|---:|---:|\n")
	for i := range takeover {
		at := (i - handoverBefore) * int(handoverWindow/time.Millisecond)
		fmt.Fprintf(&b, "| %d | %d/%d | %.2f | %d/%d | %.2f |\n", at, takeover[i].hits, takeover[i].gets, takeover[i].ratio(), push[i].hits, push[i].gets, push[i].ratio())
	}
	for _, m := range []struct {
		name string
		ws   []window
	}{{"takeover", takeover}, {"push at every session", push}} {
		before, after := sum(m.ws[:handoverBefore]), sum(m.ws[handoverBefore:])
		firstSecond := sum(m.ws[handoverBefore : handoverBefore+4])
		lost := int64(before.ratio()*float64(after.gets)) - int64(after.hits)
		fmt.Fprintf(&b, "\n%s: hit ratio %.3f in the %s before the stop, %.3f in the second after it, %.3f in the %s after it; hits short of the ratio before: %d",
			m.name, before.ratio(), handoverBefore*handoverWindow, firstSecond.ratio(), after.ratio(), handoverAfter*handoverWindow, lost)
	}
	fmt.Fprintln(os.Stdout, b.String())
}

func sum(ws []window) window {
	var s window
	for _, w := range ws {
		s.hits += w.hits
		s.gets += w.gets
	}
	return s
}

// measureHandover runs one cluster whose spine is one software switch
// with two controllers (the first primary), loads it, stops the first
// controller after handoverBefore windows, and returns every window.
func measureHandover(t *testing.T, push bool) []window {
	c := clustertest.Start(t, clustertest.Config{
		Name: "handover", Racks: 2, ShardsPerRack: 1, Spine: 1, SwitchSpine: true,
		Switch: switchtest.Config{Runner: func(rc *cacheswitch.RunnerConfig) { rc.AlwaysPush = push }},
	})
	member := c.Members(0)[0]
	sw := c.Switches()[member]
	backup := sw.StartController(t, member, 2, nil)
	cl := c.NewClient(client.Config{})
	value := bytes.Repeat([]byte("v"), 64)
	for i := range handoverKeys {
		if err := cl.Put(t.Context(), workload.Key(uint64(i)), value); err != nil {
			t.Fatal(err)
		}
	}
	zipf, err := workload.NewZipf(handoverKeys, 0.99)
	if err != nil {
		t.Fatal(err)
	}
	// The reads go straight to the switch's read ports, as a client leaf
	// sends them: its hit ratio is then the switch's alone, whatever the
	// leaf layer's load.
	ep, err := transport.Listen(transport.Config{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	ep.Start(nil)
	t.Cleanup(func() { ep.Close() })
	p, swAddr := c.Placement(), sw.Addr()
	total := handoverWarm + (handoverBefore+handoverAfter+1)*handoverWindow
	ctx, cancel := context.WithTimeout(t.Context(), total)
	defer cancel()
	var wg sync.WaitGroup
	for w := range handoverWorkers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 7))
			tick := time.NewTicker(handoverPace)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				key := workload.Key(zipf.Sample(r))
				gctx, gcancel := context.WithTimeout(ctx, time.Second)
				_, _ = ep.Call(gctx, netip.AddrPortFrom(swAddr.Addr(), partmap.SwitchReadPort(swAddr.Port(), p.ShardIndex(key))),
					&wire.Message{Header: wire.Header{Op: wire.OpGet}, Key: []byte(key)})
				gcancel()
			}
		})
	}
	time.Sleep(handoverWarm) // a benchmark's warm-up: the switch fills with the hot keys
	st := sw.Switch().Stats()
	read := func() window { return window{st.Hits.Load(), st.Hits.Load() + st.Relayed.Load() + st.Refused.Load()} }
	var out []window
	last := read()
	tick := time.NewTicker(handoverWindow)
	for i := range handoverBefore + handoverAfter {
		if i == handoverBefore {
			go sw.StopRunner() // the primary's process dies: its session closes
		}
		<-tick.C
		now := read()
		out = append(out, window{now.hits - last.hits, now.gets - last.gets})
		last = now
	}
	tick.Stop()
	cancel()
	wg.Wait()
	if bs := backup.Runner.State(); !bs.Programmed || bs.Pushes != btoi(push) {
		t.Errorf("push=%v: the backup's state after the stop: %+v", push, bs)
	}
	installs := sw.Switch().Stats().PipelineInstalls.Load()
	t.Logf("push=%v: %d pipelines installed, switch %s", push, installs, stats(st))
	return out
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func stats(st *softswitch.Stats) string {
	return fmt.Sprintf("received %d hits %d relayed %d replies %d refused %d dropped %d no-egress %d send-errors %d",
		st.Received.Load(), st.Hits.Load(), st.Relayed.Load(), st.Replies.Load(), st.Refused.Load(), st.Dropped.Load(), st.NoEgress.Load(), st.SendErrors.Load())
}

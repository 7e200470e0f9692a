package localkube

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/distcache/distcache/operator/controller/cachecluster"
	"github.com/distcache/distcache/placement/partmap"
)

// remapTimes is one cache-node pod deletion's timeline, from the deletion
// request: when the test saw each map the operator published for it, and
// when the last of the other pods reported (GET /status) that it uses it.
// The fenced map makes readers leave the member at once; the failed map
// gives its keys to the survivors (the remap).
type remapTimes struct {
	victim                         string
	fencedPublished, fencedApplied time.Duration
	failedPublished, failedApplied time.Duration
	fencedVersion, failedVersion   int64
}

// versionSeen is when a map version was first seen.
type versionSeen struct {
	at      time.Time
	version int64
}

// firstAt is when seen first reached version v (zero if never).
func firstAt(seen []versionSeen, v int64) time.Time {
	for _, s := range seen {
		if s.version >= v {
			return s.at
		}
	}
	return time.Time{}
}

// deleteAndTime deletes the pod of cache member victim with a grace period
// of a second and times the remap: the maps published in response, seen
// through a watch of the ConfigMap, and their installation by every other
// Ready data-plane pod, polled every 20 ms.
func (k *kube) deleteAndTime(cluster, victim string) remapTimes {
	k.t.Helper()
	ctx, cancel := context.WithCancel(k.ctx)
	defer cancel()
	cms := k.cs.CoreV1().ConfigMaps("default")
	cm, err := cms.Get(ctx, cachecluster.MapConfigMapName(cluster), metav1.GetOptions{})
	if err != nil {
		k.t.Fatal(err)
	}
	w, err := cms.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + cm.Name, ResourceVersion: cm.ResourceVersion})
	if err != nil {
		k.t.Fatal(err)
	}
	defer w.Stop()

	pods := k.dataPlanePods(cluster)
	delete(pods, victim)
	var (
		mu      sync.Mutex // guards applied
		applied = map[string][]versionSeen{}
		wg      sync.WaitGroup
	)
	for name, pod := range pods {
		wg.Go(func() {
			tick := time.NewTicker(20 * time.Millisecond)
			defer tick.Stop()
			var last int64
			for {
				if v, err := podMapVersion(ctx, pod); err == nil && v > last {
					last = v
					mu.Lock()
					applied[name] = append(applied[name], versionSeen{time.Now(), v})
					mu.Unlock()
				}
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
			}
		})
	}
	defer wg.Wait()
	defer cancel()

	r := remapTimes{victim: victim}
	start := time.Now()
	if err := k.cs.CoreV1().Pods("default").Delete(ctx, victim, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](1)}); err != nil {
		k.t.Fatal(err)
	}
	bound := time.After(2 * time.Minute)
	for r.failedVersion == 0 {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				k.t.Fatalf("the watch of %s ended before %s failed", cm.Name, victim)
			}
			if ev.Type != watch.Modified {
				continue
			}
			m, err := partmap.Decode([]byte(ev.Object.(*corev1.ConfigMap).Data[cachecluster.MapKey]))
			if err != nil {
				k.t.Fatalf("published map: %v", err)
			}
			switch state(m, victim) {
			case partmap.Fenced:
				if r.fencedVersion == 0 {
					r.fencedVersion, r.fencedPublished = m.Version, time.Since(start)
				}
			case partmap.Failed:
				r.failedVersion, r.failedPublished = m.Version, time.Since(start)
			}
		case <-bound:
			k.t.Fatalf("%s not failed in the published map 2 minutes after its pod was deleted", victim)
		}
	}
	k.await("every pod on map v"+fmt.Sprint(r.failedVersion), time.Minute, func() (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		for name := range pods {
			if firstAt(applied[name], r.failedVersion).IsZero() {
				return false, fmt.Errorf("%s: %v", name, applied[name])
			}
		}
		return true, nil
	})
	cancel()
	wg.Wait()
	last := func(v int64) (latest time.Time) {
		for name := range pods {
			if at := firstAt(applied[name], v); at.After(latest) {
				latest = at
			}
		}
		return latest
	}
	if r.fencedVersion != 0 {
		r.fencedApplied = last(r.fencedVersion).Sub(start)
	}
	r.failedApplied = last(r.failedVersion).Sub(start)
	return r
}

// state is member's state in m ("" if m does not have it).
func state(m *partmap.Map, member string) partmap.MemberState {
	if l, i, ok := m.Member(member); ok {
		return m.Layers[l].Members[i].State
	}
	return ""
}

// quantile is the q-quantile of d (nearest rank).
func quantile(d []time.Duration, q float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// remapReport is the timings as docs/benchmarks.md records them: each
// deletion, then p50 and p99 of each column.
func remapReport(times []remapTimes) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-22s %14s %14s %14s %14s\n", "deleted pod", "fenced seen", "fenced applied", "failed seen", "failed applied")
	cols := make([][]time.Duration, 4)
	for _, r := range times {
		row := []time.Duration{r.fencedPublished, r.fencedApplied, r.failedPublished, r.failedApplied}
		fmt.Fprintf(&b, "%-22s", r.victim)
		for i, d := range row {
			fmt.Fprintf(&b, " %14s", d.Round(time.Millisecond))
			cols[i] = append(cols[i], d)
		}
		b.WriteString("\n")
	}
	for _, q := range []float64{0.5, 0.99} {
		fmt.Fprintf(&b, "%-22s", fmt.Sprintf("p%v", q*100))
		for _, c := range cols {
			fmt.Fprintf(&b, " %14s", quantile(c, q).Round(time.Millisecond))
		}
		b.WriteString("\n")
	}
	return b.String()
}

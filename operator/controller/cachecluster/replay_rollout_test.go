package cachecluster_test

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/operator/controller/cachecluster"
	"github.com/distcache/distcache/operator/podstatus"
	"github.com/distcache/distcache/placement/partmap"
)

const (
	releaseImage = "registry.example/distcache:v2"
	olderImage   = "registry.example/distcache:v1"
)

// replayState waits until cc's published map says want and its status
// reports mode.
func replayState(t *testing.T, cc *v1alpha1.CacheCluster, want partmap.ReplayProtection, mode v1alpha1.ReplayProtectionMode) *partmap.Map {
	t.Helper()
	var m *partmap.Map
	eventually(t, fmt.Sprintf("map saying %s, status %s", want, mode), func() (bool, error) {
		var err error
		if m, err = publishedMap(t, cc); err != nil {
			return false, err
		}
		stored := &v1alpha1.CacheCluster{}
		if err := get(t, stored, cc.Namespace, cc.Name); err != nil {
			return false, err
		}
		got := stored.Status.DataPlane
		return m.ReplayProtection == want && got != nil && got.ReplayProtection == mode,
			fmt.Errorf("map v%d says %q, status %+v", m.Version, m.ReplayProtection, got)
	})
	return m
}

// TestNewClusterRequiresStamps: the first map of a cluster whose pods all
// run the operator's release requires stamps; with spec Off it has none,
// and turning it Off steps the map down.
func TestNewClusterRequiresStamps(t *testing.T) {
	startOperator(t, &clock{t: time.Now()}, withDataPlaneImage(releaseImage))
	cc := newCluster(t, "fresh", withStorage(v1alpha1.StorageManaged, 1, 1), withLayer("spine", 1, false))
	m := replayState(t, cc, partmap.ReplayRequire, v1alpha1.ReplayModeRequire)
	if m.Version != 1 {
		t.Fatalf("require published in v%d, want the first map", m.Version)
	}
	eventually(t, "ReplayProtection event", func() (bool, error) {
		return hasEvent(t, cc, cachecluster.EventReplayProtection, "accept → require")
	})

	// Off: the map stays readable by clients older than the field.
	off := newCluster(t, "fresh-off", withStorage(v1alpha1.StorageManaged, 1, 1), withLayer("spine", 1, false),
		func(cc *v1alpha1.CacheCluster) {
			cc.Spec.DataPlane = &v1alpha1.DataPlaneSpec{ReplayProtection: v1alpha1.ReplayProtectionOff}
		})
	replayState(t, off, partmap.ReplayAccept, v1alpha1.ReplayModeAccept)

	// Turned Off later, the cluster that required stamps steps down to
	// stamp at once, and to accept once every Ready pod uses that map (at
	// once here: the test's operator does not ask the pods).
	updateSpec(t, cc, func(stored *v1alpha1.CacheCluster) {
		stored.Spec.DataPlane = &v1alpha1.DataPlaneSpec{ReplayProtection: v1alpha1.ReplayProtectionOff}
	})
	replayState(t, cc, partmap.ReplayAccept, v1alpha1.ReplayModeAccept)
	for _, step := range []string{"require → stamp", "stamp → accept"} {
		eventually(t, "ReplayProtection event "+step, func() (bool, error) {
			return hasEvent(t, cc, cachecluster.EventReplayProtection, step)
		})
	}
}

// TestUpgradedClusterAdvancesReplayProtection: a cluster whose pods run
// an older release publishes no replay protection (older readers reject
// the field); once every pod runs the operator's release its map says
// stamp, and once every Ready pod reports that map (or a later one), it
// says require. A pod that has not reported the stamp map holds it.
func TestUpgradedClusterAdvancesReplayProtection(t *testing.T) {
	spine := startStatusServer(t, "127.0.0.41", 0)
	_, portText, _ := net.SplitHostPort(spine.addr)
	port, _ := strconv.Atoi(portText)
	shard := startStatusServer(t, "127.0.0.42", port)
	startOperator(t, &clock{t: time.Now()}, withDataPlaneImage(releaseImage),
		func(r *cachecluster.Reconciler) { r.Applied = &podstatus.Prober{Port: port} })

	// The cluster's pods exist before this operator sees it, on the older
	// release: as after an operator upgrade, before the rollout.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "cc-"}}
	if err := env.Client.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	cc := &v1alpha1.CacheCluster{ObjectMeta: metav1.ObjectMeta{Name: "upgraded", Namespace: ns.Name}}
	withStorage(v1alpha1.StorageManaged, 1, 1)(cc)
	withLayer("spine", 1, false)(cc)
	pods := map[string]string{"upgraded-spine-0": "127.0.0.41", "upgraded-rack-0-0": "127.0.0.42"}
	for name, ip := range pods {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns.Name, Labels: map[string]string{cachecluster.LabelCluster: cc.Name}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "distcache", Image: olderImage}, {Name: "redis", Image: "redis:7.4"}}},
		}
		if err := env.Client.Create(context.Background(), pod); err != nil {
			t.Fatal(err)
		}
		setReadyCondition(pod, true, time.Now().Add(-time.Minute))
		pod.Status.PodIP = ip
		if err := env.Client.Status().Update(context.Background(), pod); err != nil {
			t.Fatal(err)
		}
	}
	if err := env.Client.Create(context.Background(), cc); err != nil {
		t.Fatal(err)
	}
	accept := replayState(t, cc, partmap.ReplayAccept, v1alpha1.ReplayModeAccept)
	spine.version.Store(accept.Version)
	shard.version.Store(accept.Version)

	// The rollout: the spine pod first, then the shard's.
	setImage := func(name string) {
		t.Helper()
		pod := &corev1.Pod{}
		if err := get(t, pod, ns.Name, name); err != nil {
			t.Fatal(err)
		}
		pod.Spec.Containers[0].Image = releaseImage
		if err := env.Client.Update(context.Background(), pod); err != nil {
			t.Fatal(err)
		}
	}
	setImage("upgraded-spine-0")
	eventually(t, "the operator saw the spine pod's new image and both pods' map", func() (bool, error) {
		stored := &v1alpha1.CacheCluster{}
		err := get(t, stored, cc.Namespace, cc.Name)
		return err == nil && stored.Status.MapApplied == 2, err
	})
	if m, err := publishedMap(t, cc); err != nil || m.ReplayProtection != partmap.ReplayAccept {
		t.Fatalf("with a pod on the older release the map says %q (%v), want accept", m.ReplayProtection, err)
	}
	setImage("upgraded-rack-0-0")
	stamp := replayState(t, cc, partmap.ReplayStamp, v1alpha1.ReplayModeStamp)

	// One pod reports the stamp map: the cluster stays at stamp.
	spine.version.Store(stamp.Version)
	eventually(t, "one pod of two reports the stamp map", func() (bool, error) {
		stored := &v1alpha1.CacheCluster{}
		err := get(t, stored, cc.Namespace, cc.Name)
		return err == nil && stored.Status.MapApplied == 1 && stored.Status.MapVersion == stamp.Version, err
	})
	if m, err := publishedMap(t, cc); err != nil || m.ReplayProtection != partmap.ReplayStamp {
		t.Fatalf("with a pod still on the map before stamp, the map says %q (%v), want stamp", m.ReplayProtection, err)
	}
	shard.version.Store(stamp.Version)
	replayState(t, cc, partmap.ReplayRequire, v1alpha1.ReplayModeRequire)
	eventually(t, "ReplayProtection event", func() (bool, error) {
		return hasEvent(t, cc, cachecluster.EventReplayProtection, "stamp → require")
	})
}

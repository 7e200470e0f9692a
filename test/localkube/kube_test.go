package localkube

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/dataplane/metrics"
	"github.com/distcache/distcache/operator/apischeme"
	"github.com/distcache/distcache/operator/controller/cachecluster"
)

// kube is the running localkube as a test uses it: the API through
// client-go and controller-runtime, kubectl, and the node's containerd.
type kube struct {
	t       *testing.T
	ctx     context.Context
	dir     string // localkube's state directory
	kubectl string // the kubectl binary
	cs      kubernetes.Interface
	c       client.Client
}

// newKube connects to the localkube whose state directory is dir, with
// the kubectl binary in assets.
func newKube(ctx context.Context, t *testing.T, dir, assets string) *kube {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "admin.kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	scheme, err := apischeme.New()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return &kube{t: t, ctx: ctx, dir: dir, kubectl: filepath.Join(assets, "kubectl"), cs: cs, c: c}
}

// kubeconfig is the admin's kubeconfig.
func (k *kube) kubeconfig() string { return filepath.Join(k.dir, "admin.kubeconfig") }

// run runs kubectl with args and stdin and returns its output.
func (k *kube) run(stdin string, args ...string) (string, error) {
	cmd := exec.CommandContext(k.ctx, k.kubectl, append([]string{"--kubeconfig", k.kubeconfig()}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("kubectl %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out)), nil
}

// do runs kubectl, failing the test if it fails.
func (k *kube) do(stdin string, args ...string) string {
	k.t.Helper()
	out, err := k.run(stdin, args...)
	if err != nil {
		k.t.Fatal(err)
	}
	return out
}

// cluster is the CacheCluster name in namespace default.
func (k *kube) cluster(name string) *v1alpha1.CacheCluster {
	k.t.Helper()
	cc := &v1alpha1.CacheCluster{}
	if err := k.c.Get(k.ctx, client.ObjectKey{Namespace: "default", Name: name}, cc); err != nil {
		k.t.Fatalf("cannot get CacheCluster %s: %v", name, err)
	}
	return cc
}

// dataPlanePods are cluster's Ready data-plane pods by name.
func (k *kube) dataPlanePods(cluster string) map[string]corev1.Pod {
	k.t.Helper()
	pods, err := k.cs.CoreV1().Pods("default").List(k.ctx, metav1.ListOptions{LabelSelector: cachecluster.LabelCluster + "=" + cluster})
	if err != nil {
		k.t.Fatal(err)
	}
	out := map[string]corev1.Pod{}
	for _, p := range pods.Items {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue && p.DeletionTimestamp == nil && p.Status.PodIP != "" {
				out[p.Name] = p
			}
		}
	}
	return out
}

// healed says whether cluster is whole again: Ready for its current
// generation, every member Active and Ready, pods Ready pods all using
// the published map.
func (k *kube) healed(cluster string, pods int32) (bool, error) {
	cc := k.cluster(cluster)
	st := cc.Status
	ready := apimeta.FindStatusCondition(st.Conditions, string(v1alpha1.ConditionReady))
	if ready == nil || ready.Status != metav1.ConditionTrue || st.ObservedGeneration != cc.Generation {
		return false, fmt.Errorf("Ready condition %+v at generation %d", ready, cc.Generation)
	}
	for _, l := range st.Layers {
		for _, m := range l.Members {
			if m.State != v1alpha1.MemberActive || !m.Ready {
				return false, fmt.Errorf("member %s %s, ready %v", m.Name, m.State, m.Ready)
			}
		}
	}
	if st.ReadyPods != pods || st.MapApplied != pods {
		return false, fmt.Errorf("%d of %d Ready pods use map v%d, want %d", st.MapApplied, st.ReadyPods, st.MapVersion, pods)
	}
	return true, nil
}

// awaitHealed waits until cluster is healed with pods Ready pods.
func (k *kube) awaitHealed(cluster string, pods int32) {
	k.t.Helper()
	k.await(cluster+" healed", 3*time.Minute, func() (bool, error) { return k.healed(cluster, pods) })
}

// await polls cond every 50 ms until it holds, failing the test after
// bound: the bound only turns a hang into a failure.
func (k *kube) await(what string, bound time.Duration, cond func() (bool, error)) {
	k.t.Helper()
	deadline := time.Now().Add(bound)
	for {
		ok, err := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			k.t.Fatalf("%s: not reached in %v (last error: %v)", what, bound, err)
		}
		select {
		case <-k.ctx.Done():
			k.t.Fatalf("%s: %v", what, k.ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// container is the status of pod's container name.
func (k *kube) container(pod, name string) corev1.ContainerStatus {
	k.t.Helper()
	p, err := k.cs.CoreV1().Pods("default").Get(k.ctx, pod, metav1.GetOptions{})
	if err != nil {
		k.t.Fatal(err)
	}
	for _, c := range p.Status.ContainerStatuses {
		if c.Name == name {
			return c
		}
	}
	k.t.Fatalf("pod %s has no container %s", pod, name)
	return corev1.ContainerStatus{}
}

// signal sends sig to the main process of pod's container name through
// the node's containerd, as a process dying on the node would.
func (k *kube) signal(pod, name, sig string) {
	k.t.Helper()
	id, ok := strings.CutPrefix(k.container(pod, name).ContainerID, "containerd://")
	if !ok {
		k.t.Fatalf("container %s of pod %s is not running in containerd", name, pod)
	}
	out, err := exec.CommandContext(k.ctx, "ctr", "-a", filepath.Join(k.dir, "containerd", "containerd.sock"),
		"-n", "k8s.io", "tasks", "kill", "-s", sig, id).CombinedOutput()
	if err != nil {
		k.t.Fatalf("cannot send %s to container %s of pod %s: %v\n%s", sig, name, pod, err, out)
	}
}

// statusClient asks data-plane pods for their map version.
var statusClient = &http.Client{Timeout: time.Second}

// podMapVersion is the map version pod's process reports (GET /status).
func podMapVersion(ctx context.Context, pod corev1.Pod) (int64, error) {
	url := "http://" + net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(cachecluster.MetricsPort)) + metrics.StatusPath
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := statusClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var st metrics.Status
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return 0, fmt.Errorf("cannot decode the status of %s: %w", pod.Name, err)
	}
	return st.MapVersion, nil
}

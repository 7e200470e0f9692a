package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/distcache/distcache/hack/internal/localkube"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

func kubeClient(path string) (*kubernetes.Clientset, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, err
	}
	cfg.Timeout = 5 * time.Second
	cfg.UserAgent = "apioutage"
	return kubernetes.NewForConfig(cfg)
}

// podState is one pod's readiness and restarts.
type podState struct {
	name     string // namespace/name
	ready    bool
	restarts int32
}

func podStates(ctx context.Context, kube *kubernetes.Clientset) ([]podState, error) {
	list, err := kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []podState
	for _, p := range list.Items {
		st := podState{name: p.Namespace + "/" + p.Name, ready: localkube.PodReady(&p)}
		for _, c := range p.Status.ContainerStatuses {
			st.restarts += c.RestartCount
		}
		if p.Status.Phase == corev1.PodSucceeded {
			st.ready = true // a completed Job's pod
		}
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, nil
}

// waitReady waits for /readyz, then for the node and every pod to be Ready.
func waitReady(ctx context.Context, kube *kubernetes.Clientset, ev *events) ([]podState, error) {
	start := time.Now()
	deadline := start.Add(2 * time.Minute)
	for {
		_, err := kube.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err == nil {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, fmt.Errorf("API server not ready after %v: %w", time.Since(start).Round(time.Second), err)
		}
		time.Sleep(time.Second)
	}
	ev.log("API server ready (/readyz) %.1fs after it was back", time.Since(start).Seconds())
	deadline = time.Now().Add(5 * time.Minute)
	for {
		pods, err := podStates(ctx, kube)
		var notReady []string
		if err == nil {
			for _, p := range pods {
				if !p.ready {
					notReady = append(notReady, p.name)
				}
			}
			node, nerr := kube.CoreV1().Nodes().Get(ctx, "localkube", metav1.GetOptions{})
			if nerr != nil {
				err = nerr
			} else if !nodeReady(node) {
				notReady = append(notReady, "node/localkube")
			}
		}
		if err == nil && len(notReady) == 0 {
			ev.log("node and all %d pods Ready %.1fs after the API server was back", len(pods), time.Since(start).Seconds())
			return pods, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			if err == nil {
				err = fmt.Errorf("not Ready: %s", strings.Join(notReady, ", "))
			}
			return pods, err
		}
		time.Sleep(2 * time.Second)
	}
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func writePods(w io.Writer, before, after []podState) {
	fmt.Fprintf(w, "\n| pod | Ready before | restarts before | Ready after | restarts after |\n|---|---|---:|---|---:|\n")
	got := map[string]podState{}
	for _, p := range after {
		got[p.name] = p
	}
	seen := map[string]bool{}
	for _, p := range before {
		seen[p.name] = true
		a, ok := got[p.name]
		if !ok {
			fmt.Fprintf(w, "| %s | %v | %d | (gone) | |\n", p.name, p.ready, p.restarts)
			continue
		}
		fmt.Fprintf(w, "| %s | %v | %d | %v | %d |\n", p.name, p.ready, p.restarts, a.ready, a.restarts)
	}
	for _, p := range after {
		if !seen[p.name] {
			fmt.Fprintf(w, "| %s | (new) | | %v | %d |\n", p.name, p.ready, p.restarts)
		}
	}
}

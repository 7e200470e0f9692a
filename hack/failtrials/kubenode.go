package main

// Losing a node of a multi-node localkube (NODES=N, docs/localkube.md):
// the fault down on the Kubernetes target cuts the victim pod's node off,
// its kubelet and kube-proxy stopped and its network namespace's link
// down, as a machine that crashed; its pods run on, unreachable. Every
// other pod on the node is lost with it, so the victims are the members
// on nodes with neither a storage shard nor the operator: the probe keys'
// writes must reach their shims, and the control plane must stay up to
// remap.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/distcache/distcache/operator/controller/cachecluster"
)

// nodePrefix names the nodes of a multi-node localkube: lk-node-N.
const nodePrefix = "lk-node-"

// nodeIndex is N of node lk-node-N, or ok=false for another node.
func nodeIndex(node string) (n int, ok bool) {
	s, found := strings.CutPrefix(node, nodePrefix)
	if !found {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil && n > 0
}

// down cuts victim's node off until restart brings it back.
func (s *kubeSystem) down(ctx context.Context, victim string, atFault func()) (func(context.Context) error, error) {
	p, err := s.pod(ctx, victim)
	if err != nil {
		return nil, err
	}
	n, ok := nodeIndex(p.Spec.NodeName)
	if !ok {
		return nil, fmt.Errorf("cannot cut %s's node %q off: only a node of a multi-node localkube (%sN) can be", victim, p.Spec.NodeName, nodePrefix)
	}
	if err := s.localkube(ctx, "node-stop", n); err != nil {
		return nil, err
	}
	// The node stopped reporting; its pods serve on until it is cut off,
	// the fault proper: its link is down once node-cut returns.
	if err := s.localkube(ctx, "node-cut", n); err != nil {
		return nil, fmt.Errorf("%w (and %w)", err, s.localkube(context.WithoutCancel(ctx), "node-start", n))
	}
	atFault()
	return func(ctx context.Context) error { return s.localkube(ctx, "node-start", n) }, nil
}

// localkube runs `localkube.sh CMD N` for s's localkube.
func (s *kubeSystem) localkube(ctx context.Context, cmd string, n int) error {
	c := exec.CommandContext(ctx, s.o.script, cmd, strconv.Itoa(n))
	c.Env = append(os.Environ(), "LOCALKUBE_DIR="+s.o.localkubeDir)
	if out, err := c.CombinedOutput(); err != nil {
		return fmt.Errorf("cannot %s %s%d: %w: %s", cmd, nodePrefix, n, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// keptNodes are the nodes the fault down never cuts off: those of the
// cluster's storage pods and of the operator's pods.
func (s *kubeSystem) keptNodes(ctx context.Context) ([]string, error) {
	opNS, opName, _ := splitRef("operator", s.o.operator)
	dep, err := s.cs.AppsV1().Deployments(opNS).Get(ctx, opName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("cannot read the operator's Deployment %s: %w", s.o.operator, err)
	}
	var kept []string
	for _, q := range []struct {
		ns, selector string
	}{
		{s.namespace, cachecluster.LabelCluster + "=" + s.name + "," + cachecluster.LabelComponent + "=" + cachecluster.ComponentStorage},
		{opNS, metav1.FormatLabelSelector(dep.Spec.Selector)},
	} {
		pods, err := s.cs.CoreV1().Pods(q.ns).List(ctx, metav1.ListOptions{LabelSelector: q.selector})
		if err != nil {
			return nil, fmt.Errorf("cannot list pods %s in %s: %w", q.selector, q.ns, err)
		}
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" && !slices.Contains(kept, p.Spec.NodeName) {
				kept = append(kept, p.Spec.NodeName)
			}
		}
	}
	return kept, nil
}

// nodeVictims keeps the members of names whose pods run on a node down
// may cut off.
func (s *kubeSystem) nodeVictims(ctx context.Context, names []string) ([]string, error) {
	kept, err := s.keptNodes(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, name := range names {
		p, err := s.pod(ctx, name)
		if err != nil {
			return nil, err
		}
		if _, ok := nodeIndex(p.Spec.NodeName); ok && !slices.Contains(kept, p.Spec.NodeName) {
			out = append(out, name)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("cannot cut a node off: every member runs on a node of a storage shard or of the operator (%v), or on no %sN node; pin those (spec.storage.scheduling, the chart's nodeSelector)", kept, nodePrefix)
	}
	return out, nil
}

// containerdSocket is the containerd socket of node's localkube.
func containerdSocket(localkubeDir, node string) string {
	if _, ok := nodeIndex(node); ok {
		return localkubeDir + "/nodes/" + node + "/containerd/containerd.sock"
	}
	return localkubeDir + "/containerd/containerd.sock"
}

// podNode is p's node, for containerdSocket.
func podNode(p *corev1.Pod) string { return p.Spec.NodeName }

package main

// The Kubernetes target (-kube-cluster): a CacheCluster on localkube. The
// prober and `distcache check` run on this host, follow the map ConfigMap
// through the API server (package kubemap) and reach the pods at their
// IPs, which the map holds; the data-plane key comes from the Secret the
// pods mount. Faults are signals to the cache node's process on the host
// (see kubeproc.go). The control plane is on, the operator's Deployment
// scaled to 0 for a mode's trials (operator-off), or localkube's API
// server stopped (SIGSTOP) from just before each fault until its
// observation ends (apiserver-off): it is resumed before the wait for the
// cluster to heal, which reads pods and the map through the API.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/distcache/distcache/dataplane/kubemap"
	"github.com/distcache/distcache/hack/internal/localkube"
	"github.com/distcache/distcache/operator/controller/cachecluster"
	"github.com/distcache/distcache/placement/partmap"
)

// nodeContainer is the cache-node pod's container that runs the node.
const nodeContainer = "node"

// kubeOptions are the flags of the Kubernetes target.
type kubeOptions struct {
	cluster, kubeconfig, localkubeDir, operator string
	// script is localkube.sh, which cuts nodes off (kubenode.go).
	script string
}

// splitRef splits flag's "NAMESPACE/NAME".
func splitRef(flag, ref string) (namespace, name string, err error) {
	namespace, name, ok := strings.Cut(ref, "/")
	if !ok || namespace == "" || name == "" || strings.Contains(name, "/") {
		return "", "", fmt.Errorf("cannot parse -%s %q: want NAMESPACE/NAME", flag, ref)
	}
	return namespace, name, nil
}

func (k kubeOptions) validate() error {
	if _, _, err := splitRef("kube-cluster", k.cluster); err != nil {
		return err
	}
	_, _, err := splitRef("operator", k.operator)
	return err
}

// kubeSystem is a CacheCluster reached through the API server and, for
// its processes, this host's /proc and localkube's containerd.
type kubeSystem struct {
	o         kubeOptions
	plane     string // the mode's control plane
	cs        kubernetes.Interface
	namespace string
	name      string // the CacheCluster's
	fault     string // the mode's
}

// open connects to the CacheCluster, fetches its data-plane key into a
// directory of its own and checks that this host routes to its pods.
func (k kubeOptions) open(ctx context.Context, m mode, dir, checkDir string) (system, access, func(), error) {
	none := func() {}
	ns, name, _ := splitRef("kube-cluster", k.cluster)
	cfg, err := clientcmd.BuildConfigFromFlags("", k.kubeconfig)
	if err != nil {
		return nil, access{}, none, fmt.Errorf("cannot load kubeconfig %s: %w", k.kubeconfig, err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, access{}, none, fmt.Errorf("cannot create a Kubernetes client: %w", err)
	}
	for _, d := range []string{dir, checkDir} {
		if err := os.RemoveAll(d); err != nil {
			return nil, access{}, none, fmt.Errorf("cannot remove %s: %w", d, err)
		}
	}
	if err := os.MkdirAll(checkDir, 0o755); err != nil {
		return nil, access{}, none, fmt.Errorf("cannot create %s: %w", checkDir, err)
	}
	s := &kubeSystem{o: k, plane: m.controlPlane, fault: m.fault, cs: cs, namespace: ns, name: name}
	keyDir := filepath.Join(dir, "data-plane-key")
	if err := s.fetchKey(ctx, keyDir); err != nil {
		return nil, access{}, none, err
	}
	mp, err := s.readMap(ctx)
	if err != nil {
		return nil, access{}, none, err
	}
	if err := checkRoutes(mp); err != nil {
		return nil, access{}, none, err
	}
	cm := cachecluster.MapConfigMapName(name)
	src, err := kubemap.New(cfg, ns, cm)
	if err != nil {
		return nil, access{}, none, err
	}
	acc := access{maps: src, keyDir: keyDir, listen: "0.0.0.0:0", mapPoll: 250 * time.Millisecond,
		checkArgs: []string{"--map-configmap", ns + "/" + cm, "--kubeconfig", k.kubeconfig, "--data-plane-key-dir", keyDir}}
	s.metrics(ctx, filepath.Join(dir, "metrics-before.txt"))
	done := func() {
		s.metrics(context.WithoutCancel(ctx), filepath.Join(dir, "metrics-after.txt"))
		_ = os.RemoveAll(keyDir) // a secret: it goes with the run
	}
	return s, acc, done, nil
}

// metrics snapshots the pods' lease metrics into file; a failure is only
// reported.
func (s *kubeSystem) metrics(ctx context.Context, file string) {
	if err := s.snapshotMetrics(ctx, file); err != nil {
		fmt.Fprintln(os.Stderr, "failtrials:", err)
	}
}

// apiTimeout bounds one request to the API server.
const apiTimeout = 10 * time.Second

// fetchKey writes the cluster's data-plane key Secret into dir, a file per
// key, as the pods have it mounted.
func (s *kubeSystem) fetchKey(ctx context.Context, dir string) error {
	ctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	name := cachecluster.DataPlaneKeySecretName(s.name)
	sec, err := s.cs.CoreV1().Secrets(s.namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("cannot read the data-plane key Secret %s/%s: %w", s.namespace, name, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("cannot create %s: %w", dir, err)
	}
	for f, b := range sec.Data {
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o600); err != nil {
			return fmt.Errorf("cannot write the data-plane key: %w", err)
		}
	}
	return nil
}

// readMap reads the map from the map ConfigMap through the API.
func (s *kubeSystem) readMap(ctx context.Context) (*partmap.Map, error) {
	ctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	name := cachecluster.MapConfigMapName(s.name)
	cm, err := s.cs.CoreV1().ConfigMaps(s.namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("cannot read the map ConfigMap %s/%s: %w", s.namespace, name, err)
	}
	mp, err := partmap.Decode([]byte(cm.Data[kubemap.Key]))
	if err != nil {
		return nil, fmt.Errorf("cannot decode the map of %s/%s: %w", s.namespace, name, err)
	}
	return mp, nil
}

// victims are the map's members, layer by layer: each is a cache-node pod
// of the same name.
func (s *kubeSystem) victims(ctx context.Context) ([]string, error) {
	mp, err := s.readMap(ctx)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, l := range mp.Layers {
		for _, m := range l.Members {
			names = append(names, m.Name)
		}
	}
	if s.fault == "down" {
		return s.nodeVictims(ctx, names)
	}
	return names, nil
}

// pod is the cluster's pod name.
func (s *kubeSystem) pod(ctx context.Context, name string) (*corev1.Pod, error) {
	ctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	p, err := s.cs.CoreV1().Pods(s.namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("cannot read pod %s/%s: %w", s.namespace, name, err)
	}
	return p, nil
}

// containerStatus is the status of p's container name.
func containerStatus(p *corev1.Pod, name string) (corev1.ContainerStatus, bool) {
	for _, c := range p.Status.ContainerStatuses {
		if c.Name == name {
			return c, true
		}
	}
	return corev1.ContainerStatus{}, false
}

// locate finds the victim pod's node container through the API and its
// process on this host (see findNodeProcess).
func (s *kubeSystem) locate(ctx context.Context, victim string) (victimProc, error) {
	p, err := s.pod(ctx, victim)
	if err != nil {
		return victimProc{}, err
	}
	c, ok := containerStatus(p, nodeContainer)
	if !ok || c.State.Running == nil {
		return victimProc{}, fmt.Errorf("cannot find a running container %s in pod %s", nodeContainer, victim)
	}
	_, id, ok := strings.Cut(c.ContainerID, "://")
	if !ok || id == "" {
		return victimProc{}, fmt.Errorf("cannot parse container ID %q of pod %s", c.ContainerID, victim)
	}
	v := victimProc{name: victim, restarts: c.RestartCount, container: id}
	v.pid, err = findNodeProcess(ctx, containerdSocket(s.o.localkubeDir, podNode(p)), s.namespace, victim, id)
	return v, err
}

// signal sends sig to v's process once it is still v's (ownNodeProcess).
func (s *kubeSystem) signal(v victimProc, sig syscall.Signal) error {
	if err := ownNodeProcess(v.pid, v.name, v.container); err != nil {
		return err
	}
	return signalPID(v.pid, v.name, sig)
}

// holdControlPlane scales the operator's Deployment to 0 for
// operator-off and waits until its pods are gone; release scales it back
// and waits until it is available.
func (s *kubeSystem) holdControlPlane(ctx context.Context) (func(context.Context) error, error) {
	if s.plane != "operator-off" {
		return func(context.Context) error { return nil }, nil
	}
	ns, name, _ := splitRef("operator", s.o.operator)
	d, err := s.cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("cannot read the operator's Deployment %s: %w", s.o.operator, err)
	}
	replicas := int32(1)
	if d.Spec.Replicas != nil && *d.Spec.Replicas > 0 {
		replicas = *d.Spec.Replicas
	}
	if err := s.scaleOperator(ctx, 0); err != nil {
		return nil, err
	}
	return func(ctx context.Context) error { return s.scaleOperator(ctx, replicas) }, nil
}

// scaleOperator sets the operator's replicas and waits until the
// Deployment has them all available and no other pod (at 0: no pod).
func (s *kubeSystem) scaleOperator(ctx context.Context, replicas int32) error {
	ns, name, _ := splitRef("operator", s.o.operator)
	deps := s.cs.AppsV1().Deployments(ns)
	patch := fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, replicas)
	d, err := deps.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("cannot scale the operator's Deployment %s to %d: %w", s.o.operator, replicas, err)
	}
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return fmt.Errorf("cannot read the selector of %s: %w", s.o.operator, err)
	}
	fmt.Fprintf(os.Stderr, "failtrials: operator %s scaled to %d\n", s.o.operator, replicas)
	return poll(ctx, 3*time.Minute, fmt.Sprintf("the operator at %d replicas", replicas), func() (bool, error) {
		d, err := deps.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, fmt.Errorf("%w: %w", errNotYet, err)
		}
		pods, err := s.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
		if err != nil {
			return false, fmt.Errorf("%w: %w", errNotYet, err)
		}
		st := d.Status
		if st.ObservedGeneration < d.Generation || st.UpdatedReplicas != replicas || st.AvailableReplicas != replicas ||
			st.Replicas != replicas || len(pods.Items) != int(replicas) {
			return false, fmt.Errorf("%w: %d pods, %d available of %d", errNotYet, len(pods.Items), st.AvailableReplicas, replicas)
		}
		return true, nil
	})
}

// faultWindow stops localkube's API server for apiserver-off; end resumes
// it.
func (s *kubeSystem) faultWindow(context.Context) (func(), error) {
	if s.plane != "apiserver-off" {
		return func() {}, nil
	}
	pid, err := apiServerPID(s.o.localkubeDir)
	if err != nil {
		return nil, err
	}
	if err := signalPID(pid, "kube-apiserver", syscall.SIGSTOP); err != nil {
		return nil, err
	}
	return func() {
		if err := apiServerIs(pid, s.o.localkubeDir); err == nil {
			err = signalPID(pid, "kube-apiserver", syscall.SIGCONT)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "failtrials: cannot resume the API server:", err)
		}
	}, nil
}

// waitHealed waits until every pod of the cluster is Ready, the victim's
// node container has been restarted (when restarted says so) and is ready,
// the victim and every other member are Active in the map ConfigMap, and the prober has installed
// that map version. The changes are the victim's states in the maps the
// prober installed since the fault.
func (s *kubeSystem) waitHealed(ctx context.Context, timeout time.Duration, v victimProc, restarted bool, fault time.Time, p *prober) (string, time.Duration, error) {
	start := time.Now()
	var changes string
	err := poll(ctx, timeout, "the cluster healed", func() (bool, error) {
		if err := s.healed(ctx, v, restarted, p); err != nil {
			return false, err
		}
		states := p.memberStates(v.name, fault)
		changes = memberChanges(states)
		if len(states) > 0 && states[len(states)-1] != string(partmap.Active) {
			return false, fmt.Errorf("%w: the maps since the fault end with %s", errNotYet, changes)
		}
		return true, nil
	})
	return changes, time.Since(start), err
}

// healed is nil once the cluster has healed from v's fault (waitHealed),
// else why not, wrapping errNotYet.
func (s *kubeSystem) healed(ctx context.Context, v victimProc, restarted bool, p *prober) error {
	lctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	pods, err := s.cs.CoreV1().Pods(s.namespace).List(lctx, metav1.ListOptions{LabelSelector: cachecluster.LabelCluster + "=" + s.name})
	if err != nil {
		return fmt.Errorf("%w: %w", errNotYet, err)
	}
	if len(pods.Items) == 0 {
		return fmt.Errorf("cannot find pods of %s/%s", s.namespace, s.name)
	}
	for _, pod := range pods.Items {
		if !localkube.PodReady(&pod) {
			return fmt.Errorf("%w: pod %s not Ready", errNotYet, pod.Name)
		}
	}
	i := slices.IndexFunc(pods.Items, func(p corev1.Pod) bool { return p.Name == v.name })
	if i < 0 {
		return fmt.Errorf("cannot find pod %s", v.name)
	}
	c, ok := containerStatus(&pods.Items[i], nodeContainer)
	switch {
	case !ok || !c.Ready:
		return fmt.Errorf("%w: container %s of %s not ready", errNotYet, nodeContainer, v.name)
	case restarted && c.RestartCount <= v.restarts:
		return fmt.Errorf("%w: %s not restarted yet (restart count %d)", errNotYet, v.name, c.RestartCount)
	}
	mp, err := s.readMap(ctx)
	if err != nil {
		return fmt.Errorf("%w: %w", errNotYet, err)
	}
	if state := memberState(mp, v.name); state != partmap.Active {
		return fmt.Errorf("%w: %s is %s in map version %d", errNotYet, v.name, state, mp.Version)
	}
	// Every member: a node lost takes the others on it too (kubenode.go).
	for _, l := range mp.Layers {
		for _, m := range l.Members {
			if m.State != partmap.Active {
				return fmt.Errorf("%w: %s is %s in map version %d", errNotYet, m.Name, m.State, mp.Version)
			}
		}
	}
	if got := p.c.Placement().Version(); got < mp.Version {
		return fmt.Errorf("%w: the prober has map version %d of %d", errNotYet, got, mp.Version)
	}
	return nil
}

// memberState is member's state in mp ("" when mp does not list it).
func memberState(mp *partmap.Map, member string) partmap.MemberState {
	if l, i, ok := mp.Member(member); ok {
		return mp.Layers[l].Members[i].State
	}
	return ""
}

package localkube

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"golang.org/x/sys/unix"

	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/operator/controller/cachecluster"
)

// probeNamespace holds the probe pods of policiesEnforced: pause
// containers whose network namespaces the test dials from, so that the
// policy engine sees the pods' addresses and judges by their labels.
const probeNamespace = "netpol-probe"

// probePods are the probe pods of the spread cluster: a client labelled
// as docs/operator.md says clients must be, in another namespace, and two
// that are not clients: one beside it, one in the cluster's namespace.
const probePods = `apiVersion: v1
kind: Namespace
metadata: {name: netpol-probe}
---
apiVersion: v1
kind: Pod
metadata: {name: client, namespace: netpol-probe, labels: {distcache.io/client: spread}}
spec:
  containers: [{name: pause, image: "registry.k8s.io/pause:3.10", imagePullPolicy: Never}]
---
apiVersion: v1
kind: Pod
metadata: {name: stranger, namespace: netpol-probe}
spec:
  containers: [{name: pause, image: "registry.k8s.io/pause:3.10", imagePullPolicy: Never}]
---
apiVersion: v1
kind: Pod
metadata: {name: stranger, namespace: default, labels: {app: stranger}}
spec:
  containers: [{name: pause, image: "registry.k8s.io/pause:3.10", imagePullPolicy: Never}]
`

// probe is a pod the test dials from: its name and network namespace.
type probe struct{ name, netns string }

// startProbes creates the probe pods and returns the client and the
// pods outside the allowed set.
func startProbes(t *testing.T, k *kube) (client probe, strangers []probe) {
	t.Helper()
	k.do(probePods, "apply", "-f", "-")
	k.do("", "wait", "-n", probeNamespace, "--for=condition=Ready", "pod/client", "pod/stranger", "--timeout=120s")
	k.do("", "wait", "--for=condition=Ready", "pod/stranger", "--timeout=120s")
	client = probe{probeNamespace + "/client", k.podNetns(probeNamespace, "client")}
	strangers = []probe{
		{probeNamespace + "/stranger", k.podNetns(probeNamespace, "stranger")},
		{"default/stranger", k.podNetns("default", "stranger")},
	}
	return client, strangers
}

// podNetns is the network namespace of pod's first container, through
// its node's containerd: /proc/PID/ns/net.
func (k *kube) podNetns(namespace, pod string) string {
	k.t.Helper()
	p, err := k.cs.CoreV1().Pods(namespace).Get(k.ctx, pod, metav1.GetOptions{})
	if err != nil {
		k.t.Fatal(err)
	}
	if len(p.Status.ContainerStatuses) == 0 {
		k.t.Fatalf("pod %s/%s has no container status", namespace, pod)
	}
	id := strings.TrimPrefix(p.Status.ContainerStatuses[0].ContainerID, "containerd://")
	socket := filepath.Join(k.dir, "nodes", p.Spec.NodeName, "containerd", "containerd.sock")
	out, err := exec.CommandContext(k.ctx, "ctr", "-a", socket, "-n", "k8s.io", "tasks", "ls").CombinedOutput()
	if err != nil {
		k.t.Fatalf("cannot list the tasks of %s: %v\n%s", p.Spec.NodeName, err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == id {
			return "/proc/" + f[1] + "/ns/net"
		}
	}
	k.t.Fatalf("no task %s of pod %s/%s on %s:\n%s", id, namespace, pod, p.Spec.NodeName, out)
	return ""
}

// inNetns runs f on a thread in the network namespace at path: the
// sockets f opens are that namespace's. The thread stays locked, so it
// ends with its goroutine and no other code runs in the namespace.
func inNetns(path string, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			errc <- fmt.Errorf("cannot open %s: %w", path, err)
			return
		}
		defer unix.Close(fd)
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("cannot enter %s: %w", path, err)
			return
		}
		errc <- f()
	}()
	return <-errc
}

// dialFrom dials addr from the network namespace netns.
func dialFrom(ctx context.Context, netns, network, addr string, timeout time.Duration) (net.Conn, error) {
	var c net.Conn
	err := inNetns(netns, func() (err error) {
		c, err = (&net.Dialer{Timeout: timeout}).DialContext(ctx, network, addr)
		return err
	})
	return c, err
}

// answerWait bounds each probe's wait for an answer: a probe that gets
// none in it counts as not reached.
const answerWait = time.Second

// pingUDP sends a data-plane PING to addr (a cache node's or a shim's
// port) from netns and waits answerWait for its PONG.
func pingUDP(ctx context.Context, netns, addr string) error {
	c, err := dialFrom(ctx, netns, "udp", addr, answerWait)
	if err != nil {
		return err
	}
	defer c.Close()
	req, err := wire.Encode(&wire.Message{Header: wire.Header{Op: wire.OpPing, Seq: uint64(time.Now().UnixNano())}, Key: []byte("netpol-probe")}, 1400)
	if err != nil {
		return err
	}
	if err := c.SetDeadline(time.Now().Add(answerWait)); err != nil {
		return err
	}
	if _, err := c.Write(req); err != nil {
		return err
	}
	buf := make([]byte, 2048)
	n, err := c.Read(buf)
	if err != nil {
		return err
	}
	m, err := wire.Decode(buf[:n])
	if err != nil {
		return err
	}
	if m.Op != wire.OpPong {
		return fmt.Errorf("answer %s, want %s", m.Op, wire.OpPong)
	}
	return nil
}

// sayRedis connects to a Redis port at addr from netns, sends PING and
// returns the first line of the answer: +PONG, or Redis's refusal of a
// client from outside the pod (protected mode). Either means reached.
func sayRedis(ctx context.Context, netns, addr string) (string, error) {
	c, err := dialFrom(ctx, netns, "tcp", addr, answerWait)
	if err != nil {
		return "", err
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(answerWait)); err != nil {
		return "", err
	}
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return "", err
	}
	buf := make([]byte, 256)
	n, err := c.Read(buf)
	if err != nil {
		return "", err
	}
	line, _, _ := strings.Cut(string(buf[:n]), "\r\n")
	return line, nil
}

// reaches retries attempt until it succeeds, at most 30 times: an
// allowed peer is reached once its node's engine knows the pods.
func reaches(attempt func() error) error {
	var err error
	for range 30 {
		if err = attempt(); err == nil {
			return nil
		}
	}
	return err
}

// refused runs attempt 3 times and returns nil if none succeeded.
func refused(attempt func() error) error {
	for i := range 3 {
		if err := attempt(); err == nil {
			return fmt.Errorf("attempt %d reached it", i+1)
		}
	}
	return nil
}

// enginesKnow waits until the policy engine of every pod's node has its
// address in the set of pods it judges (nft set podips-v4 of table
// kube-network-policies in the node's namespace): from then on the
// policies apply to it.
func enginesKnow(k *kube, pods ...corev1.Pod) {
	k.t.Helper()
	for _, p := range pods {
		k.await("the policy engine of "+p.Spec.NodeName+" judging "+p.Name, time.Minute, func() (bool, error) {
			out, err := exec.CommandContext(k.ctx, "ip", "netns", "exec", p.Spec.NodeName,
				"nft", "list", "set", "inet", "kube-network-policies", "podips-v4").CombinedOutput()
			if err != nil {
				return false, fmt.Errorf("%v: %s", err, out)
			}
			return strings.Contains(string(out), p.Status.PodIP), fmt.Errorf("%s not in %s", p.Status.PodIP, out)
		})
	}
}

// policiesEnforced requires the spread cluster's NetworkPolicies to be
// enforced: the client pod reaches a cache node's and a shim's data-plane
// port (a PING answered), pods outside the allowed set reach neither, and
// nobody but the node itself reaches Redis; the gateway's Redis port
// answers the client and not the others. It returns the client, which
// the test then reads and writes through.
func policiesEnforced(ctx context.Context, t *testing.T, k *kube, pods map[string]corev1.Pod) probe {
	t.Helper()
	client, strangers := startProbes(t, k)
	var node, storage, gateway corev1.Pod
	for _, p := range pods {
		switch p.Labels[cachecluster.LabelComponent] {
		case cachecluster.ComponentCacheNode:
			node = p
		case cachecluster.ComponentStorage:
			storage = p
		case cachecluster.ComponentGateway:
			gateway = p
		}
	}
	if node.Name == "" || storage.Name == "" || gateway.Name == "" {
		t.Fatalf("want a cache node, a storage pod and the gateway among %d pods", len(pods))
	}
	enginesKnow(k, node, storage, gateway)
	at := func(p corev1.Pod, port int) string { return net.JoinHostPort(p.Status.PodIP, strconv.Itoa(port)) }
	udp := []struct{ what, addr string }{
		{"cache node " + node.Name + " (UDP)", at(node, cachecluster.NodePort)},
		{"shim of " + storage.Name + " (UDP)", at(storage, cachecluster.ShimPort)},
	}
	for _, u := range udp {
		if err := reaches(func() error { return pingUDP(ctx, client.netns, u.addr) }); err != nil {
			t.Fatalf("%s: no PONG from %s at %s: %v", client.name, u.what, u.addr, err)
		}
		for _, s := range strangers {
			if err := refused(func() error { return pingUDP(ctx, s.netns, u.addr) }); err != nil {
				t.Errorf("%s reached %s at %s: %v", s.name, u.what, u.addr, err)
			}
		}
	}
	// Redis: the node itself (as the kubelet's probes do) reaches it;
	// no pod does, the client included.
	redisAddr := at(storage, cachecluster.RedisPort)
	var answer string
	if err := reaches(func() (err error) {
		answer, err = sayRedis(ctx, "/run/netns/"+storage.Spec.NodeName, redisAddr)
		return err
	}); err != nil {
		t.Fatalf("node %s: no answer from Redis of %s at %s: %v", storage.Spec.NodeName, storage.Name, redisAddr, err)
	}
	for _, s := range append([]probe{client}, strangers...) {
		if err := refused(func() error { _, err := sayRedis(ctx, s.netns, redisAddr); return err }); err != nil {
			t.Errorf("%s reached Redis of %s at %s: %v", s.name, storage.Name, redisAddr, err)
		}
	}
	// The gateway's Redis port, at the pod: the client only.
	gatewayAddr := at(gateway, cachecluster.GatewayPort)
	if err := reaches(func() error { _, err := sayRedis(ctx, client.netns, gatewayAddr); return err }); err != nil {
		t.Fatalf("%s: no answer from the gateway at %s: %v", client.name, gatewayAddr, err)
	}
	for _, s := range strangers {
		if err := refused(func() error { _, err := sayRedis(ctx, s.netns, gatewayAddr); return err }); err != nil {
			t.Errorf("%s reached the gateway at %s: %v", s.name, gatewayAddr, err)
		}
	}
	answer, _, _ = strings.Cut(answer, " ")
	t.Logf("policies enforced: %s reached %s, %s and the gateway; %d pods outside the allowed set reached none, nor Redis (%s to node %s)",
		client.name, node.Name, storage.Name, len(strangers), answer, storage.Spec.NodeName)
	return client
}

// dialer dials from p's network namespace, for a Redis client in p.
func (p probe) dialer(timeout time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dialFrom(ctx, p.netns, network, addr, timeout)
		if err != nil {
			return nil, fmt.Errorf("cannot dial %s from %s: %w", addr, p.name, err)
		}
		return c, nil
	}
}

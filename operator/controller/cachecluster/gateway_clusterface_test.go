package cachecluster_test

import (
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/operator/controller/cachecluster"
)

// hasEnvFrom says whether c has env var name from the downward API's field.
func hasEnvFrom(c corev1.Container, name, field string) bool {
	return slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
		return e.Name == name && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == field
	})
}

// checkPeersService checks the headless Service of the gateway pods'
// peers: no cluster IP, only Ready pods, the pods' Redis port.
func checkPeersService(t *testing.T, svc *corev1.Service, pods map[string]string, port int32) {
	t.Helper()
	if svc.Spec.ClusterIP != corev1.ClusterIPNone || svc.Spec.PublishNotReadyAddresses || !labelsMatch(svc.Spec.Selector, pods) ||
		len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != port || svc.Spec.Ports[0].TargetPort.StrVal != "redis" {
		t.Errorf("peers Service %+v: want headless, Ready pods only, selecting the gateway pods %v, port %d", svc.Spec, pods, port)
	}
}

// TestGatewayClusterFace: spec.gateway.clusterFace gives the gateway pods
// --cluster-face, announced at their pod IP from the downward API. One
// replica has no peers; several get the headless Service
// <cluster>-gateway-peers, of Ready pods only, as --cluster-peers-dns.
// Turned off, the flags and the Service go.
func TestGatewayClusterFace(t *testing.T) {
	startOperator(t, &clock{t: time.Now()})
	cc := newCluster(t, "gwcf", withStorage(v1alpha1.StorageManaged, 1, 1), withLayer("spine", 1, false),
		withGateway(func(g *v1alpha1.GatewaySpec) { g.ClusterFace = true }))
	name, peersName := cachecluster.GatewayName(cc.Name), cachecluster.GatewayPeersName(cc.Name)
	peersArg := "--cluster-peers-dns=" + peersName + "." + cc.Namespace + ".svc"
	dep := &appsv1.Deployment{}
	container := func() corev1.Container { return dep.Spec.Template.Spec.Containers[0] }
	eventually(t, "gateway Deployment with its cluster face", func() (bool, error) {
		err := get(t, dep, cc.Namespace, name)
		return err == nil && slices.Contains(container().Args, "--cluster-face"), client.IgnoreNotFound(err)
	})
	c := container()
	if !slices.Contains(c.Args, "--cluster-announce-ip=$(POD_IP)") || !hasEnvFrom(c, "POD_IP", "status.podIP") {
		t.Errorf("gateway args %v, env %v: want --cluster-announce-ip=$(POD_IP), POD_IP from status.podIP", c.Args, c.Env)
	}
	if slices.ContainsFunc(c.Args, func(a string) bool { return a == peersArg }) {
		t.Errorf("gateway args %v: one replica has no peers", c.Args)
	}
	if err := get(t, &corev1.Service{}, cc.Namespace, peersName); !apierrors.IsNotFound(err) {
		t.Errorf("peers Service with one replica: %v, want none", err)
	}

	patchCluster(t, cc, func(s *v1alpha1.CacheClusterSpec) { s.Gateway.Replicas = ptr.To(int32(3)) })
	peers := &corev1.Service{}
	eventually(t, "three replicas finding each other", func() (bool, error) {
		if err := get(t, dep, cc.Namespace, name); err != nil {
			return false, err
		}
		err := get(t, peers, cc.Namespace, peersName)
		return err == nil && slices.Contains(container().Args, peersArg), client.IgnoreNotFound(err)
	})
	checkPeersService(t, peers, dep.Spec.Template.Labels, cachecluster.GatewayPort)

	patchCluster(t, cc, func(s *v1alpha1.CacheClusterSpec) { s.Gateway.ClusterFace = false })
	eventually(t, "cluster face off, its Service gone", func() (bool, error) {
		if err := get(t, dep, cc.Namespace, name); err != nil {
			return false, err
		}
		err := get(t, &corev1.Service{}, cc.Namespace, peersName)
		return apierrors.IsNotFound(err) && !slices.ContainsFunc(container().Args, func(a string) bool {
			return a == "--cluster-face" || a == peersArg || a == "--cluster-announce-ip=$(POD_IP)"
		}), client.IgnoreNotFound(err)
	})
}

// TestGatewayClusterFaceHostNetwork: a DaemonSet's gateway pods on their
// node's network announce the node's IP (status.hostIP) and find each
// other through the headless Service, on the host port.
func TestGatewayClusterFaceHostNetwork(t *testing.T) {
	startOperator(t, &clock{t: time.Now()})
	cc := newCluster(t, "gwcfh", withStorage(v1alpha1.StorageManaged, 1, 1), withLayer("spine", 1, false),
		withGateway(daemonSetGateway(true, 7379)), withGateway(func(g *v1alpha1.GatewaySpec) { g.ClusterFace = true }))
	name, peersName := cachecluster.GatewayName(cc.Name), cachecluster.GatewayPeersName(cc.Name)
	ds, peers := &appsv1.DaemonSet{}, &corev1.Service{}
	eventually(t, "gateway DaemonSet and its peers Service", func() (bool, error) {
		if err := get(t, ds, cc.Namespace, name); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return true, client.IgnoreNotFound(get(t, peers, cc.Namespace, peersName))
	})
	c := ds.Spec.Template.Spec.Containers[0]
	for _, arg := range []string{"--cluster-face", "--cluster-announce-ip=$(HOST_IP)", "--cluster-peers-dns=" + peersName + "." + cc.Namespace + ".svc"} {
		if !slices.Contains(c.Args, arg) {
			t.Errorf("gateway args %v lack %s", c.Args, arg)
		}
	}
	if !hasEnvFrom(c, "HOST_IP", "status.hostIP") {
		t.Errorf("gateway env %v lacks HOST_IP from status.hostIP: on the node's network it announces the node's IP", c.Env)
	}
	checkPeersService(t, peers, ds.Spec.Template.Labels, 7379)
}

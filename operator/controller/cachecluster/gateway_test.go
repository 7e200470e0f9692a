package cachecluster_test

import (
	"context"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/operator/controller/cachecluster"
)

// TestGateway: a cluster gets its Redis-compatible gateway by default (the
// API server's default, one replica): a Deployment of `distcache gateway`
// pods that follow the map ConfigMap with the data-plane ServiceAccount
// and key, a Service on spec.gateway.port, and with the NetworkPolicy on,
// a policy admitting the clients to the gateway's Redis port. Replicas 0
// removes all three.
func TestGateway(t *testing.T) {
	clk := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	startOperator(t, clk)
	cc := newCluster(t, "gw", withStorage(v1alpha1.StorageManaged, 1, 1), withLayer("spine", 1, false),
		func(cc *v1alpha1.CacheCluster) {
			cc.Spec.NetworkPolicy = &v1alpha1.NetworkPolicySpec{Enabled: true}
			cc.Spec.Gateway.Port = 6380
			cc.Spec.Gateway.UsersSecretName, cc.Spec.Gateway.TLSSecretName = "gw-users", "gw-tls"
		})
	name := cachecluster.GatewayName(cc.Name)
	dep, svc, np := &appsv1.Deployment{}, &corev1.Service{}, &networkingv1.NetworkPolicy{}
	eventually(t, "gateway Deployment, Service and NetworkPolicy created", func() (bool, error) {
		for _, o := range []client.Object{dep, svc, np} {
			if err := get(t, o, cc.Namespace, name); err != nil {
				return false, client.IgnoreNotFound(err)
			}
		}
		return true, nil
	})
	if *dep.Spec.Replicas != 1 || dep.Spec.Template.Spec.ServiceAccountName != cachecluster.DataPlaneName(cc.Name) {
		t.Errorf("Deployment replicas %d, service account %s; want 1 and the data plane's", *dep.Spec.Replicas, dep.Spec.Template.Spec.ServiceAccountName)
	}
	c := dep.Spec.Template.Spec.Containers[0]
	for _, arg := range []string{"gateway", "--redis-addr=0.0.0.0:6379", "--map-configmap=" + cc.Namespace + "/" + cachecluster.MapConfigMapName(cc.Name)} {
		if !slices.Contains(c.Args, arg) {
			t.Errorf("gateway args %v lack %s", c.Args, arg)
		}
	}
	for _, arg := range []string{"--users-dir=" + cachecluster.GatewayUsersPath, "--tls-cert=" + cachecluster.GatewayTLSPath + "/tls.crt",
		"--tls-key=" + cachecluster.GatewayTLSPath + "/tls.key"} {
		if !slices.Contains(c.Args, arg) {
			t.Errorf("gateway args %v lack %s", c.Args, arg)
		}
	}
	if !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
		return e.Name == "NODE_NAME" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "spec.nodeName"
	}) {
		t.Errorf("gateway env %v lacks NODE_NAME from spec.nodeName: the gateway learns its zone from its node", c.Env)
	}
	secrets := map[string]bool{}
	for _, v := range dep.Spec.Template.Spec.Volumes {
		if v.Secret != nil {
			secrets[v.Secret.SecretName] = true
		}
	}
	if !secrets["gw-users"] || !secrets["gw-tls"] || len(c.VolumeMounts) != 3 {
		t.Errorf("gateway volumes %v and %d mounts, want the data-plane key, the users and the TLS Secrets", secrets, len(c.VolumeMounts))
	}
	if len(c.VolumeMounts) == 0 || c.ReadinessProbe == nil || len(c.Ports) != 2 || c.Ports[0].Name != "redis" {
		t.Errorf("gateway container %+v: want the data-plane key, a readiness probe, the redis and metrics ports", c)
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 6380 || svc.Spec.Ports[0].TargetPort.StrVal != "redis" ||
		svc.Spec.Type != corev1.ServiceTypeClusterIP || svc.Spec.Selector[cachecluster.LabelComponent] != cachecluster.ComponentGateway {
		t.Errorf("gateway Service %+v, want ClusterIP port 6380 to the gateway pods' redis port", svc.Spec)
	}
	if in := np.Spec.Ingress; len(in) != 1 || len(in[0].Ports) != 1 || in[0].Ports[0].Port.IntVal != cachecluster.GatewayPort ||
		in[0].From[0].PodSelector.MatchLabels[cachecluster.LabelClient] != cc.Name {
		t.Errorf("gateway NetworkPolicy ingress %+v, want the Redis port from the cluster's clients", in)
	}
	clusterIP := svc.Spec.ClusterIP

	// Another reconcile keeps the Service's address.
	patchCluster(t, cc, func(s *v1alpha1.CacheClusterSpec) { s.Gateway.Replicas = ptr.To(int32(2)) })
	eventually(t, "two gateway replicas", func() (bool, error) {
		err := get(t, dep, cc.Namespace, name)
		return err == nil && *dep.Spec.Replicas == 2, err
	})
	if err := get(t, svc, cc.Namespace, name); err != nil || svc.Spec.ClusterIP != clusterIP {
		t.Errorf("Service address %s after an update (%v), want %s kept", svc.Spec.ClusterIP, err, clusterIP)
	}

	patchCluster(t, cc, func(s *v1alpha1.CacheClusterSpec) { s.Gateway.Replicas = ptr.To(int32(0)) })
	eventually(t, "gateway removed with replicas 0", func() (bool, error) {
		for _, o := range []client.Object{&appsv1.Deployment{}, &corev1.Service{}, &networkingv1.NetworkPolicy{}} {
			if err := get(t, o, cc.Namespace, name); !apierrors.IsNotFound(err) {
				return false, client.IgnoreNotFound(err)
			}
		}
		return true, nil
	})
}

// patchCluster merge-patches cc's stored spec with edit.
func patchCluster(t *testing.T, cc *v1alpha1.CacheCluster, edit func(*v1alpha1.CacheClusterSpec)) {
	t.Helper()
	stored := &v1alpha1.CacheCluster{}
	if err := get(t, stored, cc.Namespace, cc.Name); err != nil {
		t.Fatal(err)
	}
	changed := stored.DeepCopy()
	edit(&changed.Spec)
	if err := env.Client.Patch(context.Background(), changed, client.MergeFrom(stored)); err != nil {
		t.Fatal(err)
	}
}

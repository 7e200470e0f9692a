package cachecluster_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/operator/controller/cachecluster"
)

// withGateway changes the cluster's gateway spec.
func withGateway(edit func(*v1alpha1.GatewaySpec)) clusterOption {
	return func(cc *v1alpha1.CacheCluster) { edit(&cc.Spec.Gateway) }
}

// daemonSetGateway makes the gateway a DaemonSet, on the node's network
// when hostNetwork, with port as the Service's (and the host's) port
// unless 0.
func daemonSetGateway(hostNetwork bool, port int32) func(*v1alpha1.GatewaySpec) {
	return func(g *v1alpha1.GatewaySpec) {
		g.Mode, g.HostNetwork = v1alpha1.GatewayDaemonSet, hostNetwork
		if port != 0 {
			g.Port = port
		}
	}
}

// TestGatewayDaemonSet: with mode DaemonSet the gateway pods are a
// DaemonSet's, with the Deployment's pod template (service account, data-
// plane key, probe, restricted security), and no Deployment exists. On the
// node's network the pods listen on the Service's port as a host port and
// resolve the cluster's DNS names.
func TestGatewayDaemonSet(t *testing.T) {
	startOperator(t, &clock{t: time.Now()})
	tests := []struct {
		name        string
		gateway     func(*v1alpha1.GatewaySpec)
		wantPort    int32 // the container's Redis port
		wantHostNet bool
		wantDNS     corev1.DNSPolicy
	}{
		{"pod network", daemonSetGateway(false, 0), cachecluster.GatewayPort, false, corev1.DNSClusterFirst},
		{"pod network, Service on 6380", daemonSetGateway(false, 6380), cachecluster.GatewayPort, false, corev1.DNSClusterFirst},
		{"host network on 7379", daemonSetGateway(true, 7379), 7379, true, corev1.DNSClusterFirstWithHostNet},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cc := newCluster(t, "gwds"+string(rune('a'+i)), withStorage(v1alpha1.StorageManaged, 1, 1), withLayer("spine", 1, false),
				withGateway(tc.gateway))
			name := cachecluster.GatewayName(cc.Name)
			ds, svc := &appsv1.DaemonSet{}, &corev1.Service{}
			eventually(t, "gateway DaemonSet and Service created", func() (bool, error) {
				for _, o := range []client.Object{ds, svc} {
					if err := get(t, o, cc.Namespace, name); err != nil {
						return false, client.IgnoreNotFound(err)
					}
				}
				return true, nil
			})
			if err := get(t, &appsv1.Deployment{}, cc.Namespace, name); !apierrors.IsNotFound(err) {
				t.Errorf("gateway Deployment: %v, want none in mode DaemonSet", err)
			}
			pod := ds.Spec.Template.Spec
			if pod.HostNetwork != tc.wantHostNet || pod.DNSPolicy != tc.wantDNS {
				t.Errorf("pod hostNetwork %v, dnsPolicy %s; want %v and %s", pod.HostNetwork, pod.DNSPolicy, tc.wantHostNet, tc.wantDNS)
			}
			if pod.ServiceAccountName != cachecluster.DataPlaneName(cc.Name) || pod.SecurityContext == nil || pod.SecurityContext.RunAsNonRoot == nil {
				t.Errorf("pod service account %s, security %+v: want the data plane's, restricted", pod.ServiceAccountName, pod.SecurityContext)
			}
			checkKeyMounted(t, "gateway DaemonSet", pod, cc.Name)
			c := pod.Containers[0]
			for _, arg := range []string{"gateway", "--redis-addr=0.0.0.0:" + itoa(tc.wantPort), "--client-addr=0.0.0.0:0",
				"--map-configmap=" + cc.Namespace + "/" + cachecluster.MapConfigMapName(cc.Name)} {
				if !slices.Contains(c.Args, arg) {
					t.Errorf("gateway args %v lack %s", c.Args, arg)
				}
			}
			wantHostPorts := []int32{0, 0}
			if tc.wantHostNet {
				wantHostPorts = []int32{tc.wantPort, cachecluster.MetricsPort}
			}
			if len(c.Ports) != 2 || c.Ports[0].Name != "redis" || c.Ports[0].ContainerPort != tc.wantPort ||
				c.Ports[0].HostPort != wantHostPorts[0] || c.Ports[1].HostPort != wantHostPorts[1] || c.ReadinessProbe == nil {
				t.Errorf("gateway container ports %+v, probe %v: want redis %d and metrics, host ports %v, a readiness probe",
					c.Ports, c.ReadinessProbe, tc.wantPort, wantHostPorts)
			}
			if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != cc.Spec.Gateway.Port || // defaulted by the API server
				svc.Spec.Ports[0].TargetPort.StrVal != "redis" || svc.Spec.Selector[cachecluster.LabelComponent] != cachecluster.ComponentGateway {
				t.Errorf("gateway Service %+v, want the gateway pods' redis port", svc.Spec)
			}
			if !labelsMatch(svc.Spec.Selector, ds.Spec.Template.Labels) {
				t.Errorf("Service selector %v does not select the DaemonSet's pods %v", svc.Spec.Selector, ds.Spec.Template.Labels)
			}
		})
	}
}

// TestGatewayModeSwitch changes a cluster's gateway from a Deployment to a
// DaemonSet and back: each time the new workload is created and the old
// one deleted, while the Service stays with its address. Replicas 0 then
// removes the gateway, its status and its condition.
func TestGatewayModeSwitch(t *testing.T) {
	startOperator(t, &clock{t: time.Now()})
	cc := newCluster(t, "gwsw", withStorage(v1alpha1.StorageManaged, 1, 1), withLayer("spine", 1, false))
	name := cachecluster.GatewayName(cc.Name)
	svc := &corev1.Service{}
	only := func(want, gone client.Object) func() (bool, error) {
		return func() (bool, error) {
			if err := get(t, want, cc.Namespace, name); err != nil {
				return false, client.IgnoreNotFound(err)
			}
			err := get(t, gone, cc.Namespace, name)
			return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
		}
	}
	eventually(t, "a gateway Deployment", only(&appsv1.Deployment{}, &appsv1.DaemonSet{}))
	if err := get(t, svc, cc.Namespace, name); err != nil {
		t.Fatal(err)
	}
	clusterIP := svc.Spec.ClusterIP

	steps := []struct {
		what       string
		edit       func(*v1alpha1.CacheClusterSpec)
		want, gone client.Object
		wantMode   v1alpha1.GatewayMode
	}{
		{"to a DaemonSet on the host network", func(s *v1alpha1.CacheClusterSpec) { daemonSetGateway(true, 0)(&s.Gateway) },
			&appsv1.DaemonSet{}, &appsv1.Deployment{}, v1alpha1.GatewayDaemonSet},
		{"back to a Deployment", func(s *v1alpha1.CacheClusterSpec) {
			s.Gateway.Mode, s.Gateway.HostNetwork = v1alpha1.GatewayDeployment, false
		}, &appsv1.Deployment{}, &appsv1.DaemonSet{}, v1alpha1.GatewayDeployment},
	}
	for _, st := range steps {
		patchCluster(t, cc, st.edit)
		eventually(t, "gateway switched "+st.what, only(st.want, st.gone))
		eventually(t, "status.gateway of mode "+string(st.wantMode), func() (bool, error) {
			stored := &v1alpha1.CacheCluster{}
			err := get(t, stored, cc.Namespace, cc.Name)
			return err == nil && stored.Status.Gateway != nil && stored.Status.Gateway.Mode == st.wantMode, err
		})
		if err := get(t, svc, cc.Namespace, name); err != nil || svc.Spec.ClusterIP != clusterIP {
			t.Errorf("gateway Service after switching %s: address %s (%v), want %s kept", st.what, svc.Spec.ClusterIP, err, clusterIP)
		}
	}

	patchCluster(t, cc, func(s *v1alpha1.CacheClusterSpec) { s.Gateway.Replicas = ptr.To(int32(0)) })
	eventually(t, "no gateway, no gateway status", func() (bool, error) {
		for _, o := range []client.Object{&appsv1.Deployment{}, &appsv1.DaemonSet{}, &corev1.Service{}} {
			if err := get(t, o, cc.Namespace, name); !apierrors.IsNotFound(err) {
				return false, client.IgnoreNotFound(err)
			}
		}
		stored := &v1alpha1.CacheCluster{}
		err := get(t, stored, cc.Namespace, cc.Name)
		return err == nil && stored.Status.Gateway == nil &&
			meta.FindStatusCondition(stored.Status.Conditions, string(v1alpha1.ConditionGatewayReady)) == nil, err
	})
}

// gatewayPods is the status the gateway workload's controller would write:
// desired pods, updated of them on the latest template, ready of them
// Ready.
type gatewayPods struct{ desired, updated, ready int32 }

// setGatewayStatus writes pods as the status of cc's gateway workload of
// mode, for its current generation (envtest runs no workload controller).
func setGatewayStatus(t *testing.T, cc *v1alpha1.CacheCluster, mode v1alpha1.GatewayMode, pods gatewayPods) {
	t.Helper()
	ctx, name := context.Background(), cachecluster.GatewayName(cc.Name)
	var obj client.Object
	var base client.Patch
	if mode == v1alpha1.GatewayDaemonSet {
		ds := &appsv1.DaemonSet{}
		if err := get(t, ds, cc.Namespace, name); err != nil {
			t.Fatal(err)
		}
		base = client.MergeFrom(ds.DeepCopy())
		ds.Status = appsv1.DaemonSetStatus{ObservedGeneration: ds.Generation, DesiredNumberScheduled: pods.desired,
			CurrentNumberScheduled: pods.desired, UpdatedNumberScheduled: pods.updated, NumberReady: pods.ready, NumberAvailable: pods.ready}
		obj = ds
	} else {
		dep := &appsv1.Deployment{}
		if err := get(t, dep, cc.Namespace, name); err != nil {
			t.Fatal(err)
		}
		base = client.MergeFrom(dep.DeepCopy())
		dep.Status = appsv1.DeploymentStatus{ObservedGeneration: dep.Generation, Replicas: pods.desired,
			UpdatedReplicas: pods.updated, ReadyReplicas: pods.ready, AvailableReplicas: pods.ready}
		obj = dep
	}
	if err := env.Client.Status().Patch(ctx, obj, base); err != nil {
		t.Fatal(err)
	}
}

// TestGatewayReady: GatewayReady follows the gateway workload's status —
// False while its controller has not acted (no kubelet or controller runs
// in envtest), while a rollout is under way or while pods are not Ready,
// with a message counting them; True once every desired pod is updated and
// Ready — and status.gateway reports the counts and the Service's address.
// The cluster's Ready condition does not wait for the gateway.
func TestGatewayReady(t *testing.T) {
	startOperator(t, &clock{t: time.Now()})
	type step struct {
		pods       gatewayPods
		wantStatus metav1.ConditionStatus
		wantReason string
		wantMsg    string
	}
	tests := []struct {
		name    string
		gateway func(*v1alpha1.GatewaySpec)
		mode    v1alpha1.GatewayMode
		steps   []step
	}{
		{"Deployment of 2", func(g *v1alpha1.GatewaySpec) { g.Replicas = ptr.To(int32(2)) }, v1alpha1.GatewayDeployment, []step{
			{gatewayPods{2, 1, 2}, metav1.ConditionFalse, v1alpha1.ReasonCreating, "rolling out, 1 of 2 gateway pods updated"},
			{gatewayPods{2, 2, 1}, metav1.ConditionFalse, v1alpha1.ReasonPodsNotReady, "Deployment gwra-gateway: 1 of 2 gateway pods ready"},
			{gatewayPods{2, 2, 2}, metav1.ConditionTrue, v1alpha1.ReasonReconciled, "2 of 2 gateway pods ready, serving at gwra-gateway."},
			{gatewayPods{2, 2, 0}, metav1.ConditionFalse, v1alpha1.ReasonPodsNotReady, "0 of 2 gateway pods ready"},
		}},
		{"DaemonSet on 3 nodes", daemonSetGateway(true, 0), v1alpha1.GatewayDaemonSet, []step{
			{gatewayPods{0, 0, 0}, metav1.ConditionFalse, v1alpha1.ReasonPodsNotReady, "no node runs a gateway pod"},
			{gatewayPods{3, 3, 2}, metav1.ConditionFalse, v1alpha1.ReasonPodsNotReady, "DaemonSet gwrb-gateway: 2 of 3 gateway pods ready"},
			{gatewayPods{3, 3, 3}, metav1.ConditionTrue, v1alpha1.ReasonReconciled, "3 of 3 gateway pods ready"},
			{gatewayPods{3, 2, 3}, metav1.ConditionFalse, v1alpha1.ReasonCreating, "rolling out, 2 of 3 gateway pods updated"},
		}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cc := newCluster(t, "gwr"+string(rune('a'+i)), withStorage(v1alpha1.StorageManaged, 1, 1), withLayer("spine", 1, false),
				withGateway(tc.gateway))
			stored := &v1alpha1.CacheCluster{}
			gatewayReady := func() *metav1.Condition {
				if err := get(t, stored, cc.Namespace, cc.Name); err != nil {
					return nil
				}
				return meta.FindStatusCondition(stored.Status.Conditions, string(v1alpha1.ConditionGatewayReady))
			}
			eventually(t, "GatewayReady False before the workload's controller acts", func() (bool, error) {
				c := gatewayReady()
				return c != nil && c.Status == metav1.ConditionFalse && c.Reason == v1alpha1.ReasonCreating, nil
			})
			for _, st := range tc.steps {
				setGatewayStatus(t, cc, tc.mode, st.pods)
				eventually(t, "GatewayReady "+string(st.wantStatus)+": "+st.wantMsg, func() (bool, error) {
					c := gatewayReady()
					return c != nil && c.Status == st.wantStatus && c.Reason == st.wantReason && strings.Contains(c.Message, st.wantMsg) &&
						stored.Status.Gateway != nil && stored.Status.Gateway.ReadyReplicas == st.pods.ready, nil
				})
				want := v1alpha1.GatewayStatus{Mode: tc.mode, DesiredReplicas: st.pods.desired, ReadyReplicas: st.pods.ready,
					Endpoint: cachecluster.GatewayName(cc.Name) + "." + cc.Namespace + ".svc:6379"}
				if got := *stored.Status.Gateway; got != want {
					t.Errorf("status.gateway %+v, want %+v", got, want)
				}
			}
			if r := meta.FindStatusCondition(stored.Status.Conditions, string(v1alpha1.ConditionReady)); r == nil || r.Reason != v1alpha1.ReasonPodsNotReady ||
				strings.Contains(r.Message, "gateway") {
				t.Errorf("Ready = %+v: want it about the members and shards only", r)
			}
		})
	}
}

// labelsMatch reports whether selector selects an object labelled lbl.
func labelsMatch(selector, lbl map[string]string) bool {
	for k, v := range selector {
		if lbl[k] != v {
			return false
		}
	}
	return len(selector) > 0
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }

package rbac_test

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/internal/testing/kubetest"
	"github.com/distcache/distcache/operator/controller/cachecluster"
	"github.com/distcache/distcache/placement/partmap"
)

// TestSecretsOnlyInGrantedNamespaces runs the operator with its Secret
// permissions bound in one namespace, as the chart's secretNamespaces
// does, and a CacheCluster in that namespace and one in another. The API
// server answers whether the account may touch Secrets anywhere else (it
// may not), the audit log shows every Secret request the operator made (in
// the granted namespace only, or refused), the other cluster reports
// SecretsForbidden without creating anything, and binding the permission
// in its namespace lets it go on.
func TestSecretsOnlyInGrantedNamespaces(t *testing.T) {
	ctx := t.Context()
	began := time.Now()
	const account = "operator-secrets"
	g, err := generatedRBAC()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := env.ServiceAccountConfig(ctx, operatorNamespace, account)
	if err != nil {
		t.Fatal(err)
	}
	granted, other := newNamespace(t), newNamespace(t)
	if err := grant(ctx, env.Client, account, g, granted); err != nil {
		t.Fatal(err)
	}
	user := kubetest.ServiceAccountUser(operatorNamespace, account)

	// What RBAC allows, asked of the API server once it has the
	// RoleBinding (its authorizer reads RBAC objects from a watch).
	eventually(t, "the RoleBinding in force", func() (bool, error) { return allowed(t, user, granted, "create"), nil })
	for _, tc := range []struct {
		ns, verb string
		want     bool
	}{
		{granted, "get", true}, {granted, "create", true}, {granted, "list", false}, {granted, "watch", false},
		{granted, "update", false}, {granted, "delete", false},
		{other, "get", false}, {other, "create", false}, {"", "get", false}, {"", "list", false}, {"", "watch", false},
	} {
		if got := allowed(t, user, tc.ns, tc.verb); got != tc.want {
			t.Errorf("%s secrets in namespace %q: allowed %v, want %v", tc.verb, tc.ns, got, tc.want)
		}
	}

	a := &scenarios{ns: granted, owner: t, statusPort: freePort(t)}
	b := &scenarios{ns: other, owner: t, statusPort: a.statusPort}
	a.start(t, cfg)
	storage := v1alpha1.StorageSpec{Racks: 1, ShardsPerRack: 1}
	ccA := a.newCluster(t, "shop", storage, 2)
	ccB := b.newCluster(t, "shop", storage, 1)
	eventually(t, "the data-plane key created in the granted namespace", func() (bool, error) {
		err := a.get(&corev1.Secret{}, cachecluster.DataPlaneKeySecretName("shop"))
		return err == nil, client.IgnoreNotFound(err)
	})
	var cond *metav1.Condition
	eventually(t, "SecretsForbidden in the other namespace", func() (bool, error) {
		err := b.get(ccB, ccB.Name)
		cond = meta.FindStatusCondition(ccB.Status.Conditions, string(v1alpha1.ConditionReady))
		return err == nil && cond != nil && cond.Reason == v1alpha1.ReasonSecretsForbidden, err
	})
	if !strings.Contains(cond.Message, "namespace "+other) || !strings.Contains(cond.Message, "secretNamespaces") {
		t.Errorf("Ready message %q does not say which namespace to add where", cond.Message)
	}
	var sets appsv1.StatefulSetList
	if err := env.Client.List(ctx, &sets, client.InNamespace(other)); err != nil {
		t.Fatal(err)
	}
	if len(sets.Items) > 0 {
		t.Errorf("%d StatefulSets created in %s before its data-plane key", len(sets.Items), other)
	}

	// The namespace listed: the cluster goes on at its next reconcile
	// (a change to it brings one at once).
	if err := grant(ctx, env.Client, account, g, other); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the second RoleBinding in force", func() (bool, error) { return allowed(t, user, other, "create"), nil })
	touch(t, ccB)
	eventually(t, "the data-plane key created once the namespace is granted", func() (bool, error) {
		err := b.get(&corev1.Secret{}, cachecluster.DataPlaneKeySecretName("shop"))
		return err == nil, client.IgnoreNotFound(err)
	})

	// The permission withdrawn from a namespace whose cluster runs: the
	// key exists (its pods started with it), so failover goes on.
	for _, p := range []string{"shop-spine-0", "shop-spine-1", "shop-rack-0-0"} {
		a.setPod(t, ccA.Name, p, true)
		a.startContainers(t, p)
	}
	eventually(t, "the running cluster Ready", func() (bool, error) {
		err := a.get(ccA, ccA.Name)
		return err == nil && meta.IsStatusConditionTrue(ccA.Status.Conditions, string(v1alpha1.ConditionReady)), err
	})
	if err := env.Client.Delete(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: account + "-secrets", Namespace: granted}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the RoleBinding withdrawn", func() (bool, error) { return !allowed(t, user, granted, "create"), nil })
	a.setPod(t, ccA.Name, "shop-spine-1", false)
	eventually(t, "a member failed without the Secret permission", func() (bool, error) {
		st, err := a.memberState("shop-spine-1")
		return st == partmap.Failed, err
	})
	if err := a.get(ccA, ccA.Name); err != nil {
		t.Fatal(err)
	}
	if c := meta.FindStatusCondition(ccA.Status.Conditions, string(v1alpha1.ConditionReady)); c != nil && c.Reason == v1alpha1.ReasonSecretsForbidden {
		t.Errorf("a running cluster blocked by SecretsForbidden: %s", c.Message)
	}

	// Every Secret request of the account since the test began, from the
	// audit log. The operator watches every namespace, so it also asks in
	// those where the package's other tests left CacheClusters (and is
	// refused there); it asks nowhere without one.
	withClusters, err := clusterNamespaces(ctx)
	if err != nil {
		t.Fatal(err)
	}
	events, err := kubetest.ReadAudit(auditLog)
	if err != nil {
		t.Fatal(err)
	}
	refused := 0
	for _, e := range events {
		if e.User.Username != user || e.ObjectRef == nil || e.ObjectRef.Resource != "secrets" || e.ResponseStatus == nil ||
			e.RequestReceived.Before(began) {
			continue
		}
		ns, code := e.ObjectRef.Namespace, e.ResponseStatus.Code
		switch {
		case e.Verb != "create" && e.Verb != "get":
			t.Errorf("the operator asked to %s secrets in %q", e.Verb, ns)
		case code == 403 && (ns == other || ns == granted):
			refused++ // before the grant in other, after the withdrawal in granted
		case !withClusters[ns]:
			t.Errorf("the operator asked to %s secrets in namespace %q, which holds no CacheCluster (answer %d)", e.Verb, ns, code)
		case code != 403 && ns != granted && ns != other:
			t.Errorf("the operator was allowed to %s secrets in namespace %q (answer %d)", e.Verb, ns, code)
		}
	}
	if refused == 0 {
		t.Error("the audit log shows no refused Secret request in the namespace without the permission")
	}
}

// clusterNamespaces lists the namespaces that hold a CacheCluster.
func clusterNamespaces(ctx context.Context) (map[string]bool, error) {
	var list v1alpha1.CacheClusterList
	if err := env.Client.List(ctx, &list); err != nil {
		return nil, err
	}
	ns := map[string]bool{}
	for _, cc := range list.Items {
		ns[cc.Namespace] = true
	}
	return ns, nil
}

// newNamespace creates a namespace for one test.
func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "rbac-"}}
	if err := env.Client.Create(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// allowed asks the API server whether user may verb secrets in ns ("" is
// every namespace).
func allowed(t *testing.T, user, ns, verb string) bool {
	t.Helper()
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:               user,
		Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + operatorNamespace, "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Resource: "secrets"},
	}}
	if err := env.Client.Create(t.Context(), sar); err != nil {
		t.Fatal(err)
	}
	return sar.Status.Allowed
}

// startContainers marks pod's containers running, as the kubelet does once
// their volumes are mounted.
func (s *scenarios) startContainers(t *testing.T, name string) {
	t.Helper()
	pod := &corev1.Pod{}
	if err := s.get(pod, name); err != nil {
		t.Fatal(err)
	}
	pod.Status.ContainerStatuses = nil
	for _, c := range pod.Spec.Containers {
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, Ready: true,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}},
		})
	}
	if err := env.Client.Status().Update(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
}

// touch changes an annotation of cc, which brings a reconcile.
func touch(t *testing.T, cc *v1alpha1.CacheCluster) {
	t.Helper()
	patch := client.MergeFrom(cc.DeepCopy())
	if cc.Annotations == nil {
		cc.Annotations = map[string]string{}
	}
	cc.Annotations["test.distcache.io/touched"] = "1"
	if err := env.Client.Patch(context.Background(), cc, patch); err != nil {
		t.Fatal(err)
	}
}

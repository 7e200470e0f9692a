package cachecluster

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/dataplane/kubemap"
)

// The data-plane pods read their partition map through the Kubernetes API
// (package kubemap) as their own ServiceAccount, which may only get and
// watch the cluster's map ConfigMap. The operator may grant that because it
// holds get and watch on ConfigMaps itself (the API server's escalation
// check).

// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=list;watch;create;update;deletecollection
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=roles;rolebindings,verbs=list;watch;create;update;deletecollection

// DataPlaneName names a cluster's data-plane ServiceAccount, Role and
// RoleBinding.
func DataPlaneName(cluster string) string { return cluster + "-data-plane" }

// mapConfigMapArgs point a data-plane process at the cluster's map
// ConfigMap, read with the pod's ServiceAccount (in-cluster config), by a
// watch and a GET every poll (layout.BackstopMapPoll).
func mapConfigMapArgs(cc *v1alpha1.CacheCluster, poll time.Duration) []string {
	return []string{"--map-configmap=" + cc.Namespace + "/" + MapConfigMapName(cc.Name), "--map-poll=" + poll.String()}
}

// reconcileDataPlaneRBAC keeps the data-plane ServiceAccount, its Role
// (kubemap.Rules of the map ConfigMap) and the RoleBinding between them.
func (r *Reconciler) reconcileDataPlaneRBAC(ctx context.Context, s *state) (ctrl.Result, error) {
	cc, name := s.cc, DataPlaneName(s.cc.Name)
	lbl := labels(cc, "data-plane")
	meta := func() metav1.ObjectMeta { return metav1.ObjectMeta{Name: name, Namespace: cc.Namespace} }
	sa := &corev1.ServiceAccount{ObjectMeta: meta()}
	if err := r.apply(ctx, cc, sa, func() { sa.Labels = lbl }); err != nil {
		return ctrl.Result{}, err
	}
	role := &rbacv1.Role{ObjectMeta: meta()}
	if err := r.apply(ctx, cc, role, func() {
		role.Labels = lbl
		role.Rules = kubemap.Rules(MapConfigMapName(cc.Name))
	}); err != nil {
		return ctrl.Result{}, err
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: meta()}
	if err := r.apply(ctx, cc, rb, func() {
		rb.Labels = lbl
		rb.RoleRef = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}
		rb.Subjects = []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: cc.Namespace}}
	}); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, nil
}

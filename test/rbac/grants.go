package rbac_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/distcache/distcache/internal/testing/kubetest"
)

// The operator's identity, as the Helm chart installs it.
const (
	operatorNamespace = "distcache-system"
	operatorAccount   = "distcache-operator"
)

// permission is one verb on one resource (resource/subresource) of an API
// group: the unit RBAC grants and the audit log records.
type permission struct{ group, resource, verb string }

func (p permission) String() string {
	g := p.group
	if g == "" {
		g = "core"
	}
	return p.verb + " " + g + "/" + p.resource
}

// generatedRBAC reads config/rbac/role.yaml: the ClusterRole and the Role of
// the leader-election Lease.
func generatedRBAC() (*rbacv1.ClusterRole, *rbacv1.Role, error) {
	raw, err := os.ReadFile(filepath.Join(kubetest.RepoRoot(), "config", "rbac", "role.yaml"))
	if err != nil {
		return nil, nil, fmt.Errorf("cannot read the generated RBAC: %w", err)
	}
	var cr *rbacv1.ClusterRole
	var role *rbacv1.Role
	dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	for {
		var doc rbacv1.Role // a ClusterRole decodes alike (no aggregation here)
		if err := dec.Decode(&doc); err != nil {
			break
		}
		switch doc.Kind {
		case "ClusterRole":
			cr = &rbacv1.ClusterRole{ObjectMeta: doc.ObjectMeta, Rules: doc.Rules}
		case "Role":
			role = doc.DeepCopy()
		}
	}
	if cr == nil || role == nil {
		return nil, nil, fmt.Errorf("config/rbac/role.yaml: want a ClusterRole and a Role, got %v and %v", cr != nil, role != nil)
	}
	return cr, role, nil
}

// grant installs the generated RBAC under the ServiceAccount's name and
// binds it to the account, the way the chart does: the ClusterRole
// cluster-wide, the Lease's Role in the operator's namespace.
func grant(ctx context.Context, c client.Client, account string, cr *rbacv1.ClusterRole, role *rbacv1.Role) error {
	subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: account, Namespace: operatorNamespace}}
	for _, obj := range []client.Object{
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: account}, Rules: cr.Rules},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: account}, Subjects: subject,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: account}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: account, Namespace: operatorNamespace}, Rules: role.Rules},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: account, Namespace: operatorNamespace}, Subjects: subject,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: account}},
	} {
		if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("cannot create %T %s: %w", obj, obj.GetName(), err)
		}
	}
	return nil
}

// permissions expands rules into single permissions.
func permissions(rules []rbacv1.PolicyRule) []permission {
	var out []permission
	for _, r := range rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					out = append(out, permission{g, res, v})
				}
			}
		}
	}
	return out
}

// without returns rules less one permission.
func without(rules []rbacv1.PolicyRule, p permission) []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	for _, q := range permissions(rules) {
		if q != p {
			out = append(out, rbacv1.PolicyRule{APIGroups: []string{q.group}, Resources: []string{q.resource}, Verbs: []string{q.verb}})
		}
	}
	return out
}

// auditPermission is the permission an audited request needed.
func auditPermission(e kubetest.AuditEvent) permission {
	res := e.ObjectRef.Resource
	if e.ObjectRef.Subresource != "" {
		res += "/" + e.ObjectRef.Subresource
	}
	return permission{e.ObjectRef.APIGroup, res, e.Verb}
}

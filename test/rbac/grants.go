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

// rbac is the operator's generated RBAC: the ClusterRole and the Role of
// the leader-election Lease (config/rbac/role.yaml), and the ClusterRole of
// its Secret permissions (config/rbac/secrets/role.yaml), which the chart
// binds per namespace.
type rbac struct {
	operator *rbacv1.ClusterRole
	lease    *rbacv1.Role
	secrets  *rbacv1.ClusterRole
}

// generatedRBAC reads config/rbac.
func generatedRBAC() (*rbac, error) {
	g := &rbac{}
	for _, file := range []string{"role.yaml", "secrets/role.yaml"} {
		raw, err := os.ReadFile(filepath.Join(kubetest.RepoRoot(), "config", "rbac", file))
		if err != nil {
			return nil, fmt.Errorf("cannot read the generated RBAC: %w", err)
		}
		dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
		for {
			var doc rbacv1.Role // a ClusterRole decodes alike (no aggregation here)
			if err := dec.Decode(&doc); err != nil {
				break
			}
			switch {
			case doc.Kind == "ClusterRole" && file == "role.yaml":
				g.operator = &rbacv1.ClusterRole{ObjectMeta: doc.ObjectMeta, Rules: doc.Rules}
			case doc.Kind == "ClusterRole":
				g.secrets = &rbacv1.ClusterRole{ObjectMeta: doc.ObjectMeta, Rules: doc.Rules}
			case doc.Kind == "Role":
				g.lease = doc.DeepCopy()
			}
		}
	}
	if g.operator == nil || g.lease == nil || g.secrets == nil {
		return nil, fmt.Errorf("config/rbac: want two ClusterRoles and a Role, got %v, %v and %v", g.operator != nil, g.secrets != nil, g.lease != nil)
	}
	return g, nil
}

// grant installs the generated RBAC under the ServiceAccount's name and
// binds it to the account, the way the chart does: the ClusterRole
// cluster-wide, the Lease's Role in the operator's namespace, the Secret
// permissions in secretNamespaces only.
func grant(ctx context.Context, c client.Client, account string, g *rbac, secretNamespaces ...string) error {
	subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: account, Namespace: operatorNamespace}}
	objs := []client.Object{
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: account}, Rules: g.operator.Rules},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: account}, Subjects: subject,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: account}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: account, Namespace: operatorNamespace}, Rules: g.lease.Rules},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: account, Namespace: operatorNamespace}, Subjects: subject,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: account}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: account + "-secrets"}, Rules: g.secrets.Rules},
	}
	for _, ns := range secretNamespaces {
		objs = append(objs, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: account + "-secrets", Namespace: ns}, Subjects: subject,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: account + "-secrets"}})
	}
	for _, obj := range objs {
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

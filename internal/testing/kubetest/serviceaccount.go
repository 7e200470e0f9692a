package kubetest

import (
	"context"
	"fmt"
	"os"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ServiceAccount creates ServiceAccount namespace/name bound to a Role with
// rules (none: no Role), and returns a client configuration that
// authenticates with a token of it from the TokenRequest API, as a pod's
// projected token does. The API server authorizes it with RBAC.
func (e *Env) ServiceAccount(ctx context.Context, namespace, name string, rules []rbacv1.PolicyRule) (*rest.Config, error) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
	if err := e.Client.Create(ctx, sa); client.IgnoreAlreadyExists(err) != nil {
		return nil, fmt.Errorf("cannot create ServiceAccount %s: %w", name, err)
	}
	if len(rules) > 0 {
		role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}, Rules: rules}
		if err := e.Client.Create(ctx, role); err != nil {
			return nil, fmt.Errorf("cannot create Role %s: %w", name, err)
		}
		rb := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: namespace}},
		}
		if err := e.Client.Create(ctx, rb); err != nil {
			return nil, fmt.Errorf("cannot create RoleBinding %s: %w", name, err)
		}
	}
	return e.ServiceAccountToken(ctx, namespace, name)
}

// ServiceAccountConfig creates the ServiceAccount namespace/name, and its
// namespace, unless they exist, and returns a client configuration that
// authenticates as it (ServiceAccountToken): its rights are whatever RBAC
// bindings name it.
func (e *Env) ServiceAccountConfig(ctx context.Context, namespace, name string) (*rest.Config, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if err := e.Client.Create(ctx, ns); client.IgnoreAlreadyExists(err) != nil {
		return nil, fmt.Errorf("cannot create namespace %s: %w", namespace, err)
	}
	return e.ServiceAccount(ctx, namespace, name, nil)
}

// ServiceAccountToken returns a client configuration that authenticates as
// the existing ServiceAccount namespace/name with a token from the
// TokenRequest API, valid for an hour.
func (e *Env) ServiceAccountToken(ctx context.Context, namespace, name string) (*rest.Config, error) {
	cs, err := kubernetes.NewForConfig(e.Config)
	if err != nil {
		return nil, fmt.Errorf("cannot create a clientset: %w", err)
	}
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("cannot request a token for ServiceAccount %s/%s: %w", namespace, name, err)
	}
	return &rest.Config{
		Host:            e.Config.Host,
		BearerToken:     tr.Status.Token,
		TLSClientConfig: rest.TLSClientConfig{CAData: e.Config.CAData},
	}, nil
}

// ServiceAccountUser is the user name the API server gives namespace/name's
// tokens.
func ServiceAccountUser(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}

// WriteKubeconfig writes a kubeconfig file for cfg (a server, its CA and a
// bearer token) to path, for processes the test starts.
func WriteKubeconfig(cfg *rest.Config, path string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["user"] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "user"}
	kc.CurrentContext = "envtest"
	b, err := clientcmd.Write(*kc)
	if err != nil {
		return fmt.Errorf("cannot encode kubeconfig: %w", err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return fmt.Errorf("cannot write kubeconfig: %w", err)
	}
	return nil
}

package kubetest

import (
	"context"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// ServiceAccountConfig creates the ServiceAccount namespace/name (and its
// namespace) unless they exist, and returns a client configuration that
// authenticates as it with a token from the TokenRequest API — what a pod
// running under that ServiceAccount gets — valid for an hour.
func (e *Env) ServiceAccountConfig(ctx context.Context, namespace, name string) (*rest.Config, error) {
	cs, err := kubernetes.NewForConfig(e.Config)
	if err != nil {
		return nil, fmt.Errorf("cannot create a clientset: %w", err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("cannot create namespace %s: %w", namespace, err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
	if _, err := cs.CoreV1().ServiceAccounts(namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("cannot create service account %s/%s: %w", namespace, name, err)
	}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	tr, err = cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, tr, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("cannot get a token for service account %s/%s: %w", namespace, name, err)
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

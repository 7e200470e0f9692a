package switchfabric_test

import (
	"context"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/internal/testing/certtest"
	"github.com/distcache/distcache/internal/testing/poll"
	"github.com/distcache/distcache/internal/testing/switchtest"
)

// tlsSecret creates a kubernetes.io/tls Secret of the files' contents.
func tlsSecret(t *testing.T, ns, name, cert, key, ca string) {
	t.Helper()
	data := map[string][]byte{}
	for k, f := range map[string]string{corev1.TLSCertKey: cert, corev1.TLSPrivateKeyKey: key, "ca.crt": ca} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		data[k] = b
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Type: corev1.SecretTypeTLS, Data: data}
	if err := env.Client.Create(context.Background(), sec); err != nil {
		t.Fatal(err)
	}
}

// TestTLSFromSecret: with tlsSecretRef, the operator's sessions (P4Runtime
// and gNMI) to a switch that requires mutual TLS use the Secret's client
// certificate and check the switch against its ca.crt; a Secret trusting
// another CA leaves the switch unreachable, with the reason in the status.
func TestTLSFromSecret(t *testing.T) {
	startOperator(t)
	dir := t.TempDir()
	ca := certtest.NewCA(t, dir, "switch-ca")
	serverCert, serverKey := ca.Server(t, "switch")
	clientCert, clientKey := ca.Client(t, "operator")
	other := certtest.NewCA(t, dir, "other-ca")
	target := switchtest.StartTarget(t, 1, 1, switchtest.WithTLS(serverCert, serverKey, ca.Pool()))

	ns := namespace(t)
	tlsSecret(t, ns, "switch-tls", clientCert, clientKey, ca.File)
	f := newFabric(t, ns, "fabric", spineSwitch("spine-0", target.P4Runtime, target.Addr().String()), withTLSSecret("switch-tls"))
	newCluster(t, ns, "shop", "fabric")
	fabricStatus(t, f, "programmed over mutual TLS, ports read over gNMI with TLS", func(s *v1alpha1.SwitchFabricStatus) bool {
		return is(s, v1alpha1.ConditionReady, true, v1alpha1.ReasonReconciled) && len(s.SwitchStatuses) == 1 && s.SwitchStatuses[0].Ports > 0
	})
	poll.Eventually(t, "lease renewed over TLS", func() (bool, error) {
		until, err := leaseUntil(target.Switch())
		return until > 0, err
	})

	// The same switch, from a fabric whose Secret trusts another CA.
	ns = namespace(t)
	tlsSecret(t, ns, "switch-tls", clientCert, clientKey, other.File)
	f = newFabric(t, ns, "fabric", spineSwitch("spine-0", target.P4Runtime, target.Addr().String()), withTLSSecret("switch-tls"))
	newCluster(t, ns, "shop", "fabric")
	fabricStatus(t, f, "unreachable: the switch's certificate is not trusted", func(s *v1alpha1.SwitchFabricStatus) bool {
		return is(s, v1alpha1.ConditionReady, false, v1alpha1.ReasonSwitchUnreachable) && len(s.SwitchStatuses) == 1 &&
			strings.Contains(s.SwitchStatuses[0].Message, "certificate")
	})
}

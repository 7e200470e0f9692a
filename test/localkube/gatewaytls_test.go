package localkube

import (
	"context"
	"crypto/tls"
	"net"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/distcache/distcache/internal/testing/certtest"
	"github.com/distcache/distcache/internal/testing/poll"
	"github.com/distcache/distcache/operator/controller/cachecluster"
)

// gatewayServesTLS gives the sample's gateway a certificate from a
// kubernetes.io/tls Secret (spec.gateway.tlsSecretName), as
// docs/gateway.md says: the kubelet mounts the Secret into the rolled-out
// gateway pod, GatewayReady comes back, a client that trusts the
// certificate's CA reads and writes through the Service over TLS (as the
// user of gatewayAuthenticates, whose Secret stays), and a plaintext
// client gets no answer.
func gatewayServesTLS(ctx context.Context, t *testing.T, k *kube, clusterIP string) {
	t.Helper()
	name := cachecluster.GatewayName(sample)
	host := name + ".default.svc"
	ca := certtest.NewCA(t, t.TempDir(), "localkube-gateway-ca")
	cert, key := ca.Server(t, name, host)
	secret := sample + "-gateway-tls"
	k.do("", "create", "secret", "tls", secret, "--cert="+cert, "--key="+key)
	k.do("", "patch", "cachecluster", sample, "--type=merge",
		"-p", `{"spec":{"gateway":{"tlsSecretName":"`+secret+`"}}}`)
	k.do("", "rollout", "status", "deployment/"+name, "--timeout=240s")
	k.do("", "wait", "--for=condition=GatewayReady", "cachecluster/"+sample, "--timeout=240s")
	addr := net.JoinHostPort(clusterIP, "6379")
	secure := redis.NewClient(&redis.Options{Addr: addr, Username: gatewayUser, Password: gatewayPassword, MaxRetries: -1,
		TLSConfig: &tls.Config{RootCAs: ca.Pool(), ServerName: host, MinVersion: tls.VersionTLS12}})
	defer secure.Close()
	plain := redis.NewClient(&redis.Options{Addr: addr, Username: gatewayUser, Password: gatewayPassword, MaxRetries: -1})
	defer plain.Close()
	// kube-proxy leads new connections to the new pod once the old one has
	// left the Service's endpoints.
	poll.Eventually(t, "SET over TLS through the gateway Service", func() (bool, error) {
		err := secure.Set(ctx, "localkube:tls", "over TLS", 0).Err()
		return err == nil, err
	})
	poll.Eventually(t, "no plaintext answer from the gateway", func() (bool, error) {
		err := plain.Ping(ctx).Err()
		return err != nil, err
	})
	if got, err := secure.Get(ctx, "localkube:auth").Result(); err != nil || got != "as "+gatewayUser {
		t.Fatalf("GET over TLS through the gateway Service = %q (%v), want the value written before", got, err)
	}
	t.Logf("gateway with TLS Secret %s: %s reads and writes over TLS (CA-verified for %s), plaintext gets no answer",
		secret, gatewayUser, host)
}

package cachecluster_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/operator/controller/cachecluster"
)

// withDirectReads sets spec.dataPlane.directReads and directWrites.
func withDirectReads(on bool) clusterOption {
	return func(cc *v1alpha1.CacheCluster) {
		cc.Spec.DataPlane = &v1alpha1.DataPlaneSpec{DirectReads: on, DirectWrites: on}
	}
}

// TestGatewayLogsInToRedis renders the gateway of a cluster whose Redis
// needs a password and TLS: with direct reads it logs in as the shims do,
// from the auth Secret and the CA bundle of the servers' certificate
// Secret (never their key), naming each server by its address; without,
// it gets neither.
func TestGatewayLogsInToRedis(t *testing.T) {
	startOperator(t, &clock{t: time.Now()})
	login := []string{"--redis-password-file=/etc/distcache/redis-auth/password", "--redis-previous-password-file=/etc/distcache/redis-auth/previous",
		"--redis-username=app", "--redis-tls", "--redis-tls-ca-file=/etc/distcache/redis-server-tls/ca.crt"}
	for i, direct := range []bool{true, false} {
		name := "gwlogin" + string(rune('a'+i))
		cc := newCluster(t, name, withLayer("spine", 1, false), withDirectReads(direct),
			withRedisSecurity(&v1alpha1.RedisAuthSpec{SecretName: "redis-login", Username: "app"}, &v1alpha1.RedisTLSSpec{CertSecretName: "redis-cert"}))
		dep := &appsv1.Deployment{}
		eventually(t, "gateway Deployment", func() (bool, error) {
			err := get(t, dep, cc.Namespace, cachecluster.GatewayName(name))
			return err == nil, err
		})
		pod := &dep.Spec.Template.Spec
		gw := containerNamed(t, pod, "gateway")
		for _, want := range login {
			if got := slices.Contains(gw.Args, want); got != direct {
				t.Errorf("direct reads %v: argument %s in %v: %v", direct, want, gw.Args, got)
			}
		}
		if slices.ContainsFunc(gw.Args, func(a string) bool { return strings.HasPrefix(a, "--redis-tls-server-name") }) {
			t.Errorf("gateway args %v name a server: each server's name is the host of its address", gw.Args)
		}
		secrets := map[string][]string{}
		for _, v := range pod.Volumes {
			if v.Secret != nil {
				var keys []string
				for _, k := range v.Secret.Items {
					keys = append(keys, k.Key)
				}
				secrets[v.Secret.SecretName] = keys
			}
		}
		if keys, ok := secrets["redis-login"]; ok != direct || len(keys) != 0 {
			t.Errorf("direct reads %v: Secret volumes %v, want the whole auth Secret: %v", direct, secrets, direct)
		}
		if keys, ok := secrets["redis-cert"]; ok != direct || (direct && !slices.Equal(keys, []string{"ca.crt"})) {
			t.Errorf("direct reads %v: Secret volumes %v, want the certificate Secret's ca.crt alone: %v", direct, secrets, direct)
		}
	}
}

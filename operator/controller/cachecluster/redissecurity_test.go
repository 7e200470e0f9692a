package cachecluster_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/operator/controller/cachecluster"
)

// withRedisSecurity sets storage.auth and storage.tls.
func withRedisSecurity(auth *v1alpha1.RedisAuthSpec, tls *v1alpha1.RedisTLSSpec) clusterOption {
	return func(cc *v1alpha1.CacheCluster) { cc.Spec.Storage.Auth, cc.Spec.Storage.TLS = auth, tls }
}

// containerNamed is the container of pod named name.
func containerNamed(t *testing.T, pod *corev1.PodSpec, name string) corev1.Container {
	t.Helper()
	for _, c := range append(slices.Clone(pod.InitContainers), pod.Containers...) {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no container %s in %v", name, pod.Containers)
	return corev1.Container{}
}

// TestManagedRedisSecurity renders a managed rack with a password and TLS:
// redis-server starts from the ACL file an init container renders, serves
// TLS only, and no argument or variable holds a secret.
func TestManagedRedisSecurity(t *testing.T) {
	startOperator(t, &clock{t: time.Now()})
	tests := []struct {
		name      string
		auth      *v1alpha1.RedisAuthSpec
		tls       *v1alpha1.RedisTLSSpec
		redisArgs []string // in redis-server's command
		shimArgs  []string
		noArgs    []string // in neither
		init      bool
	}{
		{"password", &v1alpha1.RedisAuthSpec{SecretName: "redis-login", Username: "shim"}, nil,
			[]string{"--aclfile", cachecluster.RedisACLFile},
			[]string{"--redis-password-file=/etc/distcache/redis-auth/password", "--redis-previous-password-file=/etc/distcache/redis-auth/previous",
				"--redis-username=shim", "--redis-acl-sync"},
			[]string{"--tls-port", "--redis-tls"}, true},
		{"TLS", nil, &v1alpha1.RedisTLSSpec{CertSecretName: "redis-cert"},
			[]string{"--tls-port", "--tls-cert-file", "/etc/distcache/redis-server-tls/tls.crt", "--tls-key-file"},
			[]string{"--redis-tls", "--redis-tls-ca-file=/etc/distcache/redis-server-tls/ca.crt",
				"--redis-server-cert-file=/etc/distcache/redis-server-tls/tls.crt", "--redis-server-key-file=/etc/distcache/redis-server-tls/tls.key"},
			[]string{"--aclfile", "--redis-acl-sync"}, false},
		{"password and TLS with a CA Secret and a name", &v1alpha1.RedisAuthSpec{SecretName: "redis-login", PasswordKey: "pw", PreviousPasswordKey: "next"},
			&v1alpha1.RedisTLSSpec{CertSecretName: "redis-cert", CASecretName: "redis-ca", ServerName: "redis.example"},
			[]string{"--aclfile", "--tls-port"},
			[]string{"--redis-password-file=/etc/distcache/redis-auth/pw", "--redis-previous-password-file=/etc/distcache/redis-auth/next",
				"--redis-tls-ca-file=/etc/distcache/redis-tls/ca.crt", "--redis-tls-server-name=redis.example"},
			[]string{"--redis-username"}, true},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			name := "sec" + string(rune('a'+i))
			cc := newCluster(t, name, withLayer("spine", 1, false), withRedisSecurity(tc.auth, tc.tls))
			sts := &appsv1.StatefulSet{}
			eventually(t, "rack StatefulSet", func() (bool, error) { err := get(t, sts, cc.Namespace, name+"-rack-0"); return err == nil, err })
			pod := &sts.Spec.Template.Spec
			redis, shim := containerNamed(t, pod, "redis"), containerNamed(t, pod, "shim")
			for _, want := range tc.redisArgs {
				if !slices.Contains(redis.Command, want) {
					t.Errorf("redis command %v, want %s", redis.Command, want)
				}
			}
			for _, want := range tc.shimArgs {
				if !slices.Contains(shim.Args, want) {
					t.Errorf("shim args %v, want %s", shim.Args, want)
				}
			}
			for _, no := range tc.noArgs {
				if slices.ContainsFunc(append(slices.Clone(redis.Command), shim.Args...), func(a string) bool { return strings.HasPrefix(a, no) }) {
					t.Errorf("an argument %s in %v %v", no, redis.Command, shim.Args)
				}
			}
			if tc.tls != nil && tc.tls.ServerName == "" {
				want := "--redis-tls-server-name=$(POD_NAME)." + name + "-rack-0." + cc.Namespace + ".svc"
				if !slices.Contains(shim.Args, want) {
					t.Errorf("shim args %v, want %s", shim.Args, want)
				}
			}
			if got := len(pod.InitContainers) == 1; got != tc.init {
				t.Fatalf("init containers %v, want the ACL file's: %v", pod.InitContainers, tc.init)
			}
			if tc.init {
				init := containerNamed(t, pod, "redis-acl")
				if init.Args[0] != "redis-acl" || !slices.Contains(init.Args, "--out="+cachecluster.RedisACLFile) {
					t.Errorf("init args %v", init.Args)
				}
			}
			for _, c := range append(slices.Clone(pod.InitContainers), pod.Containers...) {
				for _, e := range c.Env {
					if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
						t.Errorf("container %s takes %s from a Secret in its environment", c.Name, e.Name)
					}
				}
			}
			secrets := map[string]string{}
			for _, v := range pod.Volumes {
				if v.Secret != nil {
					secrets[v.Name] = v.Secret.SecretName
				}
			}
			if tc.auth != nil && secrets[cachecluster.RedisAuthVolume] != tc.auth.SecretName {
				t.Errorf("Secret volumes %v, want %s", secrets, tc.auth.SecretName)
			}
			if tc.tls != nil && secrets[cachecluster.RedisServerTLSVolume] != tc.tls.CertSecretName {
				t.Errorf("Secret volumes %v, want %s", secrets, tc.tls.CertSecretName)
			}
		})
	}
}

// TestRedisOperatorSecurity maps storage.auth and storage.tls onto the
// Redis object: redisSecret, TLS, and the shim's login.
func TestRedisOperatorSecurity(t *testing.T) {
	startOperator(t, &clock{t: time.Now()})
	cc := newCluster(t, "otsec", withStorage(v1alpha1.StorageRedisOperator, 1, 1), withLayer("spine", 1, false),
		withRedisSecurity(&v1alpha1.RedisAuthSpec{SecretName: "redis-login"}, &v1alpha1.RedisTLSSpec{CertSecretName: "redis-cert"}))
	r := &unstructured.Unstructured{}
	r.SetGroupVersionKind(cachecluster.RedisGVK)
	eventually(t, "Redis object", func() (bool, error) { err := get(t, r, cc.Namespace, "otsec-rack-0-0"); return err == nil, err })
	if name, _, _ := unstructured.NestedString(r.Object, "spec", "kubernetesConfig", "redisSecret", "name"); name != "redis-login" {
		t.Errorf("redisSecret name %q, want redis-login", name)
	}
	if key, _, _ := unstructured.NestedString(r.Object, "spec", "kubernetesConfig", "redisSecret", "key"); key != "password" {
		t.Errorf("redisSecret key %q, want password", key)
	}
	if s, _, _ := unstructured.NestedString(r.Object, "spec", "TLS", "secret", "secretName"); s != "redis-cert" {
		t.Errorf("TLS secret %q, want redis-cert", s)
	}
	sidecars, _, _ := unstructured.NestedSlice(r.Object, "spec", "sidecars")
	cmd, _, _ := unstructured.NestedStringSlice(sidecars[0].(map[string]any), "command")
	for _, want := range []string{"--redis-password-file=/etc/distcache/redis-auth/password", "--redis-tls",
		"--redis-tls-ca-file=/etc/distcache/redis-server-tls/ca.crt", "--redis-tls-server-name=otsec-rack-0-0." + cc.Namespace + ".svc"} {
		if !slices.Contains(cmd, want) {
			t.Errorf("shim command %v, want %s", cmd, want)
		}
	}
	if slices.Contains(cmd, "--redis-acl-sync") {
		t.Errorf("shim command %v syncs the ACL of a Redis the redis-operator configures", cmd)
	}
	vols, _, _ := unstructured.NestedSlice(r.Object, "spec", "storage", "volumeMount", "volume")
	names := map[string]bool{}
	for _, v := range vols {
		names[v.(map[string]any)["name"].(string)] = true
	}
	if !names[cachecluster.RedisAuthVolume] || !names[cachecluster.RedisServerTLSVolume] {
		t.Errorf("volumes %v, want the login's and the certificate's", vols)
	}
}

package plan_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/internal/testing/certtest"
	"github.com/distcache/distcache/standalone/plan"
)

// TestRedisSecurity plans storage.auth and storage.tls from directories
// that stand for their Secrets: each local redis-server starts from an
// ACL file and serves TLS only, each shim logs in and keeps them current.
func TestRedisSecurity(t *testing.T) {
	authDir, tlsDir := t.TempDir(), t.TempDir()
	ca := certtest.NewCA(t, tlsDir, "ca")
	if err := os.Rename(ca.File, filepath.Join(tlsDir, "ca.crt")); err != nil {
		t.Fatal(err)
	}
	for dir, files := range map[string][]string{authDir: {"password"}, tlsDir: {"tls.crt", "tls.key"}} {
		for _, f := range files {
			if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	secure := func(s *v1alpha1.CacheClusterSpec) {
		s.Storage.Auth = &v1alpha1.RedisAuthSpec{SecretName: "login", Username: "shim"}
		s.Storage.TLS = &v1alpha1.RedisTLSSpec{CertSecretName: "cert"}
	}
	tests := []struct {
		name                string
		authDir, tlsDir     string
		errHas              string
		redisArgs, shimArgs []string
	}{
		{"both directories", authDir, tlsDir, "",
			[]string{"--aclfile", "--tls-port", filepath.Join(tlsDir, "tls.crt")},
			[]string{"--redis-password-file=" + filepath.Join(authDir, "password"), "--redis-username=shim", "--redis-acl-sync",
				"--redis-tls", "--redis-tls-ca-file=" + filepath.Join(tlsDir, "ca.crt"), "--redis-server-cert-file=" + filepath.Join(tlsDir, "tls.crt")}},
		{"no auth directory", "", tlsDir, "--redis-auth-dir", nil, nil},
		{"no TLS directory", authDir, "", "--redis-tls-dir", nil, nil},
		{"no password file", tlsDir, tlsDir, "password", nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := plan.New(newCluster(t, secure), plan.Options{RunDir: t.TempDir(), Ports: sequentialPorts, RedisAuthDir: tc.authDir, RedisTLSDir: tc.tlsDir})
			if tc.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("New: %v, want an error with %q", err, tc.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, pr := range p.Processes {
				want := map[plan.Kind][]string{plan.Redis: tc.redisArgs, plan.Shim: tc.shimArgs}[pr.Kind]
				for _, w := range want {
					if !slices.Contains(pr.Args, w) {
						t.Errorf("%s args %v, want %s", pr.Name, pr.Args, w)
					}
				}
				if pr.Kind == plan.Redis && pr.ACLFile == "" {
					t.Errorf("%s has no ACL file", pr.Name)
				}
			}
		})
	}
}

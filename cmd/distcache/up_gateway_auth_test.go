package main

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/distcache/distcache/internal/testing/certtest"
)

// gatewayUsersAndTLS writes a users directory with the user app (password
// app-pass) and a certificate for 127.0.0.1 with its key, for `distcache up
// --gateway-users-dir --gateway-tls-cert --gateway-tls-key`; pool trusts
// the certificate.
func gatewayUsersAndTLS(t *testing.T) (usersDir, cert, key string, pool *x509.CertPool) {
	t.Helper()
	dir := t.TempDir()
	usersDir = filepath.Join(dir, "users")
	if err := os.Mkdir(usersDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(usersDir, "app"), []byte("app-pass\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ca := certtest.NewCA(t, dir, "ca")
	cert, key = ca.Server(t, "gateway")
	return usersDir, cert, key, ca.Pool()
}

// checkGatewayAuthTLS talks to a gateway that requires AUTH of the user
// app over TLS, with go-redis: a plaintext client gets nothing, a client
// that has not authenticated gets NOAUTH, a wrong password WRONGPASS, and
// the user app sets and reads a key.
func checkGatewayAuthTLS(t *testing.T, addr string, pool *x509.CertPool) {
	t.Helper()
	ctx := t.Context()
	tlsConfig := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	client := func(o redis.Options) *redis.Client {
		o.Addr, o.MaxRetries = addr, -1
		rdb := redis.NewClient(&o)
		t.Cleanup(func() { _ = rdb.Close() })
		return rdb
	}
	if err := client(redis.Options{Username: "app", Password: "app-pass"}).Ping(ctx).Err(); err == nil {
		t.Errorf("PING in plaintext to the TLS gateway succeeded")
	}
	if err := client(redis.Options{TLSConfig: tlsConfig}).Get(ctx, "k").Err(); err == nil || !strings.HasPrefix(err.Error(), "NOAUTH") {
		t.Errorf("GET before AUTH: %v, want NOAUTH", err)
	}
	if err := client(redis.Options{TLSConfig: tlsConfig, Username: "app", Password: "wrong"}).Ping(ctx).Err(); err == nil || !strings.HasPrefix(err.Error(), "WRONGPASS") {
		t.Errorf("a wrong password: %v, want WRONGPASS", err)
	}
	app := client(redis.Options{TLSConfig: tlsConfig, Username: "app", Password: "app-pass"})
	if err := app.Set(ctx, "greeting", "hello", 0).Err(); err != nil {
		t.Fatalf("SET as app over TLS: %v", err)
	}
	if got, err := app.Get(ctx, "greeting").Result(); err != nil || got != "hello" {
		t.Fatalf("GET as app over TLS: %q, %v; want hello", got, err)
	}
}

// TestUpRefusesGatewayFiles checks that up refuses the gateway's users and
// TLS files, and a spec that asks for Secrets instead, itself, before it
// starts anything: the plan's refusals (standalone/plan) surface as up's
// error, not in the log of a cluster that cannot start.
func TestUpRefusesGatewayFiles(t *testing.T) {
	users, cert, _, _ := gatewayUsersAndTLS(t)
	dir := t.TempDir()
	file, secretFile := filepath.Join(dir, "cluster.yaml"), filepath.Join(dir, "secret.yaml")
	if err := os.WriteFile(file, []byte(smallCluster), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(secretFile, []byte(smallCluster+"  gateway: {usersSecretName: users}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"usersSecretName", []string{"-f", secretFile}, "standalone mode has no Secrets: pass the users as files with distcache up --gateway-users-dir DIR"},
		{"a missing users directory", []string{"-f", file, "--gateway-users-dir", filepath.Join(dir, "nobody")}, "cannot use --gateway-users-dir: "},
		{"a certificate without its key", []string{"-f", file, "--gateway-users-dir", users, "--gateway-tls-cert", cert}, "--gateway-tls-cert and --gateway-tls-key go together"},
		{"no gateway", []string{"-f", file, "--gateway=false", "--gateway-users-dir", users}, "the cluster runs no gateway"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runDir := filepath.Join(t.TempDir(), "run")
			_, err := runCommand(t, append([]string{"up", "--run-dir", runDir}, tc.args...)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("up: %v, want an error with %q", err, tc.want)
			}
			if _, err := os.Stat(runDir); !os.IsNotExist(err) {
				t.Errorf("up created the run directory")
			}
		})
	}
}

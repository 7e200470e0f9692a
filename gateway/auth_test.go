package gateway_test

import (
	"crypto/tls"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distcache/distcache/gateway"
	"github.com/distcache/distcache/internal/testing/certtest"
)

// writeUsers writes a users directory as a mounted Secret looks: a file
// per user holding its password.
func writeUsers(t *testing.T, dir string, users map[string]string) {
	t.Helper()
	for user, pass := range users {
		if err := os.WriteFile(filepath.Join(dir, user), []byte(pass+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// TestAuth: with users configured, a connection may only AUTH (or HELLO
// ... AUTH, or QUIT) until it has authenticated; a wrong password gets
// WRONGPASS; go-redis (RESP3, HELLO AUTH) and redis-cli (--user --pass)
// authenticate; a rotated password applies to the next AUTH.
func TestAuth(t *testing.T) {
	dir := t.TempDir()
	writeUsers(t, dir, map[string]string{"default": "s3cret", "app": "app-pass"})
	addr, srv := startGateway(t, withUsers(dir))

	r := dialRaw(t, addr)
	for _, tc := range []struct{ send, want string }{
		{"PING\r\n", "-NOAUTH Authentication required."},
		{"GET k\r\n", "-NOAUTH Authentication required."},
		{"HELLO 3\r\n", "-NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time"},
		{"AUTH wrong\r\n", "-WRONGPASS invalid username-password pair or user is disabled."},
		{"AUTH app s3cret\r\n", "-WRONGPASS invalid username-password pair or user is disabled."},
		{"AUTH s3cret\r\n", "+OK"},
		{"PING\r\n", "+PONG"},
	} {
		r.send(tc.send)
		if got := r.line(); got != tc.want {
			t.Errorf("%q: %q, want %q", strings.TrimSpace(tc.send), got, tc.want)
		}
	}

	rc := redis.NewClient(&redis.Options{Addr: addr, Protocol: 3, Username: "app", Password: "app-pass"})
	defer rc.Close()
	if err := rc.Set(t.Context(), "auth:k", "v", 0).Err(); err != nil {
		t.Fatalf("SET as app: %v", err)
	}
	bad := redis.NewClient(&redis.Options{Addr: addr, Username: "app", Password: "nope", MaxRetries: -1})
	defer bad.Close()
	if err := bad.Ping(t.Context()).Err(); err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
		t.Errorf("a wrong password: %v, want WRONGPASS", err)
	}
	host, port, _ := net.SplitHostPort(addr)
	out, err := exec.CommandContext(t.Context(), tool(t, "redis-cli"), "-h", host, "-p", port, "--user", "app", "--pass", "app-pass",
		"--no-auth-warning", "GET", "auth:k").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "v" {
		t.Errorf("redis-cli --user app: %q (%v)", out, err)
	}
	if info, err := rc.Info(t.Context(), "distcache").Result(); err != nil || !strings.Contains(info, "auth:users (2 in ") {
		t.Errorf("INFO distcache = %q (%v), want the users counted", info, err)
	}

	writeUsers(t, dir, map[string]string{"app": "rotated"})
	rotated := redis.NewClient(&redis.Options{Addr: addr, Username: "app", Password: "rotated"})
	defer rotated.Close()
	if err := rotated.Ping(t.Context()).Err(); err != nil {
		t.Errorf("the rotated password: %v", err)
	}
	old := redis.NewClient(&redis.Options{Addr: addr, Username: "app", Password: "app-pass", MaxRetries: -1})
	defer old.Close()
	if err := old.Ping(t.Context()).Err(); err == nil {
		t.Error("the old password still authenticates after the rotation")
	}
	if st := srv.Stats(); st.AuthFailures < 4 {
		t.Errorf("stats %+v: want the failed authentications counted", st)
	}
}

// TestTLS serves the gateway over TLS with a certificate from files: go-redis
// and redis-cli verify it and work; a plain-text client gets nowhere.
func TestTLS(t *testing.T) {
	dir := t.TempDir()
	ca := certtest.NewCA(t, dir, "ca")
	certFile, keyFile := ca.Server(t, "gateway")
	cfg, err := gateway.TLSFromFiles(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	addr, _ := startGateway(t, withTLS(cfg))
	rc := redis.NewClient(&redis.Options{Addr: addr, TLSConfig: &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12}})
	defer rc.Close()
	if err := rc.Set(t.Context(), "tls:k", "v", 0).Err(); err != nil {
		t.Fatalf("SET over TLS: %v", err)
	}
	host, port, _ := net.SplitHostPort(addr)
	out, err := exec.CommandContext(t.Context(), tool(t, "redis-cli"), "-h", host, "-p", port, "--tls", "--cacert", ca.File, "GET", "tls:k").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "v" {
		t.Errorf("redis-cli --tls: %q (%v)", out, err)
	}
	plain := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 5 * time.Second, ReadTimeout: 5 * time.Second})
	defer plain.Close()
	if err := plain.Ping(t.Context()).Err(); err == nil {
		t.Error("a plain-text client got an answer from the TLS listener")
	}
}

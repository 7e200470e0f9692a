package shim

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/distcache/distcache/dataplane/redisacl"
	"github.com/distcache/distcache/dataplane/redisconn"
	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/internal/testing/certtest"
	"github.com/distcache/distcache/internal/testing/redistest"
	"github.com/distcache/distcache/internal/testing/secrettest"
)

// credentialsEnv is a shim in front of a redis-server that starts from an
// ACL file rendered from a Secret volume (as a managed shard's does), with
// the shim logging in from that volume and a Syncer applying it.
type credentialsEnv struct {
	*env
	secret *secrettest.Dir
	login  redisconn.Settings // the shim's, without Addr
	syncer *redisacl.Syncer
	acl    string // Redis's ACL file
}

// newCredentialsEnv starts it with the Secret data and, with tlsFiles,
// TLS only.
func newCredentialsEnv(t *testing.T, user string, data map[string]string, tlsFiles *redistest.TLSFiles) *credentialsEnv {
	t.Helper()
	secret := secrettest.New(t, data)
	login := redisconn.Settings{Username: user, PasswordFile: secret.File("password"), PreviousPasswordFile: secret.File("previous")}
	acl := filepath.Join(t.TempDir(), "users.acl")
	if err := redisacl.WriteACLFile(acl, login); err != nil {
		t.Fatal(err)
	}
	server := []redistest.Option{redistest.WithArgs("--aclfile", acl), redistest.WithLogin(user, data["password"])}
	if tlsFiles != nil {
		server = append(server, redistest.WithTLS(*tlsFiles))
		login.TLS, login.CAFile, login.ServerName = true, tlsFiles.CA, "redis.test"
	}
	var shimLogin redisconn.Settings
	e := newEnv(t, withRedis(server...), withConfig(func(c *Config) {
		shimLogin = login
		shimLogin.Addr = c.Redis.Addr
		o, err := shimLogin.Options()
		if err != nil {
			t.Fatal(err)
		}
		c.Redis = o
	}))
	o, err := shimLogin.Options()
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(o)
	t.Cleanup(func() { _ = rdb.Close() })
	cfg := redisacl.Config{Login: shimLogin, ACL: true}
	if tlsFiles != nil {
		cfg.CertFile, cfg.KeyFile = tlsFiles.Cert, tlsFiles.Key
	}
	return &credentialsEnv{env: e, secret: secret, login: shimLogin, syncer: redisacl.NewSyncer(rdb, cfg), acl: acl}
}

// sync applies the Secret to Redis now.
func (e *credentialsEnv) sync() {
	e.t.Helper()
	if _, err := e.syncer.Sync(e.t.Context()); err != nil {
		e.t.Fatal(err)
	}
}

// pingAs connects to Redis with the login of s (Addr set here) on a new
// connection and PINGs.
func (e *credentialsEnv) pingAs(s redisconn.Settings) error {
	e.t.Helper()
	s.Addr = e.redis.Addr()
	o, err := s.Options()
	if err != nil {
		return err
	}
	o.MaxRetries, o.DialerRetries = -1, 1
	rdb := redis.NewClient(o)
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(e.t.Context(), patience)
	defer cancel()
	return rdb.Ping(ctx).Err()
}

// passwordFile writes password to a file of its own and returns the path.
func passwordFile(t *testing.T, password string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(p, []byte(password), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCredentialsServe runs a shard whose Redis requires a password, with
// and without TLS: Redis refuses clients without it, and the shard serves
// reads and writes through the shim.
func TestCredentialsServe(t *testing.T) {
	dir := t.TempDir()
	ca := certtest.NewCA(t, dir, "test-ca")
	cert, key := ca.Server(t, "redis", "redis.test")
	tests := []struct {
		name string
		user string
		tls  *redistest.TLSFiles
	}{
		{"default user", "", nil},
		{"ACL user", "shim", nil},
		{"ACL user over TLS", "shim", &redistest.TLSFiles{Cert: cert, Key: key, CA: ca.File}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newCredentialsEnv(t, tc.user, map[string]string{"password": "first-pass"}, tc.tls)
			e.sync()
			anonymous := redisconn.Settings{TLS: e.login.TLS, CAFile: e.login.CAFile, ServerName: e.login.ServerName}
			if err := e.pingAs(anonymous); err == nil || !strings.Contains(err.Error(), "NOAUTH") {
				t.Errorf("PING without a password: %v, want NOAUTH", err)
			}
			guess := anonymous
			guess.Username, guess.PasswordFile = tc.user, passwordFile(t, "guess")
			if err := e.pingAs(guess); !errors.Is(err, redisconn.ErrWrongPass) {
				t.Errorf("PING with a wrong password: %v, want WRONGPASS", err)
			}
			if tc.tls != nil {
				plain := redisconn.Settings{Username: tc.user, PasswordFile: e.login.PasswordFile}
				if err := e.pingAs(plain); err == nil {
					t.Error("a plaintext connection to the TLS-only Redis answered")
				}
			}
			k := e.key(0, "k")
			e.mustStatus(wire.OpPut, k, []byte("v1"), wire.StatusOK)
			if r := e.mustStatus(wire.OpGet, k, nil, wire.StatusOK); string(r.Value) != "v1" {
				t.Errorf("GET = %q, want v1", r.Value)
			}
		})
	}
}

// loadLoop reads and writes through the shim until stop is closed or it
// has sent max requests, and logs in to Redis on a new connection with the
// shim's login before each request (the shim's pool keeps its connections
// open: a new one is what a restarted Redis or a replaced connection
// gets); it counts requests and failures.
type loadLoop struct {
	sent, failed atomic.Int64
	firstErr     atomic.Value // string
	progress     chan struct{}
	done         chan struct{}
}

func startLoad(e *env, login func() error, stop <-chan struct{}, maxRequests int) *loadLoop {
	l := &loadLoop{progress: make(chan struct{}, maxRequests), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		for i := range maxRequests {
			select {
			case <-stop:
				return
			default:
			}
			k := e.key(0, fmt.Sprintf("load-%d", i%16))
			op, value := wire.OpGet, []byte(nil)
			if i%2 == 0 {
				op, value = wire.OpPut, []byte(fmt.Sprint(i))
			}
			err := login()
			if err != nil {
				err = fmt.Errorf("new login: %w", err)
			}
			r, callErr := e.tryCall(e.client, op, k, value)
			err = errors.Join(err, callErr)
			l.sent.Add(1)
			if callErr == nil && r.Status != wire.StatusOK && !(op == wire.OpGet && r.Status == wire.StatusNotFound) {
				err = errors.Join(err, fmt.Errorf("%s %s: status %s", op, k, r.Status))
			}
			if err != nil {
				l.failed.Add(1)
				l.firstErr.CompareAndSwap(nil, err.Error())
			}
			l.progress <- struct{}{}
		}
	}()
	return l
}

// await waits until the loop has answered n more requests (or ended).
func (l *loadLoop) await(t *testing.T, n int) {
	t.Helper()
	for range n {
		select {
		case <-l.progress:
		case <-l.done:
			return
		case <-t.Context().Done():
			t.Fatal("the load loop stalled")
		}
	}
}

// TestPasswordRotationLosesNoRequest rotates the password in three steps
// while reads and writes run through the shim and new logins with the
// shim's login come one after the other: no request and no login fails, and the old password is refused afterwards.
func TestPasswordRotationLosesNoRequest(t *testing.T) {
	const maxRequests, between = 20000, 50
	e := newCredentialsEnv(t, "shim", map[string]string{"password": "old-pass"}, nil)
	e.sync()
	stop := make(chan struct{})
	load := startLoad(e.env, func() error { return e.pingAs(e.login) }, stop, maxRequests)
	var once sync.Once
	end := func() { once.Do(func() { close(stop); <-load.done }) }
	t.Cleanup(end)

	steps := []struct {
		name string
		data map[string]string
	}{
		{"add the new password as previous", map[string]string{"password": "old-pass", "previous": "new-pass"}},
		{"make the new password current", map[string]string{"password": "new-pass", "previous": "old-pass"}},
		{"drop the old password", map[string]string{"password": "new-pass"}},
	}
	load.await(t, between)
	for _, st := range steps {
		// The files change first, as the kubelet updates the volume; the
		// shim's logins use them before the next Sync applies them.
		e.secret.Set(t, st.data)
		load.await(t, between)
		e.sync()
		load.await(t, between)
		t.Logf("%s: %d requests so far", st.name, load.sent.Load())
	}
	end()
	if f := load.failed.Load(); f != 0 {
		t.Errorf("%d of %d requests failed during the rotation; first: %v", f, load.sent.Load(), load.firstErr.Load())
	}
	if load.sent.Load() < 7*between {
		t.Errorf("only %d requests ran", load.sent.Load())
	}
	old := redisconn.Settings{Username: "shim", PasswordFile: passwordFile(t, "old-pass")}
	if err := e.pingAs(old); !errors.Is(err, redisconn.ErrWrongPass) {
		t.Errorf("PING with the old password after the rotation: %v, want WRONGPASS", err)
	}
	if err := e.pingAs(redisconn.Settings{Username: "shim", PasswordFile: passwordFile(t, "new-pass")}); err != nil {
		t.Errorf("PING with the new password: %v", err)
	}
	acl, err := os.ReadFile(e.acl)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(acl), "pass") {
		t.Errorf("the saved ACL file holds a password in clear: %q", acl)
	}
}

// TestCertificateRotation replaces the served certificate's files and
// syncs: new TLS connections get the new certificate, without a restart.
func TestCertificateRotation(t *testing.T) {
	dir := t.TempDir()
	ca := certtest.NewCA(t, dir, "test-ca")
	cert, key := ca.Server(t, "redis", "redis.test")
	e := newCredentialsEnv(t, "", map[string]string{"password": "p"}, &redistest.TLSFiles{Cert: cert, Key: key, CA: ca.File})
	e.sync()
	before := servedSerial(t, e.redis.Addr(), ca.Pool())
	newCert, newKey := ca.Server(t, "redis-renewed", "redis.test")
	for src, dst := range map[string]string{newCert: cert, newKey: key} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if got := servedSerial(t, e.redis.Addr(), ca.Pool()); got != before {
		t.Fatalf("Redis serves serial %d before the sync, want the old %d", got, before)
	}
	e.sync()
	if got := servedSerial(t, e.redis.Addr(), ca.Pool()); got == before {
		t.Fatalf("Redis still serves serial %d after the sync", got)
	}
	e.mustStatus(wire.OpPut, e.key(0, "after"), []byte("v"), wire.StatusOK)
}

// servedSerial is the serial number of the certificate Redis serves.
func servedSerial(t *testing.T, addr string, roots *x509.CertPool) int64 {
	t.Helper()
	d := tls.Dialer{Config: &tls.Config{RootCAs: roots, ServerName: "redis.test", MinVersion: tls.VersionTLS12}}
	conn, err := d.DialContext(t.Context(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	return conn.(*tls.Conn).ConnectionState().PeerCertificates[0].SerialNumber.Int64()
}

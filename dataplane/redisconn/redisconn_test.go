package redisconn_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distcache/distcache/dataplane/redisconn"
	"github.com/distcache/distcache/internal/testing/certtest"
	"github.com/distcache/distcache/internal/testing/redistest"
)

// writeFile writes content to a new file in dir and returns its path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// ping connects with s and PINGs.
func ping(t *testing.T, s redisconn.Settings) error {
	t.Helper()
	o, err := s.Options()
	if err != nil {
		t.Fatal(err)
	}
	o.MaxRetries = -1
	rdb := redis.NewClient(o)
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	return rdb.Ping(ctx).Err()
}

// TestPassword runs a real redis-server that requires a password, for the
// default user and for an ACL user, and checks what connects.
func TestPassword(t *testing.T) {
	dir := t.TempDir()
	good := writeFile(t, dir, "good", "s3cret\n")
	wrong := writeFile(t, dir, "wrong", "guess")
	tests := []struct {
		name   string
		server redistest.Option
		conn   redisconn.Settings
		errHas string // "": connects
	}{
		{"default user", redistest.WithPassword("", "s3cret"), redisconn.Settings{PasswordFile: good}, ""},
		{"default user, no password", redistest.WithPassword("", "s3cret"), redisconn.Settings{}, "NOAUTH"},
		{"default user, wrong password", redistest.WithPassword("", "s3cret"), redisconn.Settings{PasswordFile: wrong}, "WRONGPASS"},
		{"ACL user", redistest.WithPassword("shim", "s3cret"), redisconn.Settings{Username: "shim", PasswordFile: good}, ""},
		{"ACL user as the default user", redistest.WithPassword("shim", "s3cret"), redisconn.Settings{PasswordFile: good}, "WRONGPASS"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t, tc.server)
			tc.conn.Addr = srv.Addr()
			err := ping(t, tc.conn)
			switch {
			case tc.errHas == "" && err != nil:
				t.Fatalf("PING: %v", err)
			case tc.errHas != "" && (err == nil || !strings.Contains(err.Error(), tc.errHas)):
				t.Fatalf("PING: %v, want an error with %q", err, tc.errHas)
			}
		})
	}
}

// TestPasswordRotation changes the password in the file and on the server:
// a connection made afterwards uses the new one, without new options.
func TestPasswordRotation(t *testing.T) {
	srv := redistest.Start(t, redistest.WithPassword("", "first"))
	file := writeFile(t, t.TempDir(), "password", "first")
	o, err := redisconn.Settings{Addr: srv.Addr(), PasswordFile: file}.Options()
	if err != nil {
		t.Fatal(err)
	}
	o.MaxRetries = -1
	ctx := t.Context()
	before := redis.NewClient(o)
	defer before.Close()
	if err := before.ConfigSet(ctx, "requirepass", "second").Err(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("second\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	after := redis.NewClient(o) // the same options: the file is read at each dial
	defer after.Close()
	if err := after.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after the rotation: %v", err)
	}
}

// TestTLS runs a real redis-server that serves TLS only, with a
// certificate of a CA made for the test.
func TestTLS(t *testing.T) {
	dir := t.TempDir()
	files, otherCA := testCertificates(t, dir)
	srv := redistest.Start(t, redistest.WithTLS(files), redistest.WithPassword("", "s3cret"))
	password := writeFile(t, dir, "password", "s3cret")
	tests := []struct {
		name   string
		conn   redisconn.Settings
		errHas string
	}{
		{"TLS with the CA", redisconn.Settings{TLS: true, CAFile: files.CA, PasswordFile: password}, ""},
		{"TLS with the CA and the certificate's name", redisconn.Settings{TLS: true, CAFile: files.CA, ServerName: "redis.test", PasswordFile: password}, ""},
		{"TLS with another name", redisconn.Settings{TLS: true, CAFile: files.CA, ServerName: "other.test", PasswordFile: password}, "certificate"},
		{"TLS with another CA", redisconn.Settings{TLS: true, CAFile: otherCA, PasswordFile: password}, "certificate"},
		{"no TLS", redisconn.Settings{PasswordFile: password}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.conn.Addr = srv.Addr()
			err := ping(t, tc.conn)
			switch {
			case tc.name == "no TLS":
				if err == nil {
					t.Fatal("a plain connection to a TLS-only server answered")
				}
			case tc.errHas == "" && err != nil:
				t.Fatalf("PING: %v", err)
			case tc.errHas != "" && (err == nil || !strings.Contains(err.Error(), tc.errHas)):
				t.Fatalf("PING: %v, want an error with %q", err, tc.errHas)
			}
		})
	}
}

func TestOptionsRejects(t *testing.T) {
	dir := t.TempDir()
	secret := "hunter2-not-in-errors"
	notPEM := writeFile(t, dir, "ca.pem", secret)
	tests := []struct {
		name   string
		conn   redisconn.Settings
		errHas string
	}{
		{"missing password file", redisconn.Settings{PasswordFile: filepath.Join(dir, "none")}, "cannot read Redis password file"},
		{"empty password file", redisconn.Settings{PasswordFile: writeFile(t, dir, "empty", "\n")}, "it is empty"},
		{"CA bundle without a certificate", redisconn.Settings{TLS: true, CAFile: notPEM}, "no PEM certificate"},
		{"missing CA bundle", redisconn.Settings{TLS: true, CAFile: filepath.Join(dir, "none.pem")}, "cannot read Redis CA bundle"},
		{"CA without TLS", redisconn.Settings{CAFile: notPEM}, "without --redis-tls"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.conn.Options()
			if err == nil || !strings.Contains(err.Error(), tc.errHas) {
				t.Fatalf("Options: %v, want an error with %q", err, tc.errHas)
			}
			if strings.Contains(err.Error(), secret) {
				t.Fatalf("the error shows a file's content: %v", err)
			}
		})
	}
}

// testCertificates writes a CA, a server certificate it signs for
// 127.0.0.1 and redis.test, and the server's key into dir; and a second CA
// that signed nothing.
func testCertificates(t *testing.T, dir string) (redistest.TLSFiles, string) {
	t.Helper()
	ca := certtest.NewCA(t, dir, "test-ca")
	other := certtest.NewCA(t, dir, "other-ca")
	cert, key := ca.Server(t, "server", "redis.test")
	return redistest.TLSFiles{Cert: cert, Key: key, CA: ca.File}, other.File
}

// TestPreviousPassword logs in to a server that accepts one password,
// with it in either file: a WRONGPASS on the first is tried again with
// the second.
func TestPreviousPassword(t *testing.T) {
	dir := t.TempDir()
	srv := redistest.Start(t, redistest.WithPassword("shim", "accepted"))
	accepted, refused := writeFile(t, dir, "accepted", "accepted"), writeFile(t, dir, "refused", "refused")
	missing := filepath.Join(dir, "missing")
	tests := []struct {
		name              string
		current, previous string
		wantErr           bool
	}{
		{"current accepted", accepted, refused, false},
		{"previous accepted", refused, accepted, false},
		{"previous missing", refused, missing, true},
		{"neither accepted", refused, refused, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := ping(t, redisconn.Settings{Addr: srv.Addr(), Username: "shim", PasswordFile: tc.current, PreviousPasswordFile: tc.previous})
			if tc.wantErr != (err != nil) {
				t.Fatalf("PING: %v, want error %v", err, tc.wantErr)
			}
			if tc.wantErr && !errors.Is(err, redisconn.ErrWrongPass) {
				t.Fatalf("PING: %v, want WRONGPASS", err)
			}
		})
	}
}

// TestCABundleReread replaces the CA bundle: a new connection with the
// same options verifies the server with the new bundle.
func TestCABundleReread(t *testing.T) {
	dir := t.TempDir()
	files, otherCA := testCertificates(t, dir)
	srv := redistest.Start(t, redistest.WithTLS(files))
	bundle := filepath.Join(t.TempDir(), "ca.crt")
	copyFile := func(src string) {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(bundle, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	copyFile(otherCA)
	s := redisconn.Settings{Addr: srv.Addr(), TLS: true, CAFile: bundle, ServerName: "redis.test"}
	if err := ping(t, s); err == nil {
		t.Fatal("a server signed by another CA was trusted")
	}
	copyFile(files.CA)
	if err := ping(t, s); err != nil {
		t.Fatalf("PING after the CA bundle changed: %v", err)
	}
}

// TestDialerReachesAnyAddress uses one Settings without an address for
// two servers, as a client reaches every shard's Redis: each dial does TLS
// with the name of the address it dials and logs in.
func TestDialerReachesAnyAddress(t *testing.T) {
	dir := t.TempDir()
	files, _ := testCertificates(t, dir)
	login := redisconn.Settings{TLS: true, CAFile: files.CA, PasswordFile: writeFile(t, dir, "password", "s3cret")}
	if _, err := login.Options(); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		srv := redistest.Start(t, redistest.WithTLS(files), redistest.WithPassword("", "s3cret"))
		rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), Dialer: login.Dialer(), MaxRetries: -1})
		defer rdb.Close()
		if err := rdb.Ping(t.Context()).Err(); err != nil {
			t.Fatalf("PING of server %d: %v", i, err)
		}
	}
	plain := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: plain.Addr(), Dialer: redisconn.Settings{}.Dialer(), MaxRetries: -1})
	defer rdb.Close()
	if err := rdb.Ping(t.Context()).Err(); err != nil {
		t.Fatalf("PING without a login: %v", err)
	}
}

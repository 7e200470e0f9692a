package redisconn_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distcache/distcache/dataplane/redisconn"
	"github.com/distcache/distcache/internal/redistest"
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
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	writePEM := func(name, typ string, der []byte) string {
		return writeFile(t, dir, name, string(pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})))
	}
	now := time.Now()
	newCA := func(name string) (*x509.Certificate, *ecdsa.PrivateKey, string) {
		key := newKey()
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
			IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		if err != nil {
			t.Fatal(err)
		}
		cert, err := x509.ParseCertificate(der)
		if err != nil {
			t.Fatal(err)
		}
		return cert, key, writePEM(name+".pem", "CERTIFICATE", der)
	}
	ca, caKey, caFile := newCA("test-ca")
	_, _, otherCA := newCA("other-ca")
	key := newKey()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "redis.test"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		DNSNames: []string{"redis.test"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return redistest.TLSFiles{
		Cert: writePEM("server.pem", "CERTIFICATE", der),
		Key:  writePEM("server-key.pem", "EC PRIVATE KEY", keyDER),
		CA:   caFile,
	}, otherCA
}

// Package redisconn turns a storage shim's connection settings into the
// go-redis options it dials its Redis shard with: the address, an ACL user
// and its password, and TLS.
//
// The password is read from a file — a mounted Kubernetes Secret, or any
// file only the shim can read — so it never appears in the process's
// arguments, its logs or the partition map. It is read again for every new
// connection (go-redis's CredentialsProviderContext), so a rotated Secret
// takes effect as the pool reconnects, without a restart. TLS verifies the
// server against the given CA bundle (or the system's) and name.
package redisconn

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/pflag"
)

// Settings say how to reach one Redis server.
type Settings struct {
	// Addr is host:port.
	Addr string
	// Username is the ACL user ("" for the default user, as Redis's
	// requirepass expects).
	Username string
	// PasswordFile holds the password ("" for none); one trailing newline
	// is ignored.
	PasswordFile string
	// TLS connects with TLS.
	TLS bool
	// CAFile is a PEM bundle of the CAs that may sign the server's
	// certificate ("" for the system's roots).
	CAFile string
	// ServerName is the name the server's certificate must carry (""
	// for the host of Addr).
	ServerName string
}

// AddFlags adds the settings' command-line flags to f.
func (s *Settings) AddFlags(f *pflag.FlagSet) {
	f.StringVar(&s.Addr, "redis", "127.0.0.1:6379", "address of the redis-server this shim fronts")
	f.StringVar(&s.Username, "redis-username", "", "Redis ACL user (default: the default user)")
	f.StringVar(&s.PasswordFile, "redis-password-file", "",
		"file holding the Redis password, read again for every new connection (a mounted Secret); never pass the password itself")
	f.BoolVar(&s.TLS, "redis-tls", false, "connect to Redis with TLS")
	f.StringVar(&s.CAFile, "redis-tls-ca-file", "", "PEM bundle of the CAs that sign Redis's certificate (default: the system's)")
	f.StringVar(&s.ServerName, "redis-tls-server-name", "", "name Redis's certificate must carry (default: the host of --redis)")
}

// Options returns the go-redis options of s. It fails when a file cannot
// be read or holds nothing usable, so a wrong path is reported at start.
func (s Settings) Options() (*redis.Options, error) {
	o := &redis.Options{Addr: s.Addr, Username: s.Username}
	if s.PasswordFile != "" {
		if _, err := readPassword(s.PasswordFile); err != nil {
			return nil, err
		}
		user, path := s.Username, s.PasswordFile
		o.CredentialsProviderContext = func(context.Context) (string, string, error) {
			p, err := readPassword(path)
			return user, p, err
		}
	}
	if !s.TLS {
		if s.CAFile != "" || s.ServerName != "" {
			return nil, fmt.Errorf("cannot use --redis-tls-ca-file or --redis-tls-server-name without --redis-tls")
		}
		return o, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: s.ServerName}
	if s.CAFile != "" {
		pem, err := os.ReadFile(s.CAFile)
		if err != nil {
			return nil, fmt.Errorf("cannot read Redis CA bundle: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("cannot use Redis CA bundle %s: no PEM certificate in it", s.CAFile)
		}
	}
	o.TLSConfig = cfg
	return o, nil
}

// readPassword reads the password in path, without one trailing newline.
// The error names the file, never its content.
func readPassword(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("cannot read Redis password file: %w", err)
	}
	b = bytes.TrimSuffix(bytes.TrimSuffix(b, []byte("\n")), []byte("\r"))
	if len(b) == 0 {
		return "", fmt.Errorf("cannot use Redis password file %s: it is empty", path)
	}
	return string(b), nil
}

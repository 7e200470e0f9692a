// Package redisconn turns a storage shim's connection settings into the
// go-redis options it dials its Redis shard with: the address, an ACL user
// and its password, and TLS.
//
// The password is read from a file — a mounted Kubernetes Secret, or any
// file only the shim can read — so it never appears in the process's
// arguments, its logs or the partition map. It is read again for every new
// connection, so a rotated Secret takes effect as the pool reconnects,
// without a restart. A second file may hold a previous (or next) password:
// a login the server refuses with WRONGPASS is tried again with it, so a
// rotation does not fail a connection made while the server and the file
// disagree on which password is current (login.go). TLS verifies the
// server against the given CA bundle (or the system's), read again for
// every new connection too, and name.
package redisconn

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"

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
	// PreviousPasswordFile may hold a second password that the server
	// may accept instead ("" or a missing or empty file: none). A login
	// refused with WRONGPASS is tried again with it.
	PreviousPasswordFile string
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
	s.AddLoginFlags(f)
}

// AddLoginFlags adds the flags of the settings other than the address to
// f: the login and TLS of a process that reaches several Redis servers.
func (s *Settings) AddLoginFlags(f *pflag.FlagSet) {
	f.StringVar(&s.Username, "redis-username", "", "Redis ACL user (default: the default user)")
	f.StringVar(&s.PasswordFile, "redis-password-file", "",
		"file holding the Redis password, read again for every new connection (a mounted Secret); never pass the password itself")
	f.StringVar(&s.PreviousPasswordFile, "redis-previous-password-file", "",
		"file that may hold a second Redis password, tried when Redis refuses the first with WRONGPASS (a missing file: none); for rotations")
	f.BoolVar(&s.TLS, "redis-tls", false, "connect to Redis with TLS")
	f.StringVar(&s.CAFile, "redis-tls-ca-file", "", "PEM bundle of the CAs that sign Redis's certificate (default: the system's)")
	f.StringVar(&s.ServerName, "redis-tls-server-name", "", "name Redis's certificate must carry (default: the host of its address)")
}

// Options returns the go-redis options of s. It fails when a file cannot
// be read or holds nothing usable, so a wrong path is reported at start.
// With a password or TLS the options dial with a Dialer of their own
// (login.go), which does TLS and AUTH itself; without either they leave
// the dialer to the caller.
func (s Settings) Options() (*redis.Options, error) {
	o := &redis.Options{Addr: s.Addr}
	if s.PasswordFile != "" {
		if _, _, err := s.Passwords(); err != nil {
			return nil, err
		}
	} else if s.PreviousPasswordFile != "" {
		return nil, fmt.Errorf("cannot use --redis-previous-password-file without --redis-password-file")
	}
	if !s.TLS {
		if s.CAFile != "" || s.ServerName != "" {
			return nil, fmt.Errorf("cannot use --redis-tls-ca-file or --redis-tls-server-name without --redis-tls")
		}
		if s.PasswordFile == "" {
			o.Username = s.Username
			return o, nil
		}
	}
	if s.TLS {
		if _, err := s.tlsConfig(); err != nil {
			return nil, err
		}
	}
	o.Dialer = s.dial
	return o, nil
}

// Plain says whether a connection needs neither TLS nor AUTH: any TCP
// connection to the server may send commands at once.
func (s Settings) Plain() bool { return s.PasswordFile == "" && !s.TLS }

// Dialer returns a go-redis dialer that reaches any address as the
// settings say (their Addr aside): TLS and AUTH with the files read at
// every dial when set, else TCP over raw system calls (Dial). Call
// Options first to check the files.
func (s Settings) Dialer() func(ctx context.Context, network, addr string) (net.Conn, error) {
	if s.Plain() {
		return Dial
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		at := s
		at.Addr = addr // the certificate's name defaults to its host
		return at.dial(ctx, network, addr)
	}
}

// TLSConfigFor is the TLS configuration of a new connection to addr,
// with the CA bundle as its file holds it now; the certificate's name is
// ServerName, or else addr's host.
func (s Settings) TLSConfigFor(addr string) (*tls.Config, error) {
	s.Addr = addr
	return s.tlsConfig()
}

// tlsConfig is the TLS configuration of a new connection, with the CA
// bundle as its file holds it now.
func (s Settings) tlsConfig() (*tls.Config, error) {
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
	if cfg.ServerName == "" && s.Addr != "" {
		host, _, err := net.SplitHostPort(s.Addr)
		if err != nil {
			return nil, fmt.Errorf("cannot use Redis address %q: %w", s.Addr, err)
		}
		cfg.ServerName = host
	}
	return cfg, nil
}

// Passwords reads the password files: current is the password to log in
// with, previous a second one ("" when there is none).
func (s Settings) Passwords() (current, previous string, err error) {
	if s.PasswordFile == "" {
		return "", "", nil
	}
	if current, err = readPassword(s.PasswordFile); err != nil {
		return "", "", err
	}
	if s.PreviousPasswordFile == "" {
		return current, "", nil
	}
	previous, err = readPassword(s.PreviousPasswordFile)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, errEmpty) {
		return current, "", nil
	}
	return current, previous, err
}

// errEmpty reports a password file that holds nothing.
var errEmpty = errors.New("it is empty")

// readPassword reads the password in path, without one trailing newline.
// The error names the file, never its content.
func readPassword(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("cannot read Redis password file: %w", err)
	}
	b = bytes.TrimSuffix(bytes.TrimSuffix(b, []byte("\n")), []byte("\r"))
	if len(b) == 0 {
		return "", fmt.Errorf("cannot use Redis password file %s: %w", path, errEmpty)
	}
	return string(b), nil
}

// IsWrongType says whether err is Redis' refusal of a key of another type
// (WRONGTYPE): an answer about the key, not a failure of the connection.
func IsWrongType(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && strings.HasPrefix(re.Error(), "WRONGTYPE")
}

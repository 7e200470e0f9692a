// Package redisacl keeps a Redis server's login and certificate equal to
// the files a storage shim reads: the ACL user's accepted passwords, and
// the TLS certificate and key the server serves.
//
// A managed redis-server (operator mode managed, and standalone mode)
// starts with an ACL file that ACLFile renders from the password files:
// the ACL user, on, accepting the current password and the previous one
// when there is one, each as its SHA-256 (never in clear, never in the
// process's arguments). While it runs, the shim next to it calls Sync
// every few seconds (Watch): when the files changed, Sync sends `ACL
// SETUSER user on resetpass #current #previous` — one command, so no
// moment accepts neither — and `ACL SAVE`, so that a restarted
// redis-server reads the passwords of now; when the certificate or key
// changed, `CONFIG SET tls-cert-file ... tls-key-file ...` with the same
// paths, which makes Redis 7 load them again. Connections already logged
// in stay logged in. With the shim's login (package redisconn: current
// password, then previous on WRONGPASS), rotating a password in three
// steps — add the new one as previous, make it current with the old one as
// previous, drop previous — fails no connection.
package redisacl

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distcache/distcache/dataplane/redisconn"
)

// DefaultUser is Redis's user when no ACL user is named.
const DefaultUser = "default"

// DefaultInterval is how often Watch compares the files with what it
// applied.
const DefaultInterval = 5 * time.Second

// hashes are the SHA-256 of each password, hex, as Redis's ACL rules take
// them after '#'.
func hashes(passwords ...string) []string {
	var out []string
	for _, p := range passwords {
		if p == "" {
			continue
		}
		sum := sha256.Sum256([]byte(p))
		h := hex.EncodeToString(sum[:])
		if !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	return out
}

// userName is user, or Redis's default user when user is "".
func userName(user string) string {
	if user == "" {
		return DefaultUser
	}
	return user
}

// ACLFile renders the ACL file of a server that accepts the passwords of
// s's files for s.Username (the default user when unset) with every
// permission; with another user the default user is off.
func ACLFile(s redisconn.Settings) (string, error) {
	current, previous, err := s.Passwords()
	if err != nil {
		return "", err
	}
	if current == "" {
		return "", fmt.Errorf("cannot render an ACL file without a password file")
	}
	var b strings.Builder
	user := userName(s.Username)
	if user != DefaultUser {
		b.WriteString("user default off\n")
	}
	fmt.Fprintf(&b, "user %s on", user)
	for _, h := range hashes(current, previous) {
		b.WriteString(" #" + h)
	}
	b.WriteString(" ~* &* +@all\n")
	return b.String(), nil
}

// WriteACLFile writes the ACL file of s to path (mode 0600), replacing
// it whole.
func WriteACLFile(path string, s redisconn.Settings) error {
	acl, err := ACLFile(s)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".acl-*")
	if err != nil {
		return fmt.Errorf("cannot write the Redis ACL file: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(acl); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("cannot write the Redis ACL file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("cannot write the Redis ACL file: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("cannot write the Redis ACL file: %w", err)
	}
	return nil
}

// Config says what a Syncer keeps equal to the files.
type Config struct {
	// Login is the shim's login: its password files are the passwords the
	// server accepts. No password file: Sync leaves the ACL alone.
	Login redisconn.Settings
	// ACL turns on the passwords' sync.
	ACL bool
	// CertFile and KeyFile are the certificate and key the server serves,
	// as the server names them ("": Sync leaves TLS alone).
	CertFile, KeyFile string
}

// Syncer applies the files to one Redis server when they change.
type Syncer struct {
	cfg     Config
	rdb     *redis.Client
	applied struct{ acl, cert string } // digests of what was last applied
}

// NewSyncer returns a Syncer that talks to the server through rdb.
func NewSyncer(rdb *redis.Client, cfg Config) *Syncer {
	return &Syncer{cfg: cfg, rdb: rdb}
}

// Sync applies the files if they changed since the last Sync that
// applied them (the first Sync applies them). It reports what it applied.
func (s *Syncer) Sync(ctx context.Context) (applied []string, err error) {
	if s.cfg.ACL && s.cfg.Login.PasswordFile != "" {
		ok, err := s.syncACL(ctx)
		if err != nil {
			return applied, err
		}
		if ok {
			applied = append(applied, "acl")
		}
	}
	if s.cfg.CertFile != "" {
		ok, err := s.syncCert(ctx)
		if err != nil {
			return applied, err
		}
		if ok {
			applied = append(applied, "tls")
		}
	}
	return applied, nil
}

// syncACL sets the user's passwords to the files' and saves the ACL file
// if the server has one.
func (s *Syncer) syncACL(ctx context.Context) (bool, error) {
	current, previous, err := s.cfg.Login.Passwords()
	if err != nil {
		return false, err
	}
	hs := hashes(current, previous)
	digest := strings.Join(hs, " ")
	if digest == s.applied.acl {
		return false, nil
	}
	args := []any{"ACL", "SETUSER", userName(s.cfg.Login.Username), "on", "resetpass"}
	for _, h := range hs {
		args = append(args, "#"+h)
	}
	if err := s.rdb.Do(ctx, args...).Err(); err != nil {
		return false, fmt.Errorf("cannot set the Redis user's passwords: %w", err)
	}
	file, err := s.rdb.ConfigGet(ctx, "aclfile").Result()
	if err != nil {
		return false, fmt.Errorf("cannot read Redis's aclfile setting: %w", err)
	}
	if file["aclfile"] != "" {
		if err := s.rdb.Do(ctx, "ACL", "SAVE").Err(); err != nil {
			return false, fmt.Errorf("cannot save Redis's ACL file: %w", err)
		}
	}
	s.applied.acl = digest
	return true, nil
}

// syncCert makes the server load its certificate and key again when their
// content changed.
func (s *Syncer) syncCert(ctx context.Context) (bool, error) {
	h := sha256.New()
	for _, f := range []string{s.cfg.CertFile, s.cfg.KeyFile} {
		b, err := os.ReadFile(f)
		if err != nil {
			return false, fmt.Errorf("cannot read Redis's TLS files: %w", err)
		}
		h.Write(b)
	}
	digest := hex.EncodeToString(h.Sum(nil))
	if digest == s.applied.cert {
		return false, nil
	}
	err := s.rdb.Do(ctx, "CONFIG", "SET", "tls-cert-file", s.cfg.CertFile, "tls-key-file", s.cfg.KeyFile).Err()
	if err != nil {
		return false, fmt.Errorf("cannot make Redis load its TLS certificate again: %w", err)
	}
	s.applied.cert = digest
	return true, nil
}

// Watch runs Sync now and every interval until ctx ends, logging what it
// applied and what failed (a failed Sync is tried again at the next
// tick).
func (s *Syncer) Watch(ctx context.Context, interval time.Duration, log *slog.Logger) {
	if interval <= 0 {
		interval = DefaultInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		applied, err := s.Sync(ctx)
		if len(applied) > 0 {
			log.Info("applied Redis credentials", "applied", applied)
		}
		if err != nil && ctx.Err() == nil {
			log.Warn("cannot apply Redis credentials", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

package plan

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/distcache/distcache/dataplane/redisconn"
	"github.com/distcache/distcache/layout"
)

// Standalone mode's stand-ins for the Secrets of storage.auth and
// storage.tls: a directory per Secret, a file per key, as Kubernetes
// mounts a Secret (Options.RedisAuthDir, Options.RedisTLSDir).

// RedisLogin is the shims' Redis login of plan p's cluster: the password
// files of Options.RedisAuthDir and the TLS settings of
// Options.RedisTLSDir; the zero Settings without storage.auth and tls.
func redisLogin(c *layout.Cluster, o Options) redisconn.Settings {
	var s redisconn.Settings
	if a := c.Spec.Storage.Auth; a != nil {
		s.Username = a.Username
		s.PasswordFile = filepath.Join(o.RedisAuthDir, cmp.Or(a.PasswordKey, "password"))
		s.PreviousPasswordFile = filepath.Join(o.RedisAuthDir, cmp.Or(a.PreviousPasswordKey, "previous"))
	}
	if t := c.Spec.Storage.TLS; t != nil {
		s.TLS, s.ServerName = true, t.ServerName
		s.CAFile = filepath.Join(o.RedisTLSDir, cmp.Or(t.CAKey, "ca.crt"))
	}
	return s
}

// shimLoginArgs are a shim's flags for login s.
func shimLoginArgs(s redisconn.Settings) []string {
	var args []string
	if s.PasswordFile != "" {
		args = append(args, "--redis-password-file="+s.PasswordFile, "--redis-previous-password-file="+s.PreviousPasswordFile)
		if s.Username != "" {
			args = append(args, "--redis-username="+s.Username)
		}
	}
	if s.TLS {
		args = append(args, "--redis-tls", "--redis-tls-ca-file="+s.CAFile)
		if s.ServerName != "" {
			args = append(args, "--redis-tls-server-name="+s.ServerName)
		}
	}
	return args
}

// serverCertFiles are the certificate and key the plan's redis-servers
// serve with storage.tls.
func (o Options) serverCertFiles() (cert, key string) {
	return filepath.Join(o.RedisTLSDir, "tls.crt"), filepath.Join(o.RedisTLSDir, "tls.key")
}

// localRedisSecurity adds storage.auth and storage.tls to a local shard:
// redis-server starts from an ACL file in its directory (which the cluster
// writes from the password files before starting it: Process.ACLFile) and
// serves TLS only; the shim logs in and keeps both equal to the files.
func (o Options) localRedisSecurity(c *layout.Cluster, redis, shim *Process) {
	login := redisLogin(c, o)
	if login.PasswordFile != "" {
		redis.ACLFile = filepath.Join(redis.Dir, "users.acl")
		redis.Args = append(redis.Args, "--aclfile", redis.ACLFile)
		shim.Args = append(shim.Args, "--redis-acl-sync")
	}
	if login.TLS {
		_, port := splitPort(redis.Addr)
		cert, key := o.serverCertFiles()
		redis.Args = append(redis.Args, "--port", "0", "--tls-port", strconv.Itoa(port),
			"--tls-cert-file", cert, "--tls-key-file", key, "--tls-auth-clients", "no")
		shim.Args = append(shim.Args, "--redis-server-cert-file="+cert, "--redis-server-key-file="+key)
	}
}

// checkRedisDirs refuses storage.auth or tls without their directory,
// and a directory without the files the spec names; it makes the
// directories absolute.
func (o *Options) checkRedisDirs(c *layout.Cluster) error {
	st := c.Spec.Storage
	for _, d := range []struct {
		flag   string
		dir    *string
		secret string
		used   bool
	}{
		{"--redis-auth-dir", &o.RedisAuthDir, secretOfAuth(c), st.Auth != nil},
		{"--redis-tls-dir", &o.RedisTLSDir, secretOfTLS(c), st.TLS != nil},
	} {
		if !d.used {
			if *d.dir != "" {
				return fmt.Errorf("cannot use %s: the spec sets no storage.%s", d.flag, d.flag[len("--redis-"):len(d.flag)-len("-dir")])
			}
			continue
		}
		if *d.dir == "" {
			return fmt.Errorf("cannot run storage with Secret %s: standalone mode has no Secrets: pass its keys as files with distcache up %s DIR (a file per key): %w",
				d.secret, d.flag, ErrUnsupported)
		}
		abs, err := filepath.Abs(*d.dir)
		if err != nil {
			return fmt.Errorf("cannot use %s %s: %w", d.flag, *d.dir, err)
		}
		*d.dir = abs
	}
	login := redisLogin(c, *o)
	files := []string{}
	if login.PasswordFile != "" {
		files = append(files, login.PasswordFile)
	}
	if login.TLS {
		cert, key := o.serverCertFiles()
		files = append(files, login.CAFile)
		if len(st.External) == 0 {
			files = append(files, cert, key)
		}
	}
	for _, f := range files {
		if _, err := os.Stat(f); err != nil {
			return fmt.Errorf("cannot use %s: %w", f, errors.Unwrap(err))
		}
	}
	if _, err := login.Options(); err != nil {
		return fmt.Errorf("cannot use the Redis login files: %w", err)
	}
	return nil
}

func secretOfAuth(c *layout.Cluster) string {
	if a := c.Spec.Storage.Auth; a != nil {
		return a.SecretName
	}
	return ""
}

func secretOfTLS(c *layout.Cluster) string {
	if t := c.Spec.Storage.TLS; t != nil {
		return cmp.Or(t.CertSecretName, t.CASecretName)
	}
	return ""
}

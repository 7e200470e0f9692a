package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/distcache/distcache/dataplane/redisacl"
	"github.com/distcache/distcache/dataplane/redisconn"
)

// newRedisACLCommand writes the ACL file a managed redis-server starts
// with (the operator's init container; standalone mode writes it itself).
func newRedisACLCommand() *cobra.Command {
	var (
		login redisconn.Settings
		out   string
	)
	cmd := &cobra.Command{
		Use:   "redis-acl",
		Short: "Write the ACL file of a managed redis-server from the password files (SHA-256 of each password, never in clear)",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if err := redisacl.WriteACLFile(out, login); err != nil {
				return fmt.Errorf("cannot write %s: %w", out, err)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&login.Username, "redis-username", "", "Redis ACL user (default: the default user)")
	f.StringVar(&login.PasswordFile, "redis-password-file", "", "file holding the password")
	f.StringVar(&login.PreviousPasswordFile, "redis-previous-password-file", "", "file that may hold a second accepted password (missing: none)")
	f.StringVar(&out, "out", "", "the ACL file to write (redis-server --aclfile)")
	_ = cmd.MarkFlagRequired("redis-password-file")
	_ = cmd.MarkFlagRequired("out")
	return cmd
}

// credentialsSync is what a shim keeps equal to its files on the Redis
// server beside it (package redisacl).
type credentialsSync struct {
	acl               bool
	certFile, keyFile string
	interval          time.Duration
}

func (c *credentialsSync) addFlags(f *pflag.FlagSet) {
	f.BoolVar(&c.acl, "redis-acl-sync", false,
		"keep the Redis user's accepted passwords equal to --redis-password-file and --redis-previous-password-file (ACL SETUSER, ACL SAVE): for the Redis server the shim's deployment runs")
	f.StringVar(&c.certFile, "redis-server-cert-file", "", "certificate the Redis server serves, as it names the file: the shim makes Redis load it again when it changes (CONFIG SET)")
	f.StringVar(&c.keyFile, "redis-server-key-file", "", "key of --redis-server-cert-file")
	f.DurationVar(&c.interval, "redis-sync-interval", redisacl.DefaultInterval, "how often the shim compares those files with what it applied")
}

// start runs the sync on a client of its own until ctx ends; it returns
// a function that waits for it to stop. Nothing to sync: it does nothing.
func (c *credentialsSync) start(ctx context.Context, login redisconn.Settings, log *slog.Logger) (func(), error) {
	if (c.certFile == "") != (c.keyFile == "") {
		return nil, fmt.Errorf("cannot sync Redis's certificate: --redis-server-cert-file and --redis-server-key-file go together")
	}
	if !c.acl && c.certFile == "" {
		return func() {}, nil
	}
	if c.acl && login.PasswordFile == "" {
		return nil, fmt.Errorf("cannot sync Redis's passwords without --redis-password-file")
	}
	o, err := login.Options()
	if err != nil {
		return nil, fmt.Errorf("cannot sync Redis's credentials: %w", err)
	}
	o.PoolSize = 1
	rdb := redis.NewClient(o)
	s := redisacl.NewSyncer(rdb, redisacl.Config{Login: login, ACL: c.acl, CertFile: c.certFile, KeyFile: c.keyFile})
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer rdb.Close()
		s.Watch(ctx, c.interval, log.With("component", "redis-credentials"))
	}()
	return func() { <-done }, nil
}

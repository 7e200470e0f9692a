// Package redisstore is the benchmark driver's store over the Redis
// protocol: GET and SET through a pool of redigo connections to one Redis
// endpoint, a distcache gateway or a twemproxy. redigo speaks RESP2 from the
// first byte; go-redis opens every connection with HELLO, which twemproxy
// answers by closing it.
package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/distcache/distcache/client"
)

// Store reads and writes keys of one Redis endpoint.
type Store struct {
	pool    *redis.Pool
	closers []func() error // run by Close after the pool's, in order
}

// New returns a Store of addr with up to conns connections; Close also
// calls closers (e.g. the gateway behind addr).
func New(addr string, conns int, closers ...func() error) *Store {
	return &Store{
		pool: &redis.Pool{
			MaxIdle: conns, MaxActive: conns, Wait: true, IdleTimeout: time.Minute,
			DialContext: func(ctx context.Context) (redis.Conn, error) {
				return redis.DialContext(ctx, "tcp", addr, redis.DialConnectTimeout(5*time.Second))
			},
		},
		closers: closers,
	}
}

// Get returns key's value, or an error wrapping client.ErrNotFound if it
// has none.
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	v, err := s.do(ctx, "GET", key)
	if err != nil {
		return nil, fmt.Errorf("cannot GET %s: %w", key, err)
	}
	if v == nil {
		return nil, fmt.Errorf("cannot GET %s: %w", key, client.ErrNotFound)
	}
	b, err := redis.Bytes(v, nil)
	if err != nil {
		return nil, fmt.Errorf("cannot GET %s: %w", key, err)
	}
	return b, nil
}

// Put sets key's value.
func (s *Store) Put(ctx context.Context, key string, value []byte) error {
	v, err := s.do(ctx, "SET", key, value)
	if err == nil && v != "OK" {
		err = fmt.Errorf("reply %v, want OK", v)
	}
	if err != nil {
		return fmt.Errorf("cannot SET %s: %w", key, err)
	}
	return nil
}

// do runs one command on a pooled connection within ctx.
func (s *Store) do(ctx context.Context, cmd string, args ...any) (any, error) {
	c, err := s.pool.GetContext(ctx)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return redis.DoContext(c, ctx, cmd, args...)
}

// Close closes the pool, then runs the closers.
func (s *Store) Close() error {
	errs := []error{s.pool.Close()}
	for _, c := range s.closers {
		errs = append(errs, c())
	}
	return errors.Join(errs...)
}

// GetSetCalls is the GET and SET commands the Redis server at addr has
// served since it started (INFO commandstats; commands a Lua script ran
// count too).
func GetSetCalls(ctx context.Context, addr string) (uint64, error) {
	c, err := redis.DialContext(ctx, "tcp", addr)
	if err != nil {
		return 0, fmt.Errorf("cannot count the commands of %s: %w", addr, err)
	}
	defer c.Close()
	info, err := redis.String(redis.DoContext(c, ctx, "INFO", "commandstats"))
	if err != nil {
		return 0, fmt.Errorf("cannot count the commands of %s: %w", addr, err)
	}
	return parseGetSetCalls(info)
}

// parseGetSetCalls sums the calls of cmdstat_get and cmdstat_set in the
// text of INFO commandstats.
func parseGetSetCalls(info string) (uint64, error) {
	var total uint64
	for line := range strings.Lines(info) {
		for _, cmd := range []string{"cmdstat_get:", "cmdstat_set:"} {
			rest, ok := strings.CutPrefix(strings.TrimSpace(line), cmd)
			if !ok {
				continue
			}
			var calls uint64
			if _, err := fmt.Sscanf(rest, "calls=%d", &calls); err != nil {
				return 0, fmt.Errorf("cannot parse %q of INFO commandstats: %w", strings.TrimSpace(line), err)
			}
			total += calls
		}
	}
	return total, nil
}

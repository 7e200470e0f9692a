package client

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/distcache/distcache/dataplane/heldkeys"
	"github.com/distcache/distcache/dataplane/redisbatch"
	"github.com/distcache/distcache/dataplane/rediscmd"
	"github.com/distcache/distcache/dataplane/wire"
)

// Command runs a command of package rediscmd on key (args: its name, then
// its arguments after the key) and returns Redis' reply in RESP2, an
// error reply included. A command the table does not list is
// ErrInternal.
//
// Where the client reads storage itself (spec.dataPlane.directReads), a
// read-only command runs at the key's Redis, as a proxy would send it:
// Redis' answer is current when Redis gives it, whatever the caches hold.
// A command that may write runs there too where the map lets writes go
// direct (spec.dataPlane.directWrites) and no cache may hold the key
// (package heldkeys); a write whose connection broke is not sent again
// and fails with ErrOutcomeUnknown. Otherwise the command runs at the
// key's storage shim, as a write: the shim invalidates every cached copy
// of key, runs the command in Redis, and afterwards the copies get key's
// value only if it is a string without an expiry.
func (c *Client) Command(ctx context.Context, key string, args [][]byte) ([]byte, error) {
	spec := rediscmd.Lookup(args[0])
	if spec == nil {
		return nil, fmt.Errorf("cannot run %q on %q: %w: not a command of the shims", args[0], key, ErrInternal)
	}
	v := c.view.Load()
	if v.storage != nil && !c.cfg.Bypass && (!spec.Write || c.writesDirect(v)) && checkKey(key) == nil {
		if r, held, err := c.commandDirect(ctx, v, key, spec, args); !held {
			return r, err
		}
	}
	return c.rmw(ctx, key, wire.RMWCommand, wire.CommandArg(args))
}

// commandDirect runs args on key at its Redis (heldkeys.Command): Redis'
// reply, or held true when the command may write and a cache may hold the
// key, or when Redis could not be reached for a read-only one (the shim
// then runs it).
func (c *Client) commandDirect(ctx context.Context, v *view, key string, spec *rediscmd.Spec, args [][]byte) (_ []byte, held bool, _ error) {
	mode := "r"
	if spec.Write {
		mode = "w"
	}
	call := redisbatch.Call{Script: heldkeys.Command, Keys: []string{key, heldkeys.Key},
		Args: []any{mode, rediscmd.PackArgs(args), wire.MaxValueLen}, Once: spec.Write}
	v.storage[v.p.ShardIndex(key)].EvalMany(ctx, []*redisbatch.Call{&call})
	r, isString := call.Result.(string)
	err := call.Err
	switch {
	case err == nil && isString:
		if spec.Write {
			c.stats.storageWrites.Add(1)
		} else {
			c.stats.storageReads.Add(1)
		}
		return []byte(r), false, nil
	case errors.Is(err, redis.Nil):
		c.stats.heldWrites.Add(1)
		return nil, true, nil
	case err == nil:
		return nil, false, fmt.Errorf("cannot run %s on %q: the script answered %T: %w", spec.Name, key, call.Result, ErrInternal)
	case !spec.Write:
		c.stats.storageFailures.Add(1)
		return nil, true, nil // the shim reads it
	}
	c.stats.storageFailures.Add(1)
	if isRedisError(err) {
		return nil, false, fmt.Errorf("cannot run %s on %q: %w: redis: %w", spec.Name, key, ErrInternal, err)
	}
	return nil, false, fmt.Errorf("cannot run %s on %q: %w: redis: %w", spec.Name, key, ErrOutcomeUnknown, err)
}

// CommandManyFunc runs args[i] on keys[i] at the keys' shims, as Command
// does without direct access, at once, and calls done when every reply is
// in replies[i] (Redis' reply in RESP2) or errs[i] is set. The keys must
// be distinct: their commands run concurrently.
func (c *Client) CommandManyFunc(ctx context.Context, keys []string, args [][][]byte, replies [][]byte, errs []error, done func()) {
	values, rest := commandRMWs(keys, args, errs)
	c.stats.rmws.Add(uint64(len(rest)))
	c.writeRest(ctx, wire.OpRMW, wire.RMWCommand.String(), keys, values, replies, errs, rest, done)
}

// commandRMWs are the shims' RMWs of args[i] on keys[i], and the indexes
// of those that are commands of the shims; errs[i] of the others is set.
func commandRMWs(keys []string, args [][][]byte, errs []error) (values [][]byte, ok []int) {
	values = make([][]byte, len(keys))
	for i, a := range args {
		if rediscmd.Lookup(a[0]) == nil {
			errs[i] = fmt.Errorf("cannot run %q on %q: %w: not a command of the shims", a[0], keys[i], ErrInternal)
			continue
		}
		values[i] = wire.AppendRMW(nil, wire.RMWCommand, wire.CommandArg(a))
		ok = append(ok, i)
	}
	return values, ok
}

// ErrNoStorageAccess: the operation needs the client to reach the shards'
// Redis itself (spec.dataPlane.directReads).
var ErrNoStorageAccess = errors.New("the client does not reach the shards' Redis (direct reads are off)")

// ConfigSet runs CONFIG SET with pairs (parameter, value, ...) on every
// shard's Redis, where the client reads storage itself; the shards already
// set keep the values when one fails. Without direct reads it is
// ErrNoStorageAccess.
func (c *Client) ConfigSet(ctx context.Context, pairs ...string) error {
	shards, err := c.storageOrErr("set Redis parameters")
	if err != nil {
		return err
	}
	cmd := append([]any{"CONFIG", "SET"}, anys(pairs)...)
	var errs []error
	for sh, b := range shards {
		call := redisbatch.Call{Cmds: [][]any{cmd}}
		b.EvalMany(ctx, []*redisbatch.Call{&call})
		if call.Err != nil {
			errs = append(errs, fmt.Errorf("shard %d: %w", sh, call.Err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("cannot set Redis parameters: %w", err)
	}
	return nil
}

// ConfigGet runs CONFIG GET of each of params on every shard's Redis,
// where the client reads storage itself, and returns each shard's values
// by parameter, in shard order; a parameter Redis does not know is
// missing from them. Without direct reads it is ErrNoStorageAccess.
func (c *Client) ConfigGet(ctx context.Context, params ...string) ([]map[string]string, error) {
	shards, err := c.storageOrErr("read Redis parameters")
	if err != nil {
		return nil, err
	}
	if len(params) == 0 {
		return make([]map[string]string, len(shards)), nil
	}
	cmds := make([][]any, len(params))
	for i, p := range params {
		cmds[i] = []any{"CONFIG", "GET", p}
	}
	out := make([]map[string]string, len(shards))
	for sh, b := range shards {
		call := redisbatch.Call{Cmds: cmds}
		b.EvalMany(ctx, []*redisbatch.Call{&call})
		err := call.Err
		if err == nil {
			err = errors.Join(call.Errs...)
		}
		if err != nil {
			return nil, fmt.Errorf("cannot read Redis parameters: shard %d: %w", sh, err)
		}
		out[sh] = map[string]string{}
		replies, _ := call.Result.([]any)
		for _, r := range replies {
			addConfigPairs(out[sh], r)
		}
	}
	return out, nil
}

// addConfigPairs adds the parameters of r, a CONFIG GET reply (RESP2's
// array of pairs or RESP3's map), to m.
func addConfigPairs(m map[string]string, r any) {
	switch r := r.(type) {
	case []any:
		for i := 0; i+1 < len(r); i += 2 {
			k, _ := r[i].(string)
			v, _ := r[i+1].(string)
			m[k] = v
		}
	case map[any]any:
		for k, v := range r {
			ks, _ := k.(string)
			vs, _ := v.(string)
			m[ks] = vs
		}
	}
}

func anys(s []string) []any {
	out := make([]any, len(s))
	for i, x := range s {
		out[i] = x
	}
	return out
}

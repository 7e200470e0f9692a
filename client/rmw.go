package client

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/distcache/distcache/dataplane/wire"
)

// The read-modify-write operations run at the key's storage shim as one
// protocol operation (wire.OpRMW): atomic in Redis, coherent like a write
// (every cached copy invalidated before, updated with the new value after,
// DistCache §4.3), and applied at most once however often the request is
// retransmitted, across a restart of the shim too. Errors are Put's, plus
// ErrNotInteger and ErrTooLarge as the operation says.

// IncrBy adds delta to key's integer value (a missing key counts as 0) and
// returns the new value; a value that is not an integer, or a sum that
// overflows, is ErrNotInteger.
func (c *Client) IncrBy(ctx context.Context, key string, delta int64) (int64, error) {
	if v := c.view.Load(); c.writesDirect(v) { // directwrite.go
		n, errs := make([]int64, 1), make([]error, 1)
		wait(func(done func()) { c.IncrByManyFunc(ctx, []string{key}, []int64{delta}, n, errs, done) })
		return n[0], errs[0]
	}
	return c.rmwInt(ctx, key, wire.RMWIncrBy, wire.IncrByArg(delta))
}

// Append appends suffix to key's value (a missing key counts as empty) and
// returns the new length; beyond wire.MaxValueLen it is ErrTooLarge.
func (c *Client) Append(ctx context.Context, key string, suffix []byte) (int64, error) {
	return c.rmwInt(ctx, key, wire.RMWAppend, suffix)
}

// rmwInt runs op, whose result is a decimal integer.
func (c *Client) rmwInt(ctx context.Context, key string, op wire.RMW, arg []byte) (int64, error) {
	r, err := c.rmw(ctx, key, op, arg)
	if err != nil {
		return 0, err
	}
	return shimInt(op, key, r)
}

// shimInt is the decimal result r of op on key, as a shim replies it.
func shimInt(op wire.RMW, key string, r []byte) (int64, error) {
	n, err := strconv.ParseInt(string(r), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("cannot %s %q: the shim's result %q: %w", op, key, r, ErrInternal)
	}
	return n, nil
}

// GetSet sets key to value and returns the old value, if the key existed.
func (c *Client) GetSet(ctx context.Context, key string, value []byte) (old []byte, existed bool, err error) {
	r, err := c.rmw(ctx, key, wire.RMWGetSet, value)
	if err != nil {
		return nil, false, err
	}
	if len(r) == 0 || (r[0] != '0' && r[0] != '1') {
		return nil, false, fmt.Errorf("cannot getset %q: the shim's result %q: %w", key, r, ErrInternal)
	}
	return r[1:], r[0] == '1', nil
}

// SetNX sets key to value unless it exists, and reports whether it did.
func (c *Client) SetNX(ctx context.Context, key string, value []byte) (bool, error) {
	return c.setIf(ctx, key, wire.RMWSetNX, value)
}

// SetXX sets key to value only if it exists, and reports whether it did.
func (c *Client) SetXX(ctx context.Context, key string, value []byte) (bool, error) {
	return c.setIf(ctx, key, wire.RMWSetXX, value)
}

func (c *Client) setIf(ctx context.Context, key string, op wire.RMW, value []byte) (bool, error) {
	r, err := c.rmw(ctx, key, op, value)
	if err != nil {
		return false, err
	}
	if string(r) != "0" && string(r) != "1" {
		return false, fmt.Errorf("cannot %s %q: the shim's result %q: %w", op, key, r, ErrInternal)
	}
	return string(r) == "1", nil
}

// rmw runs op on key at its shim and returns the result.
func (c *Client) rmw(ctx context.Context, key string, op wire.RMW, arg []byte) ([]byte, error) {
	c.stats.rmws.Add(1)
	if len(arg) >= wire.MaxValueLen {
		return nil, fmt.Errorf("cannot %s %q: %w: argument of %d bytes", op, key, ErrTooLarge, len(arg))
	}
	r, err := c.write(ctx, wire.OpRMW, op.String(), key, wire.AppendRMW(make([]byte, 0, 1+len(arg)), op, arg))
	if err != nil {
		return nil, err
	}
	return r.Value, nil
}

// SetOptions are Redis SET's options for SetWith.
type SetOptions struct {
	// NX sets only a missing key, XX only an existing one.
	NX, XX bool
	// Get returns the old value.
	Get bool
	// TTL gives the key an expiry (rounded up to a millisecond; 0: none);
	// KeepTTL keeps the key's expiry. A key with an expiry is never
	// cached: its reads go to its storage shim, which expires it.
	TTL     time.Duration
	KeepTTL bool
}

// SetResult is what SetWith did.
type SetResult struct {
	// Set reports that the value was written (NX and XX may refuse).
	Set bool
	// Old is the previous value when Existed (with SetOptions.Get).
	Old     []byte
	Existed bool
}

// SetWith writes key = value with Redis SET's options, as one RMW at the
// key's shim.
func (c *Client) SetWith(ctx context.Context, key string, value []byte, o SetOptions) (SetResult, error) {
	var cond, opts byte
	switch {
	case o.NX && o.XX:
		return SetResult{}, fmt.Errorf("cannot set %q: NX and XX exclude each other", key)
	case o.NX:
		cond = wire.SetNX
	case o.XX:
		cond = wire.SetXX
	}
	if o.Get {
		opts |= wire.SetGet
	}
	if o.KeepTTL {
		if o.TTL != 0 {
			return SetResult{}, fmt.Errorf("cannot set %q: a TTL and KeepTTL exclude each other", key)
		}
		opts |= wire.SetKeepTTL
	}
	if o.TTL < 0 {
		return SetResult{}, fmt.Errorf("cannot set %q: negative TTL %v", key, o.TTL)
	}
	px := uint64((o.TTL + time.Millisecond - 1) / time.Millisecond)
	r, err := c.rmw(ctx, key, wire.RMWSet, wire.SetArg(cond, opts, px, value))
	if err != nil {
		return SetResult{}, err
	}
	bad := fmt.Errorf("cannot set %q: the shim's result %q: %w", key, r, ErrInternal)
	if len(r) == 0 || (r[0] != '0' && r[0] != '1') {
		return SetResult{}, bad
	}
	res := SetResult{Set: r[0] == '1'}
	if o.Get {
		if len(r) < 2 || (r[1] != '0' && r[1] != '1') {
			return SetResult{}, bad
		}
		res.Existed, res.Old = r[1] == '1', r[2:]
	}
	return res, nil
}

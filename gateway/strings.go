package gateway

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"

	"github.com/distcache/distcache/client"
)

// The string commands: each key is read through its cache candidates and
// written through its storage shim by the client package.

func runGet(c *call, dst []byte) []byte {
	v, err := c.srv.cfg.Store.Get(c.ctx, string(c.args[1]))
	switch {
	case errors.Is(err, client.ErrNotFound):
		return appendNull(dst, c.resp3)
	case err != nil:
		return appendError(dst, errorReply(err, false))
	}
	return appendBulk(dst, v)
}

// runSet answers SET key value [NX | XX | GET]: NX and XX as conditional
// writes at the shim (SetNX, SetXX: OK, or null when not set), GET as
// GetSet (the old value, or null).
func runSet(c *call, dst []byte) []byte {
	key, value := string(c.args[1]), c.args[2]
	var nx, xx, get bool
	for _, o := range c.args[3:] {
		switch strings.ToUpper(string(o)) {
		case "NX":
			nx = true
		case "XX":
			xx = true
		case "GET":
			get = true
		case "EX", "PX", "EXAT", "PXAT", "KEEPTTL":
			return appendError(dst, "ERR SET option '"+strings.ToUpper(clip(o))+"' is not supported by DistCache (docs/gateway.md lists what is)")
		default:
			return appendError(dst, "ERR syntax error")
		}
	}
	store := c.srv.cfg.Store
	switch {
	case nx && xx:
		return appendError(dst, "ERR syntax error")
	case get && (nx || xx):
		return appendError(dst, "ERR SET with GET and NX or XX is not supported by DistCache (docs/gateway.md lists what is)")
	case get:
		return appendGetSet(c, dst, key, value)
	case nx || xx:
		setIf := store.SetNX
		if xx {
			setIf = store.SetXX
		}
		set, err := setIf(c.ctx, key, value)
		switch {
		case err != nil:
			return appendError(dst, errorReply(err, true))
		case !set:
			return appendNull(dst, c.resp3)
		}
		return appendOK(dst)
	}
	if err := store.Put(c.ctx, key, value); err != nil {
		return appendError(dst, errorReply(err, true))
	}
	return appendOK(dst)
}

// runDel deletes each key (DEL and UNLINK alike) and counts those that
// existed.
func runDel(c *call, dst []byte) []byte {
	var n atomic.Int64
	err := each(c.ctx, c.args[1:], 1, func(ctx context.Context, _ int, kv [][]byte) error {
		existed, err := c.srv.cfg.Store.Remove(ctx, string(kv[0]))
		if existed {
			n.Add(1)
		}
		return err
	})
	if err != nil {
		return appendError(dst, errorReply(err, true))
	}
	return appendInt(dst, n.Load())
}

// runExists counts the keys that exist, a key named twice counted twice.
func runExists(c *call, dst []byte) []byte {
	var n atomic.Int64
	err := each(c.ctx, c.args[1:], 1, func(ctx context.Context, _ int, kv [][]byte) error {
		_, err := c.srv.cfg.Store.Get(ctx, string(kv[0]))
		switch {
		case errors.Is(err, client.ErrNotFound):
			return nil
		case err != nil:
			return err
		}
		n.Add(1)
		return nil
	})
	if err != nil {
		return appendError(dst, errorReply(err, false))
	}
	return appendInt(dst, n.Load())
}

func runMGet(c *call, dst []byte) []byte {
	keys := c.args[1:]
	values := make([][]byte, len(keys))
	found := make([]bool, len(keys))
	err := each(c.ctx, keys, 1, func(ctx context.Context, i int, kv [][]byte) error {
		v, err := c.srv.cfg.Store.Get(ctx, string(kv[0]))
		switch {
		case errors.Is(err, client.ErrNotFound):
			return nil
		case err != nil:
			return err
		}
		values[i], found[i] = v, true
		return nil
	})
	if err != nil {
		return appendError(dst, errorReply(err, false))
	}
	dst = appendArray(dst, len(keys))
	for i, v := range values {
		if found[i] {
			dst = appendBulk(dst, v)
		} else {
			dst = appendNull(dst, c.resp3)
		}
	}
	return dst
}

// runMSet writes each pair; it is not atomic across keys (as in Redis
// Cluster, where a client splits MSET by slot): a failure leaves the
// pairs written before it.
func runMSet(c *call, dst []byte) []byte {
	if len(c.args)%2 == 0 {
		return appendError(dst, wrongArity(c.args[0]))
	}
	err := each(c.ctx, c.args[1:], 2, func(ctx context.Context, _ int, kv [][]byte) error {
		return c.srv.cfg.Store.Put(ctx, string(kv[0]), kv[1])
	})
	if err != nil {
		return appendError(dst, errorReply(err, true))
	}
	return appendOK(dst)
}

// errorReply is the Redis error for a failed operation on the cluster.
func errorReply(err error, write bool) string {
	switch {
	case errors.Is(err, client.ErrInvalidKey):
		return "ERR invalid key: DistCache keys are 1 to 512 bytes"
	case errors.Is(err, client.ErrNotInteger):
		return "ERR value is not an integer or out of range"
	case errors.Is(err, client.ErrTooLarge):
		return "ERR string exceeds maximum allowed size (DistCache values are at most 1048576 bytes)"
	case errors.Is(err, client.ErrCoherence), errors.Is(err, client.ErrOverloaded):
		return "TRYAGAIN " + err.Error()
	case errors.Is(err, client.ErrOutcomeUnknown), errors.Is(err, context.DeadlineExceeded):
		if write {
			return "ERR timeout: the write may or may not have been applied (" + err.Error() + ")"
		}
		return "ERR timeout: " + err.Error()
	}
	return "ERR " + err.Error()
}

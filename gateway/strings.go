package gateway

import (
	"context"
	"errors"
	"math"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/distcache/distcache/client"
)

// The string commands: each key is read through its cache candidates and
// written through its storage shim by the client package.

func runGet(c *call, dst []byte) []byte {
	v, err := c.srv.cfg.Store.Get(c.ctx, string(c.args[1]))
	return appendValue(dst, v, err, c.resp3)
}

// appendValue appends GET's reply for a read that returned v and err.
func appendValue(dst, v []byte, err error, resp3 bool) []byte {
	switch {
	case errors.Is(err, client.ErrNotFound):
		return appendNull(dst, resp3)
	case err != nil:
		return appendError(dst, errorReply(err, false))
	}
	return appendBulk(dst, v)
}

// get reads key through the cluster: a missing key is not an error.
func (c *call) get(ctx context.Context, key []byte) (v []byte, found bool, err error) {
	v, err = c.srv.cfg.Store.Get(ctx, string(key))
	switch {
	case errors.Is(err, client.ErrNotFound):
		return nil, false, nil
	case errors.Is(err, client.ErrWrongType): // it exists, as a hash, a list...
		return nil, true, nil
	}
	return v, err == nil, err
}

// runSet answers SET key value [NX | XX] [GET] [EX s | PX ms | EXAT t |
// PXAT t | KEEPTTL]. Without options it is a plain write; with them, one
// RMW at the shim (SetNX, SetXX, GetSet, SetWith): OK, or null when NX or
// XX refused, and with GET the old value (or null). EXAT and PXAT become an
// expiry relative to the gateway's clock. A key with an expiry is never
// cached (docs/gateway.md).
func runSet(c *call, dst []byte) []byte {
	key, value := string(c.args[1]), c.args[2]
	o, err := parseSetOptions(c.args[3:], time.Now())
	if err != "" {
		return appendError(dst, err)
	}
	store := c.srv.cfg.Store
	var res client.SetResult
	var werr error
	switch o {
	case client.SetOptions{}:
		werr = store.Put(c.ctx, key, value)
		res.Set = true
	case client.SetOptions{NX: true}:
		res.Set, werr = store.SetNX(c.ctx, key, value)
	case client.SetOptions{XX: true}:
		res.Set, werr = store.SetXX(c.ctx, key, value)
	case client.SetOptions{Get: true}:
		res.Old, res.Existed, werr = store.GetSet(c.ctx, key, value)
	default:
		res, werr = store.SetWith(c.ctx, key, value, o)
	}
	switch {
	case werr != nil:
		return appendError(dst, errorReply(werr, true))
	case o.Get && !res.Existed:
		return appendNull(dst, c.resp3)
	case o.Get:
		return appendBulk(dst, res.Old)
	case !res.Set:
		return appendNull(dst, c.resp3)
	}
	return appendOK(dst)
}

// parseSetOptions reads SET's options as Redis does, or returns Redis'
// error for them.
func parseSetOptions(args [][]byte, now time.Time) (client.SetOptions, string) {
	var o client.SetOptions
	expiries := 0
	for i := 0; i < len(args); i++ {
		opt := strings.ToUpper(string(args[i]))
		switch opt {
		case "NX":
			o.NX = true
		case "XX":
			o.XX = true
		case "GET":
			o.Get = true
		case "KEEPTTL":
			o.KeepTTL = true
			expiries++
		case "EX", "PX", "EXAT", "PXAT":
			if i+1 >= len(args) {
				return o, "ERR syntax error"
			}
			i++
			n, err := strconv.ParseInt(string(args[i]), 10, 64)
			if err != nil {
				return o, "ERR value is not an integer or out of range"
			}
			unit := time.Second
			if opt == "PX" || opt == "PXAT" {
				unit = time.Millisecond
			}
			if n <= 0 || n > math.MaxInt64/int64(unit) { // beyond a time.Duration (year 2262)
				return o, "ERR invalid expire time in 'set' command"
			}
			switch opt {
			case "EX":
				o.TTL = time.Duration(n) * time.Second
			case "PX":
				o.TTL = time.Duration(n) * time.Millisecond
			case "EXAT":
				o.TTL = max(time.Unix(n, 0).Sub(now), time.Millisecond)
			default:
				o.TTL = max(time.UnixMilli(n).Sub(now), time.Millisecond)
			}
			expiries++
		default:
			return o, "ERR syntax error"
		}
	}
	if (o.NX && o.XX) || expiries > 1 {
		return o, "ERR syntax error"
	}
	return o, ""
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
		_, found, err := c.get(ctx, kv[0])
		if found {
			n.Add(1)
		}
		return err
	})
	if err != nil {
		return appendError(dst, errorReply(err, false))
	}
	return appendInt(dst, n.Load())
}

// runMGet reads the keys with Store.GetMany, multiKeyWorkers at a time:
// their first requests leave together.
func runMGet(c *call, dst []byte) []byte {
	keys := make([]string, len(c.args)-1)
	for i, k := range c.args[1:] {
		keys[i] = string(k)
	}
	res, errs := make([]client.Result, len(keys)), make([]error, len(keys))
	for from := 0; from < len(keys); from += multiKeyWorkers {
		to := min(from+multiKeyWorkers, len(keys))
		c.srv.cfg.Store.GetMany(c.ctx, keys[from:to], res[from:to], errs[from:to])
	}
	return appendMGet(dst, res, errs, c.resp3)
}

// appendMGet appends MGET's reply for the reads res and errs: an array of
// the values (null for a key that does not exist or holds another type
// than a string, as Redis answers), or the error of the first read that
// failed.
func appendMGet(dst []byte, res []client.Result, errs []error, resp3 bool) []byte {
	for _, err := range errs {
		if err != nil && !errors.Is(err, client.ErrNotFound) && !errors.Is(err, client.ErrWrongType) {
			return appendError(dst, errorReply(err, false))
		}
	}
	dst = appendArray(dst, len(res))
	for i, r := range res {
		if errors.Is(errs[i], client.ErrWrongType) {
			dst = appendNull(dst, resp3)
			continue
		}
		dst = appendValue(dst, r.Value, errs[i], resp3)
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
	case errors.Is(err, client.ErrWrongType):
		return "WRONGTYPE Operation against a key holding the wrong kind of value"
	case errors.Is(err, client.ErrNotInteger):
		return "ERR value is not an integer or out of range"
	case errors.Is(err, client.ErrTooLarge):
		return tooLargeReply
	case errors.Is(err, client.ErrCrossShard):
		return errCrossSlot
	case errors.Is(err, client.ErrCoherence), errors.Is(err, client.ErrOverloaded), errors.Is(err, client.ErrKeysHeld):
		return "TRYAGAIN " + err.Error()
	case errors.Is(err, client.ErrOutcomeUnknown), errors.Is(err, context.DeadlineExceeded):
		if write {
			return "ERR timeout: the write may or may not have been applied (" + err.Error() + ")"
		}
		return "ERR timeout: " + err.Error()
	}
	return "ERR " + err.Error()
}

package gateway

import (
	"math"
	"strconv"
	"strings"
)

// The read-modify-write commands: each is one RMW at the key's storage
// shim (client.IncrBy, Append, GetSet, SetNX), atomic and coherent, so
// concurrent increments from any number of connections and gateways never
// lose an update.

// runIncr answers INCR, DECR, INCRBY and DECRBY.
func runIncr(c *call, dst []byte) []byte {
	name := strings.ToLower(string(c.args[0]))
	delta := int64(1)
	if len(c.args) == 3 {
		n, err := strconv.ParseInt(string(c.args[2]), 10, 64)
		if err != nil {
			return appendError(dst, "ERR value is not an integer or out of range")
		}
		delta = n
	}
	if strings.HasPrefix(name, "decr") {
		if delta == math.MinInt64 {
			return appendError(dst, "ERR decrement would overflow")
		}
		delta = -delta
	}
	n, err := c.srv.cfg.Store.IncrBy(c.ctx, string(c.args[1]), delta)
	if err != nil {
		return appendError(dst, errorReply(err, true))
	}
	return appendInt(dst, n)
}

func runAppend(c *call, dst []byte) []byte {
	n, err := c.srv.cfg.Store.Append(c.ctx, string(c.args[1]), c.args[2])
	if err != nil {
		return appendError(dst, errorReply(err, true))
	}
	return appendInt(dst, n)
}

func runGetSet(c *call, dst []byte) []byte {
	return appendGetSet(c, dst, string(c.args[1]), c.args[2])
}

// appendGetSet sets key and appends the old value, or null (GETSET, SET
// ... GET).
func appendGetSet(c *call, dst []byte, key string, value []byte) []byte {
	old, existed, err := c.srv.cfg.Store.GetSet(c.ctx, key, value)
	switch {
	case err != nil:
		return appendError(dst, errorReply(err, true))
	case !existed:
		return appendNull(dst, c.resp3)
	}
	return appendBulk(dst, old)
}

func runSetNX(c *call, dst []byte) []byte {
	set, err := c.srv.cfg.Store.SetNX(c.ctx, string(c.args[1]), c.args[2])
	if err != nil {
		return appendError(dst, errorReply(err, true))
	}
	if set {
		return appendInt(dst, 1)
	}
	return appendInt(dst, 0)
}

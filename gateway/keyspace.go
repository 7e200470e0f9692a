package gateway

import (
	"strconv"
	"strings"

	"github.com/distcache/distcache/client"
)

// The commands on the whole keyspace: each runs on every shard's Redis
// (Store.DBSize, Keys, Scan, RandomKey, FlushAll), which the gateway
// reaches where it reads storage itself (spec.dataPlane.directReads);
// otherwise they answer an error. The cluster's own keys (distcache:*)
// are hidden, and FLUSHALL keeps them. Each runs alone in a pipeline: it
// reads or writes every key.

// keyspaceCommands are the table's entries for the keyspace's commands.
func keyspaceCommands() []*command {
	return []*command{
		{name: "dbsize", arity: 1, flags: []string{"readonly", "fast"}, alone: true, run: runDBSize},
		{name: "keys", arity: 2, flags: []string{"readonly"}, alone: true, run: runKeys},
		{name: "scan", arity: -2, flags: []string{"readonly"}, alone: true, run: runScan},
		{name: "randomkey", arity: 1, flags: []string{"readonly"}, alone: true, run: runRandomKey},
		{name: "flushall", arity: -1, flags: []string{"write"}, write: true, alone: true, run: runFlush},
		{name: "flushdb", arity: -1, flags: []string{"write"}, write: true, alone: true, run: runFlush},
	}
}

// runDBSize answers DBSIZE: the keys of every shard.
func runDBSize(c *call, dst []byte) []byte {
	n, err := c.srv.cfg.Store.DBSize(c.ctx)
	if err != nil {
		return appendError(dst, errorReply(err, false))
	}
	return appendInt(dst, n)
}

// runKeys answers KEYS pattern: the matching keys of every shard.
func runKeys(c *call, dst []byte) []byte {
	keys, err := c.srv.cfg.Store.Keys(c.ctx, string(c.args[1]))
	if err != nil {
		return appendError(dst, errorReply(err, false))
	}
	return appendKeys(dst, keys)
}

// appendKeys appends keys as an array of bulk strings.
func appendKeys(dst []byte, keys []string) []byte {
	dst = appendArray(dst, len(keys))
	for _, k := range keys {
		dst = appendBulkString(dst, k)
	}
	return dst
}

// runScan answers SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]:
// a step of client.Client.Scan's walk over the shards, whose cursor
// carries the shard's index and that shard's Redis cursor.
func runScan(c *call, dst []byte) []byte {
	cursor, err := strconv.ParseUint(string(c.args[1]), 10, 64)
	if err != nil {
		return appendError(dst, "ERR invalid cursor")
	}
	o, msg := parseScanOptions(c.args[2:])
	if msg != "" {
		return appendError(dst, msg)
	}
	if o.Match == "" && matchEmpty(c.args[2:]) { // only the empty key, and no key is empty
		return appendKeys(appendBulkString(appendArray(dst, 2), "0"), nil)
	}
	next, keys, err := c.srv.cfg.Store.Scan(c.ctx, cursor, o)
	if err != nil {
		return appendError(dst, errorReply(err, false))
	}
	dst = appendArray(dst, 2)
	dst = appendBulkString(dst, strconv.FormatUint(next, 10))
	return appendKeys(dst, keys)
}

// parseScanOptions parses SCAN's options as Redis does, or returns Redis'
// error.
func parseScanOptions(args [][]byte) (client.ScanOptions, string) {
	var o client.ScanOptions
	for i := 0; i < len(args); i += 2 {
		if i+1 >= len(args) {
			return o, "ERR syntax error"
		}
		v := string(args[i+1])
		switch strings.ToLower(string(args[i])) {
		case "count":
			n, err := strconv.ParseInt(v, 10, 64)
			switch {
			case err != nil:
				return o, "ERR value is not an integer or out of range"
			case n < 1:
				return o, "ERR syntax error"
			}
			o.Count = n
		case "match":
			o.Match = v
		case "type":
			o.Type = v
		default:
			return o, "ERR syntax error"
		}
	}
	return o, ""
}

// matchEmpty says whether SCAN's options args have MATCH "".
func matchEmpty(args [][]byte) bool {
	for i := 0; i+1 < len(args); i += 2 {
		if strings.EqualFold(string(args[i]), "match") && len(args[i+1]) == 0 {
			return true
		}
	}
	return false
}

// runRandomKey answers RANDOMKEY: a key of any shard, or null.
func runRandomKey(c *call, dst []byte) []byte {
	key, found, err := c.srv.cfg.Store.RandomKey(c.ctx)
	switch {
	case err != nil:
		return appendError(dst, errorReply(err, false))
	case !found:
		return appendNull(dst, c.resp3)
	}
	return appendBulkString(dst, key)
}

// runFlush answers FLUSHALL and FLUSHDB [ASYNC|SYNC] (the gateway has one
// database): Store.FlushAll, which deletes every key but the cluster's
// own coherently with the caches, and replies once it has. ASYNC
// deletes with UNLINK, but the reply waits as for SYNC.
func runFlush(c *call, dst []byte) []byte {
	async := false
	switch {
	case len(c.args) > 2:
		return appendError(dst, "ERR syntax error")
	case len(c.args) == 2 && strings.EqualFold(string(c.args[1]), "async"):
		async = true
	case len(c.args) == 2 && !strings.EqualFold(string(c.args[1]), "sync"):
		return appendError(dst, "ERR syntax error")
	}
	if err := c.srv.cfg.Store.FlushAll(c.ctx, async); err != nil {
		return appendError(dst, errorReply(err, true))
	}
	return appendOK(dst)
}

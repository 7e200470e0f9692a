package gateway

import (
	"strings"
)

// encodingLimits are the parameters CONFIG SET may change: how Redis lays
// out small hashes, lists, sets, sorted sets, streams and HyperLogLogs in
// memory. They change no reply but OBJECT ENCODING's, so any client may
// set them; every other parameter is the operator's (the CacheCluster's
// spec), not an application's.
var encodingLimits = map[string]bool{
	"hash-max-listpack-entries": true, "hash-max-listpack-value": true,
	"hash-max-ziplist-entries": true, "hash-max-ziplist-value": true,
	"list-max-listpack-size": true, "list-max-ziplist-size": true, "list-compress-depth": true,
	"set-max-intset-entries": true,
	"zset-max-listpack-entries": true, "zset-max-listpack-value": true,
	"zset-max-ziplist-entries": true, "zset-max-ziplist-value": true,
	"stream-node-max-bytes": true, "stream-node-max-entries": true,
	"hll-sparse-max-bytes": true,
}

// runConfigSet answers CONFIG SET parameter value [parameter value ...]:
// the encoding limits only, set on every shard's Redis (Store.ConfigSet).
func runConfigSet(c *call, dst []byte) []byte {
	args := c.args[2:]
	if len(args) == 0 || len(args)%2 != 0 {
		return appendError(dst, "ERR wrong number of arguments for 'config|set' command")
	}
	pairs := make([]string, len(args))
	for i, a := range args {
		pairs[i] = string(a)
		if i%2 == 0 && !encodingLimits[strings.ToLower(pairs[i])] {
			return appendError(dst, "ERR CONFIG SET of '"+clip(a)+"' is not supported by the DistCache gateway: "+
				"only the encoding limits (hash-max-listpack-entries and the like)")
		}
	}
	if err := c.srv.cfg.Store.ConfigSet(c.ctx, pairs...); err != nil {
		return appendError(dst, errorReply(err, true))
	}
	return appendOK(dst)
}

package gateway

import (
	"errors"
	"path"
	"slices"
	"strings"

	"github.com/distcache/distcache/client"
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
	"set-max-intset-entries":    true,
	"zset-max-listpack-entries": true, "zset-max-listpack-value": true,
	"zset-max-ziplist-entries": true, "zset-max-ziplist-value": true,
	"stream-node-max-bytes": true, "stream-node-max-entries": true,
	"hll-sparse-max-bytes": true,
}

// operatorParameters are the operator's parameters a client may read
// (CONFIG GET) and set only to the value every shard already has: CONFIG
// SET then changes nothing and answers OK, as Redis does. Tools and test
// suites set them before they begin: Redis's own suite sets save to "",
// which every shard of a DistCache cluster has (its Redis never saves
// snapshots; layout.RedisArgs). Any other value is refused.
var operatorParameters = map[string]bool{"save": true, "appendonly": true}

// runConfigGet answers CONFIG GET pattern [pattern ...] with the
// parameters the gateway shows (the encoding limits and
// operatorParameters) that match, as the shards' Redis has them; where the
// shards differ, the first shard's value. A gateway that does not reach
// the shards' Redis (direct reads off) shows none.
func runConfigGet(c *call, dst []byte) []byte {
	var names []string
	for name := range shownParameters() {
		for _, p := range c.args[2:] {
			if ok, _ := path.Match(strings.ToLower(string(p)), name); ok {
				names = append(names, name)
				break
			}
		}
	}
	slices.Sort(names)
	shards, err := c.srv.cfg.Store.ConfigGet(c.ctx, names...)
	switch {
	case errors.Is(err, client.ErrNoStorageAccess):
		return appendMap(dst, 0, c.resp3)
	case err != nil:
		return appendError(dst, errorReply(err, false))
	}
	var pairs []string
	for _, name := range names {
		if len(shards) == 0 {
			break
		}
		if v, ok := shards[0][name]; ok {
			pairs = append(pairs, name, v)
		}
	}
	dst = appendMap(dst, len(pairs)/2, c.resp3)
	for _, s := range pairs {
		dst = appendBulkString(dst, s)
	}
	return dst
}

// shownParameters are the parameters CONFIG GET answers.
func shownParameters() map[string]bool {
	out := make(map[string]bool, len(encodingLimits)+len(operatorParameters))
	for name := range encodingLimits {
		out[name] = true
	}
	for name := range operatorParameters {
		out[name] = true
	}
	return out
}

// runConfigSet answers CONFIG SET parameter value [parameter value ...]:
// the encoding limits, set on every shard's Redis (Store.ConfigSet), and
// operatorParameters to the value every shard has, which changes nothing.
// It checks every pair before it sets any.
func runConfigSet(c *call, dst []byte) []byte {
	args := c.args[2:]
	if len(args) == 0 || len(args)%2 != 0 {
		return appendError(dst, "ERR wrong number of arguments for 'config|set' command")
	}
	var set []string
	held := map[string]string{}
	for i := 0; i < len(args); i += 2 {
		name := strings.ToLower(string(args[i]))
		switch {
		case encodingLimits[name]:
			set = append(set, name, string(args[i+1]))
		case operatorParameters[name]:
			held[name] = string(args[i+1])
		default:
			return appendError(dst, "ERR CONFIG SET of '"+clip(args[i])+"' is not supported by the DistCache gateway: "+
				"only the encoding limits (hash-max-listpack-entries and the like)")
		}
	}
	if len(held) > 0 {
		if e := checkHeld(c, held); e != "" {
			return appendError(dst, e)
		}
	}
	if len(set) > 0 {
		if err := c.srv.cfg.Store.ConfigSet(c.ctx, set...); err != nil {
			return appendError(dst, errorReply(err, true))
		}
	}
	return appendOK(dst)
}

// checkHeld returns the error reply to a CONFIG SET of operatorParameters
// to values (parameter: value), "" when every shard has them already.
func checkHeld(c *call, values map[string]string) string {
	names := make([]string, 0, len(values))
	for name := range values {
		names = append(names, name)
	}
	slices.Sort(names)
	shards, err := c.srv.cfg.Store.ConfigGet(c.ctx, names...)
	if err != nil {
		return errorReply(err, false)
	}
	for _, name := range names {
		for _, shard := range shards {
			if have := shard[name]; !sameSetting(have, values[name]) {
				return "ERR CONFIG SET of '" + name + "' is not supported by the DistCache gateway: the cluster's operator sets it " +
					"(to '" + have + "'; setting it to that value is accepted and changes nothing)"
			}
		}
	}
	return ""
}

// sameSetting says whether two values of a parameter are the same
// setting: equal but for case and spacing.
func sameSetting(a, b string) bool {
	return strings.EqualFold(strings.Join(strings.Fields(a), " "), strings.Join(strings.Fields(b), " "))
}

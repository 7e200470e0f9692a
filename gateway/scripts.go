package gateway

import (
	"bytes"
	"crypto/sha1"
	"sync"

	"github.com/distcache/distcache/dataplane/respframe"
)

// SCRIPT and FUNCTION: every shard's Redis must know the scripts and the
// functions, since EVALSHA and FCALL run at the shard of their keys. So
// what changes them (SCRIPT LOAD and FLUSH, FUNCTION LOAD, DELETE, FLUSH
// and RESTORE) runs at every shard, in turn, and what reads them (FUNCTION
// LIST, DUMP and STATS) at the first. EVAL, EVALSHA and FCALL themselves
// are shard commands (shardcmds.go).

// loadedScripts are the SHA-1s of the scripts this gateway loaded on every
// shard. EVAL runs a script at one shard, whose Redis caches it; the
// gateway loads it on the others too, once, so that EVALSHA finds it at
// the shard of any keys and SCRIPT EXISTS, which says 1 only for a
// script every shard has, says so after an EVAL, as Redis does.
type loadedScripts struct {
	mu   sync.Mutex // guards shas
	shas map[[sha1.Size]byte]struct{}
}

// maxLoadedScripts bounds the SHA-1s kept: beyond it they are forgotten,
// and loaded again at their next EVAL.
const maxLoadedScripts = 1 << 14

// loadEverywhere loads body on every shard unless the gateway did.
func (c *call) loadEverywhere(body []byte) {
	l := &c.srv.scripts
	sum := sha1.Sum(body)
	l.mu.Lock()
	_, done := l.shas[sum]
	l.mu.Unlock()
	if done {
		return
	}
	replies, err := c.srv.cfg.Store.RunOnEveryShard(c.ctx, [][]byte{[]byte("SCRIPT"), []byte("LOAD"), body})
	if err != nil {
		return // EVAL itself runs at its shard and answers
	}
	for _, r := range replies {
		if respframe.Error(r) != "" {
			return
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.shas == nil || len(l.shas) >= maxLoadedScripts {
		l.shas = map[[sha1.Size]byte]struct{}{}
	}
	l.shas[sum] = struct{}{}
}

// forget forgets every script loaded (SCRIPT FLUSH).
func (l *loadedScripts) forget() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.shas = nil
}

// scriptCommands are the table's entries for SCRIPT and FUNCTION.
func scriptCommands() []*command {
	return []*command{
		{name: "script", arity: -2, flags: []string{"noscript"}, run: runScriptAdmin},
		{name: "function", arity: -2, flags: []string{"noscript"}, run: runScriptAdmin},
	}
}

// onEveryShard are the subcommands of SCRIPT and FUNCTION that run at
// every shard.
var onEveryShard = map[string]bool{
	"load": true, "flush": true, "exists": true, "kill": true, "delete": true, "restore": true,
}

func runScriptAdmin(c *call, dst []byte) []byte {
	sub := string(bytes.ToLower(c.args[1]))
	if !onEveryShard[sub] {
		r, err := c.srv.cfg.Store.Run(c.ctx, nil, nil, c.args)
		return appendShimReply(dst, c.args, r, err, c.resp3)
	}
	if sub == "flush" && bytes.EqualFold(c.args[0], []byte("script")) {
		c.srv.scripts.forget()
	}
	replies, err := c.srv.cfg.Store.RunOnEveryShard(c.ctx, c.args)
	if err != nil {
		return appendError(dst, errorReply(err, true))
	}
	var r []byte
	switch sub {
	case "exists":
		r = allExist(replies)
	case "kill":
		r = anyKilled(replies)
	default:
		r = replies[0]
		for _, x := range replies {
			if respframe.Error(x) != "" {
				r = x // a shard's refusal
				break
			}
		}
	}
	return appendShimReply(dst, c.args, r, nil, c.resp3)
}

// allExist merges the shards' replies to SCRIPT EXISTS: a script exists
// when every shard has it, since EVALSHA may run at any.
func allExist(replies [][]byte) []byte {
	out := replies[0]
	if respframe.Error(out) != "" {
		return out
	}
	out = bytes.Clone(out)
	for _, r := range replies[1:] {
		if len(r) != len(out) {
			return r // an error, or a reply unlike the first's
		}
		for i := range out {
			if out[i] == '1' && r[i] == '0' && i > 0 && out[i-1] == ':' {
				out[i] = '0'
			}
		}
	}
	return out
}

// anyKilled merges the shards' replies to SCRIPT KILL and FUNCTION KILL:
// OK when a shard killed its script, else the first's refusal (NOTBUSY).
func anyKilled(replies [][]byte) []byte {
	for _, r := range replies {
		if respframe.Error(r) == "" {
			return r
		}
	}
	return replies[0]
}

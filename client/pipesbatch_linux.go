package client

import (
	"bytes"
	"errors"
	"strconv"

	"github.com/distcache/distcache/dataplane/heldkeys"
	"github.com/distcache/distcache/dataplane/redispipe"
)

// A round's SETs for one shard run as one script (heldkeys.SetManySource)
// when there are several: Redis enters Lua once for them, not once per
// key, which is most of what a direct SET costs it.

var (
	loadSetMany = [][]byte{[]byte("SCRIPT"), []byte("LOAD"), []byte(heldkeys.SetManySource)}
	setManySHA  = []byte(heldkeys.SetMany.Hash())
)

// putShard queues the direct SETs of keys[i] for i in idx, all of one
// shard, on conn, and reports whether it could.
func (p *Pipes) putShard(conn *redispipe.Conn, w *pipedWrites, idx []int, kbs [][]byte) bool {
	if len(idx) == 1 {
		i := idx[0]
		return p.do(conn, w, i, evalsha, setSHA, two, kbs[i], held, w.values[i])
	}
	args := make([][]byte, 0, 4+2*len(idx))
	args = append(args, evalsha, setManySHA, strconv.AppendInt(nil, int64(len(idx)+1), 10), held)
	for _, i := range idx {
		args = append(args, kbs[i])
	}
	for _, i := range idx {
		args = append(args, w.values[i])
	}
	return p.do(conn, &pipedSetMany{w: w, idx: idx}, 0, args...)
}

// pipedSetMany is one shard's SETs of a round, run as one script.
type pipedSetMany struct {
	w   *pipedWrites
	idx []int // the keys' indexes in w
}

// errSetManyReply is a reply to the script that is not one of its
// answers.
var errSetManyReply = errors.New("unexpected reply to the direct writes' script")

// RedisReply settles each key's write, or leaves it to its shim.
func (b *pipedSetMany) RedisReply(_ int, rep redispipe.Reply) {
	all := func(out directOutcome, err error) {
		for _, i := range b.idx {
			b.w.settle(i, out, err)
		}
	}
	if out, failed, err := scriptFailed(rep); failed {
		all(out, err)
		return
	}
	if rep.Kind != '$' || rep.Nil || len(rep.Value) < len(b.idx) {
		all(directRefused, errSetManyReply)
		return
	}
	codes, refusal, _ := bytes.Cut(rep.Value, []byte("\n"))
	for j, i := range b.idx {
		switch codes[j] {
		case '1':
			b.w.settle(i, directApplied, nil)
		case '0':
			b.w.settle(i, directHeld, nil)
		default:
			b.w.settle(i, directRefused, errRedisReply(refusal))
		}
	}
}

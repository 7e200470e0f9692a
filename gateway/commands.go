package gateway

import (
	"context"
	"strings"
)

// call is one command being run.
type call struct {
	ctx   context.Context
	srv   *Server
	sess  *session
	args  [][]byte // args[0] is the command's name
	resp3 bool
}

// command is a supported command, described as Redis' COMMAND describes
// one.
type command struct {
	name string // lower case
	// arity is the number of arguments with the name: exactly arity when
	// positive, at least -arity when negative.
	arity int
	flags []string
	// first, last and step locate the keys among the arguments (last < 0
	// counts from the end), as in COMMAND's reply.
	first, last, step int
	// write says the command changes its keys.
	write bool
	// alone says the command reads or changes the connection's state: it
	// runs by itself, after the commands before it and before those after.
	alone bool
	// atShim says the command is one of package rediscmd's, which the
	// key's shim (or Redis) runs as it is (shimcmds.go).
	atShim bool
	// inTx says the command may be queued in MULTI: Redis runs it as it is
	// in the transaction (tx.go).
	inTx bool
	// blocking says the command may wait at Redis for as long as the
	// application asked (blocking.go): it takes no slot of MaxInFlight.
	blocking bool
	// keysOf locates the keys of a command that names their number
	// (ZUNIONSTORE, EVAL) or their place by a word (XREAD's STREAMS);
	// nil: first, last and step do.
	keysOf func(args [][]byte) [][]byte
	run    func(c *call, dst []byte) []byte
}

// table lists the supported commands (docs/gateway.md describes each);
// commands indexes it by name. init fills both: COMMAND, in the table,
// reads them.
var (
	table    []*command
	commands = map[string]*command{}
	// getCommand is GET's entry, which pipelined GETs share (runGets).
	getCommand *command
	// setCommand, mgetCommand, incrCommand and decrCommand are the
	// entries an event loop's rounds share (loopround_linux.go).
	setCommand, mgetCommand, incrCommand, decrCommand *command
)

func init() {
	table = []*command{
		{name: "get", arity: 2, flags: []string{"readonly", "fast"}, first: 1, last: 1, step: 1, run: runGet},
		{name: "set", arity: -3, flags: []string{"write", "denyoom"}, first: 1, last: 1, step: 1, write: true, run: runSet},
		{name: "del", arity: -2, flags: []string{"write"}, first: 1, last: -1, step: 1, write: true, run: runDel},
		{name: "unlink", arity: -2, flags: []string{"write", "fast"}, first: 1, last: -1, step: 1, write: true, run: runDel},
		{name: "exists", arity: -2, flags: []string{"readonly", "fast"}, first: 1, last: -1, step: 1, run: runExists},
		{name: "touch", arity: -2, flags: []string{"readonly", "fast"}, first: 1, last: -1, step: 1, run: runTouch},
		{name: "mget", arity: -2, flags: []string{"readonly", "fast"}, first: 1, last: -1, step: 1, run: runMGet},
		{name: "mset", arity: -3, flags: []string{"write", "denyoom"}, first: 1, last: -1, step: 2, write: true, run: runMSet},
		{name: "ping", arity: -1, flags: []string{"fast"}, run: runPing},
		{name: "echo", arity: 2, flags: []string{"fast"}, run: runEcho},
		{name: "time", arity: 1, flags: []string{"random", "loading", "stale", "fast"}, run: runTime},
		{name: "hello", arity: -1, flags: []string{"noscript", "loading", "stale", "fast"}, alone: true, run: runHello},
		{name: "client", arity: -2, flags: []string{"noscript", "loading", "stale"}, alone: true, run: runClient},
		{name: "select", arity: 2, flags: []string{"loading", "stale", "fast"}, alone: true, run: runSelect},
		{name: "quit", arity: -1, flags: []string{"noscript", "loading", "stale", "fast"}, alone: true, run: runQuit},
		{name: "command", arity: -1, flags: []string{"loading", "stale"}, run: runCommand},
		{name: "info", arity: -1, flags: []string{"loading", "stale"}, run: runInfo},
		{name: "incr", arity: 2, flags: []string{"write", "denyoom", "fast"}, first: 1, last: 1, step: 1, write: true, run: runIncr},
		{name: "decr", arity: 2, flags: []string{"write", "denyoom", "fast"}, first: 1, last: 1, step: 1, write: true, run: runIncr},
		{name: "incrby", arity: 3, flags: []string{"write", "denyoom", "fast"}, first: 1, last: 1, step: 1, write: true, run: runIncr},
		{name: "decrby", arity: 3, flags: []string{"write", "denyoom", "fast"}, first: 1, last: 1, step: 1, write: true, run: runIncr},
		{name: "append", arity: 3, flags: []string{"write", "denyoom", "fast"}, first: 1, last: 1, step: 1, write: true, run: runAppend},
		{name: "getset", arity: 3, flags: []string{"write", "denyoom", "fast"}, first: 1, last: 1, step: 1, write: true, run: runGetSet},
		{name: "setnx", arity: 3, flags: []string{"write", "denyoom", "fast"}, first: 1, last: 1, step: 1, write: true, run: runSetNX},
		{name: "auth", arity: -2, flags: []string{"noscript", "loading", "stale", "fast", "no_auth"}, alone: true, run: runAuth},
		{name: "config", arity: -2, flags: []string{"admin", "noscript", "loading", "stale"}, run: runConfig},
		{name: "cluster", arity: -2, run: runCluster},
		{name: "readonly", arity: 1, flags: []string{"loading", "stale", "fast"}, run: runClusterConnection},
		{name: "readwrite", arity: 1, flags: []string{"loading", "stale", "fast"}, run: runClusterConnection},
		{name: "asking", arity: 1, flags: []string{"fast"}, run: runClusterConnection},
	}
	for _, c := range table {
		switch c.name {
		case "get", "set", "del", "unlink", "exists", "touch", "mget", "mset", "ping", "echo", "time",
			"incr", "decr", "incrby", "decrby", "append", "getset", "setnx":
			c.inTx = true
		}
	}
	table = append(table, shimCommands()...)
	table = append(table, txCommands()...)
	table = append(table, shardCommands()...)
	table = append(table, blockingCommands()...)
	table = append(table, keyspaceCommands()...)
	for _, c := range table {
		if commands[c.name] != nil {
			panic("gateway: command " + c.name + " listed twice")
		}
		commands[c.name] = c
		commands[strings.ToUpper(c.name)] = c // as most clients send it: no case folding
	}
	getCommand = commands["get"]
	setCommand = commands["set"]
	mgetCommand = commands["mget"]
	incrCommand, decrCommand = commands["incr"], commands["decr"]
}

// lookup finds the command named name, in any case.
func lookup(name []byte) *command {
	if c, ok := commands[string(name)]; ok { // the compiler does not allocate here
		return c
	}
	return commands[strings.ToLower(string(name))]
}

// arityOK checks the number of arguments.
func (c *command) arityOK(n int) bool {
	if c.arity >= 0 {
		return n == c.arity
	}
	return n >= -c.arity
}

// keys returns the key arguments of args.
func (c *command) keys(args [][]byte) [][]byte {
	if c.keysOf != nil {
		return c.keysOf(args)
	}
	if c.first == 0 {
		return nil
	}
	last := c.last
	if last < 0 {
		last += len(args)
	}
	if c.step == 1 { // the keys are contiguous: no copy
		lo := min(c.first, len(args))
		return args[lo:max(lo, min(last+1, len(args)))]
	}
	var out [][]byte
	for i := c.first; i <= last && i < len(args); i += c.step {
		out = append(out, args[i])
	}
	return out
}

// unknownCommand is Redis' error for a command it does not know.
func unknownCommand(args [][]byte) string {
	var b strings.Builder
	b.WriteString("ERR unknown command '")
	b.WriteString(clip(args[0]))
	b.WriteString("', with args beginning with: ")
	for _, a := range args[1:] {
		b.WriteByte('\'')
		b.WriteString(clip(a))
		b.WriteString("' ")
	}
	return b.String()
}

// wrongArity is Redis' error for a wrong number of arguments.
func wrongArity(name []byte) string {
	return "ERR wrong number of arguments for '" + strings.ToLower(clip(name)) + "' command"
}

// clip shortens an argument quoted in an error, as Redis does (128 bytes).
func clip(b []byte) string {
	if len(b) > 128 {
		b = b[:128]
	}
	return string(b)
}

// Package gateway serves DistCache to unmodified Redis clients: a server
// that speaks the Redis protocol (RESP2 and RESP3, parsed and encoded with
// tidwall/redcon) to applications and the DistCache protocol to the
// cluster, through the client package.
//
// The gateway is the paper's client-side router, the role of the client
// rack's top-of-rack switch (DistCache §4.2): every read it serves goes to
// the least loaded of the key's cache candidates, chosen by power-of-k
// choices over the loads piggybacked on replies, and every write to the
// key's storage shim, which runs the two-phase coherence protocol (§4.3).
// It follows the partition map and the fencing rules as the client package
// does, because it is that package: there is no second router.
//
// On Linux, event loops serve plaintext connections (loop_linux.go): a
// loop reads the pipelines of all its readable connections in one pass and
// sends their GETs and MGETs to the cluster as one round, their plain SETs
// as another and their INCRs and DECRs as a third, so that requests for
// one cache node or shim share datagrams whichever connection sent them;
// other pipelines run on workers.
//
// Pipelining is the normal case. The commands of one read from a
// connection run concurrently, in batches that keep Redis' per-connection
// order where it can be observed: a command that writes a key waits for
// the earlier commands on that key, and a later command on a key waits for
// an earlier write of it; commands that change the connection (HELLO,
// CLIENT SETNAME, SELECT, QUIT) run alone, in order. Replies are written in
// the order of the commands.
//
// Bad input loses nothing and holds nothing (guard.go): malformed RESP,
// or a command not complete within Config.CommandTimeout, ends its
// connection with a protocol error; a command with a value larger than
// the protocol allows, or larger than Config.MaxCommandBytes, is
// discarded as its bytes arrive and gets a Redis-style error, the
// connection going on. Other connections are served by a goroutine each
// (serve_conns.go). docs/gateway.md lists every command and option.
package gateway

// Package client is the DistCache client library: it reads keys from the
// cache layers with power-of-k-choices routing and writes them through the
// storage shims (Liu et al., "DistCache: Provable Load Balancing for
// Large-Scale Storage Systems with Distributed Caching", FAST '19).
//
// # Reads (§3.1, §4.2)
//
// DistCache caches a hot key at most once per cache layer, each layer placing
// keys with its own independent hash, so a read has one candidate node per
// layer: partmap.Placement.Candidates lists them. Get sends the GET to the
// candidate with the lowest load normalised by capacity (routing.Router over
// one shared routing.LoadTable): the power-of-two-choices with two layers.
// The client never polls nodes for their load. Every cache node stamps its
// node id and current load into each reply (FlagTelemetry), and the client
// records it in the LoadTable — the paper's in-network telemetry, here done
// by the client (§4.2). Loads that are not refreshed age toward zero
// (Config.Aging), so a node once seen busy is tried again and its real load
// learned. Ties are broken at random so idle layers share the reads.
//
// Failures (§4.4): a GET attempt that gets no reply within AttemptTimeout
// marks the node failed in the LoadTable for FailBackoff, so later reads skip
// it; after FailBackoff it is a candidate again (probed by the next read that
// chooses it). A reply NOT_OWNER (the node has another map version),
// OVERLOADED or UNAVAILABLE makes the read try another candidate without
// marking the node. When no cache candidate is left, the read goes straight
// to the key's storage shim (FlagDirect), which answers from Redis. When the
// shim fails too, the read starts another round after a short pause
// (RoundPause, doubling up to 8 times): the candidates that are not in
// FailBackoff, then the shim. A read goes on round after round until the
// caller's context ends, so a shim or Redis server that restarts within the
// read's deadline delays it instead of failing it; a context without a
// deadline bounds the requests to Attempts, the direct reads included.
// NOT_FOUND is an answer, not a failure: it is never retried.
//
// Dead, paused and slow nodes, before any map says so: the LoadTable also
// counts this client's requests in flight per node, and a node that has
// requests outstanding and has answered none of those sent in the last
// HedgeDelay is stalled; the router passes over it while another candidate
// is not (least-outstanding power-of-two-choices; routing.WithStallAfter).
// A read whose node has not answered after HedgeDelay is hedged: the
// client asks the least loaded candidate not tried yet for its copy
// (FlagCacheOnly, answered from the cache or refused, never read from
// storage) and takes whichever final answer comes first; if that candidate
// has no copy and the first node is stalled, the read goes on at it in
// full. An abandoned request stays counted in flight until AttemptTimeout,
// so the node stays passed over instead of being probed by every read; if
// the node answered nothing sent since, it is then marked failed for
// FailBackoff, as after a timeout. Writes cannot be hedged: the shim's
// phase 1 waits for a silent node until the lease the shim granted it
// ends, or the map releases it (docs/dataplane.md, Fencing).
//
// A node that is not Active in its own map refuses reads with NOT_OWNER and
// its map version. Every reply carries the replier's map version; a newer
// one than the client's makes the client read its map source (Config.Maps)
// in the background, and a refusal from a node with a newer map makes the
// read wait for that and route again under the new map (docs/dataplane.md,
// Fencing). Readers never choose a Fenced member. A mapwatch.Watcher is
// such a source, over a map file or, for a client in a Kubernetes cluster,
// the operator's ConfigMap read through the API (kubemap.Source); running
// the watcher with a subscriber that calls SetMap keeps the client current
// without waiting for a reply to show it is behind.
//
// With Config.ClientLeaf the client sits behind a client-leaf switch, the
// top of rack of its clients (§4.2): the first attempt of a GET of a key
// of at most 32 bytes that has a switch candidate goes to the leaf's read
// port of the key's shard, and the leaf sends it to the less loaded of the
// key's spine and storage-leaf switches. A leaf that does not answer
// within AttemptTimeout is skipped for FailBackoff, as a node that timed
// out, and the read goes on at the client's own choice; so does a read the
// leaf's switch refused (clientleaf.go). Writes never go through the leaf.
//
// Config.Bypass is the NoCache baseline of the paper's evaluation (§6): every
// read goes straight to storage (the key's shim with FlagDirect, or its
// Redis where the client reads storage itself, storage.go), as if there
// were no cache layer; writes are unchanged, so the shims still keep any
// cached copies coherent.
//
// # Writes (§4.3)
//
// Put and Delete go to the key's storage shim, which runs the two-phase
// coherence protocol (invalidate every cached copy, write Redis, reply, then
// update the copies). A write is ONE transport call: the transport resends it
// with the same sequence number until a reply arrives or the caller's
// context ends, and the shim treats a repeated (sender, sequence number) as
// the same request. The client never sends a write again with a new sequence
// number after a timeout: the first one may still be executed later and
// would then reorder with the retry and with later writes. So a write whose
// context ends without a reply fails with an error wrapping
// context.DeadlineExceeded (or context.Canceled) whose outcome is unknown.
// The one exception is COHERENCE_TIMEOUT: the shim guarantees it wrote
// nothing, so the client retries with a new sequence number, Attempts calls
// in total.
//
// # Partition map
//
// The client holds an immutable view of the current partition map (the
// compiled Placement plus parsed addresses), swapped atomically by SetMap.
// Failure marks are kept across map changes: they expire on their own.
//
// # Concurrency
//
// A Client is safe for concurrent use. Routers (not safe for concurrent
// use) come from a sync.Pool and share one LoadTable.
package client

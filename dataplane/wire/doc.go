// Package wire is DistCache's packet format: a fixed 64-byte header that a
// P4 parser can match, followed by the full key and (a fragment of) the value.
//
// Every field sits at a fixed offset, in network byte order:
//
//	offset size field
//	     0    2 magic 0xDCAC
//	     2    1 protocol version (1; 2: a signed datagram with a Stamp)
//	     3    1 op (GET, GET_REPLY, PUT, …; see Op)
//	     4    1 flags (see Flag)
//	     5    1 status (see Status; 0 in requests)
//	     6    2 key length (1…MaxKeyLen)
//	     8    8 sequence number (chosen by the requester, echoed in the reply)
//	    16   16 key digest (hashing.DigestOf(key); switches match on it)
//	    32    4 node id   } telemetry: the cache node that answered and its
//	    36    4 node load } load in the current window (DistCache §4.2);
//	                        with FlagEpoch instead, a shim's lease epoch
//	                        for the receiving node (high, low 32 bits)
//	    40    4 value length (of the whole value, all fragments)
//	    44    4 fragment offset (where this datagram's value bytes start)
//	    48    8 value version (coherence, DistCache §4.3)
//	    56    8 partition map version of the sender
//	    64    … key, then value bytes [fragment offset, fragment offset + n)
//	     …   32 version 2 (StampedVersion) only: the sender's Stamp (fresh.go)
//	     …   16 with FlagAuth only: MAC tag of every byte before it (TagLen)
//
// A value that does not fit one datagram is split into fragments, each a
// complete packet with the same header fields except the fragment offset, as
// CableCache's multi-packet objects: a switch parses every fragment alone,
// and the receiver reassembles them (see Reassembler). A message of more
// than Window bytes is sent a window at a time, each asked for by its
// receiver with MORE (flow control; see Window). The P4 header
// definitions in stratum_pipelines/ must match this layout; the golden vectors
// in testdata/ pin it.
//
// Authentication: a datagram with FlagAuth ends with a TagLen-byte tag
// over its header, key and value bytes (HMAC-SHA256 truncated, package
// wireauth), each fragment signed on its own. Authenticated says which ops
// carry one where the cluster has a data-plane key: PUT, DEL, INVALIDATE,
// UPDATE, FETCH, RMW, FLUSH, RENEW and their replies; never GET, GET_REPLY,
// PING or PONG, so
// that the hit path's datagrams and a switch's parser are unchanged.
// Parse strips the tag without checking it (the transport does, with the
// key); Signed returns it.
//
// Requests and replies: a reply has the request's op + 1, the request's
// sequence number and key, and a Status. FETCH (cache insertion) is answered
// by FETCH_REPLY carrying the value and its version: the fill of the paper's
// insertion, serialised with writes by the shim. RMW (read-modify-write:
// increment, append, get-and-set, conditional set, or a Redis command of
// package rediscmd run as it is; see RMW) goes to the
// key's shim like a write, its Value the operation, and RMW_REPLY's Value is
// the result; StatusInvalid refuses an increment of a value that is not an
// integer. Switches treat both as misses. StatusUncacheable marks a key
// with an expiry or of another type than a string, which no cache may
// hold: a FETCH_REPLY that fills nothing, and an UPDATE that leaves the
// copies invalid. StatusWrongType answers a GET or an increment of a key
// of another type (Redis' WRONGTYPE).
//
// Switches: a switch-backed layer caches only keys of at most
// MaxSwitchKeyLen bytes with values of at most MaxSwitchValueLen
// (SwitchCacheable), what a P4 pipeline parses whole.
//
// Bundles: a datagram of op BUNDLE carries several complete datagrams for
// the same receiver, each behind a 2-byte length (bundle.go); the
// transport can send the messages that leave together for one peer that
// way (transport.Config.Bundle) and serves each record as if it had
// arrived alone. The golden vectors of
// testdata/golden-bundle pin the layout.
//
// FlagHit has one meaning per reply op: on GET_REPLY the value was served
// from a cache node's copy; on INVALIDATE_ACK the node held an entry for the
// key (a valid copy, or a placeholder waiting for its fill), so the write
// has a copy to invalidate and then update — the coherence work the shim
// accounts for (DistCache §4.3). An INVALIDATE_ACK without FlagHit means
// the node had nothing to invalidate. On DEL_REPLY the deleted key existed.
// Other ops do not set it. FlagTracked
// appears only on a shim's GET_REPLY to a cache node: the shim will
// invalidate that node before any later write of the key completes, so the
// node may hand the reply to readers that joined its request (see
// FlagTracked). FlagCacheOnly appears only on a client's GET to a cache
// node, a hedged read: the node answers from its copy or refuses with
// StatusUnavailable, and never reads the backend for it. The same bit on a
// write to a shim is FlagFirst: the request's first datagram. FlagDirect on a
// client's GET to a cache node asks the node to answer a miss with
// StatusUnavailable and FlagDirect, and the client reads the key from its
// shard's Redis.
package wire

// Package snapshot takes and restores snapshot sets of a cluster's Redis
// storage shards.
//
// A snapshot set is a directory with one RDB file per storage shard, named
// after the shard (<cluster>-rack-<r>-<s>.rdb), and manifest.json, which
// names the cluster and its shape and gives each file's size and SHA-256.
// Take writes it: for each shard it opens a replication connection to the
// shard's Redis, as `redis-cli --rdb` does (REPLCONF capa eof, REPLCONF
// rdb-only 1, SYNC), reads the RDB Redis streams, and checks it (VerifyRDB:
// the "REDIS" magic and version, and the CRC64 footer) before it writes the
// manifest, last: a directory without a manifest is not a snapshot set.
//
// Each shard's RDB is a point-in-time copy of that shard alone, taken when
// its Redis forks for the transfer; the shards are copied at about the same
// time, not at one instant, so a set is not consistent across shards.
//
// Restore loads a set into a cluster. By default it reads each RDB itself
// (RDBReader): for each key of database 0 it cuts the value's bytes out of
// the file as a DUMP payload, without decoding it, and RESTOREs it, with
// its expiry time, into the shard the target cluster's partition map
// places it on (partmap.Placement.Shard, the data plane's own placement),
// so the target may have another number of racks or shards per rack. With
// RestoreOptions.RedisServer it starts a temporary redis-server on each
// RDB instead (unix socket only, no persistence), SCANs it, and copies
// each key with DUMP, PTTL and RESTORE. It writes straight to the Redis servers,
// past the shims: it is meant for a new, empty cluster whose caches hold
// nothing (docs/durability.md).
package snapshot

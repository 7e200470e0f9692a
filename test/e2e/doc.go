// Package e2e holds the data plane's end-to-end tests: real redis-servers,
// storage shims, cache nodes in two layers and clients on loopback UDP,
// driven by a Zipf workload with writes. Every operation is recorded and the
// histories are checked for linearizability with porcupine, per key: no read
// may return a value older than the latest acknowledged write.
package e2e

// Package redispipe is a Redis connection owned by one event loop, as a
// proxy's server connection is (twemproxy, Envoy's Redis proxy): commands
// are appended to an output buffer as RESP, written with one system call
// when the loop flushes, and their replies parsed in order when the socket
// is readable, each handed to the Waiter that queued it. There is no
// goroutine, lock or channel, and no allocation per command beyond a
// reply's value. Every method must be called from the loop that owns the
// connection.
//
// A connection that breaks fails every command in flight (Reply.Err) and
// is dialled again on the next command after a pause; commands queued
// while it is down fail at once, for the caller to take another path.
//
// A connection may log in with AUTH first (WithLogin) and speak TLS
// (WithTLS). An IP address without TLS is connected on the loop's thread
// (a non-blocking connect); a host name or TLS are dialled on a goroutine
// of their own, which resolves the name, connects and completes the
// handshake, then hands the socket and session to the loop (dial.go).
// From then on the loop seals and opens the TLS records itself: the
// session reads the non-blocking socket until it would block and writes
// its records to the connection's output buffer.
package redispipe

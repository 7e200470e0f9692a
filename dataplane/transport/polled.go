package transport

import "net/netip"

// polledSocket is a polled endpoint's socket (Config.Polled), outside the
// runtime's poller (rawsocket_linux.go).
type polledSocket interface {
	writeTo(b []byte, dst netip.AddrPort) error
	close() error
}

//go:build !linux

package transport

import (
	"net"
	"net/netip"
)

// sysConn is empty where batched system calls are not available.
type sysConn struct{}

func newSysConn(*net.UDPConn) (sysConn, error) { return sysConn{}, nil }

// newReader reads one datagram per system call: recvmmsg and sendmmsg are
// Linux calls.
func (e *Endpoint) newReader() reader { return newSingleReader(e) }

// combiner is absent without sendmmsg: every Send sends its own datagrams.
type combiner struct{}

func newCombiner(*Endpoint) *combiner { return nil }

func (*combiner) send(netip.AddrPort, []byte) bool { return false }

func (*combiner) sendMany([]netip.AddrPort, [][]byte) int { return 0 }

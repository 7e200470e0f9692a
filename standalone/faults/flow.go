package faults

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Proto is a transport protocol.
type Proto uint8

// Protocols.
const (
	UDP Proto = unix.IPPROTO_UDP
	TCP Proto = unix.IPPROTO_TCP
)

func (p Proto) String() string {
	switch p {
	case UDP:
		return "udp"
	case TCP:
		return "tcp"
	default:
		return "proto-" + strconv.Itoa(int(p))
	}
}

// Ports selects ports: the listed ones, or with Except every port but the
// listed ones. The zero value selects every port.
type Ports struct {
	List   []uint16
	Except bool
}

// Port selects one port.
func Port(p uint16) Ports { return Ports{List: []uint16{p}} }

// AnyPort selects every port.
func AnyPort() Ports { return Ports{} }

// PortsExcept selects every port but ps.
func PortsExcept(ps ...uint16) Ports { return Ports{List: ps, Except: true} }

// any reports whether ps selects every port.
func (ps Ports) any() bool { return len(ps.List) == 0 && !ps.Except }

// Contains reports whether ps selects port p.
func (ps Ports) Contains(p uint16) bool { return slices.Contains(ps.List, p) != ps.Except }

func (ps Ports) String() string {
	if ps.any() {
		return "*"
	}
	s := make([]string, len(ps.List))
	for i, p := range ps.List {
		s[i] = strconv.Itoa(int(p))
	}
	if ps.Except {
		return "!{" + strings.Join(s, ",") + "}"
	}
	if len(s) == 1 {
		return s[0]
	}
	return "{" + strings.Join(s, ",") + "}"
}

// Flow is the packets of one protocol from the Src ports to the Dst ports
// (on the namespace's loopback every process has its own ports).
type Flow struct {
	Proto    Proto
	Src, Dst Ports
}

// Reverse is the flow of the replies.
func (f Flow) Reverse() Flow { return Flow{Proto: f.Proto, Src: f.Dst, Dst: f.Src} }

func (f Flow) String() string { return fmt.Sprintf("%s %s->%s", f.Proto, f.Src, f.Dst) }

// Both is f and its reverse.
func Both(f Flow) []Flow { return []Flow{f, f.Reverse()} }

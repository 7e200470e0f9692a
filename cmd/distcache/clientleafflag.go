package main

import (
	"fmt"
	"net/netip"

	"github.com/spf13/pflag"
)

// clientLeafHelp is the help of every command's --client-leaf.
const clientLeafHelp = "IP:PORT: the dataAddress of the client-leaf switch in front of this host: GETs of keys of at most 32 bytes go to its read port " +
	"of the key's shard (PORT + 1 + shard), and the leaf sends each to the less loaded of the key's spine and storage-leaf switches; " +
	"when it does not answer, reads go on without it (docs/switches.md, The client leaf)"

// addrPortValue is a flag holding an IPv4 address and port (none when
// unset).
type addrPortValue struct{ p *netip.AddrPort }

var _ pflag.Value = addrPortValue{}

func (v addrPortValue) String() string {
	if v.p == nil || !v.p.IsValid() {
		return ""
	}
	return v.p.String()
}

func (v addrPortValue) Set(s string) error {
	a, err := netip.ParseAddrPort(s)
	if err != nil || !a.Addr().Is4() {
		return fmt.Errorf("%q is not an IPv4 address and port", s)
	}
	*v.p = a
	return nil
}

func (addrPortValue) Type() string { return "ip:port" }

// Package freeport hands out free TCP and UDP ports on a host, for
// processes started on it (standalone mode's cluster, the twemproxy
// baseline, benchmarks and tests).
//
// The ports come from outside the kernel's range of ephemeral ports
// (net.ipv4.ip_local_port_range) when there is room: a port of that range
// may become the local port of any outgoing connection between its choice
// and the bind of the process meant for it, and that connection then holds
// it for as long as it lives (a process restarted on it fails every time).
// Outside the range only a program that binds ports itself can take one.
package freeport

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Ports returns tcp distinct free TCP ports and udp distinct free UDP
// ports on host, found by binding them. All sockets stay open until every
// port is chosen, so no port is handed out twice; another program may still
// take one before the process meant for it binds it.
func Ports(host string, tcp, udp int) (tcpPorts, udpPorts []int, err error) {
	w := window(ephemeralRange())
	var open []interface{ Close() error }
	defer func() {
		for _, c := range open {
			_ = c.Close()
		}
	}()
	for _, want := range []struct {
		network string
		n       int
		ports   *[]int
	}{{"tcp", tcp, &tcpPorts}, {"udp", udp, &udpPorts}} {
		for range want.n {
			c, port, err := bind(host, want.network, w, w.lo+rand.IntN(w.size()))
			if err != nil {
				return nil, nil, err
			}
			open = append(open, c)
			*want.ports = append(*want.ports, port)
		}
	}
	return tcpPorts, udpPorts, nil
}

// Block returns the first of n consecutive ports of network ("tcp" or
// "udp") on host that were all free just now, for a process that binds a
// range of ports from a base (a software switch's data ports).
func Block(host, network string, n int) (int, error) {
	w := window(ephemeralRange())
	if w == (portRange{}) {
		w = portRange{minPort, 65535}
	}
	blocks := (w.hi - w.lo + 1) / n
	first := rand.IntN(blocks)
	for i := range min(blocks, 256) {
		base := w.lo + (first+i)%blocks*n
		var open []interface{ Close() error }
		for port := base; port < base+n; port++ {
			c, _, err := bind(host, network, portRange{port, port}, port)
			if err != nil {
				break
			}
			open = append(open, c)
		}
		for _, c := range open {
			_ = c.Close()
		}
		if len(open) == n {
			return base, nil
		}
	}
	return 0, fmt.Errorf("cannot find %d consecutive free %s ports on %s between %d and %d", n, strings.ToUpper(network), host, w.lo, w.hi)
}

// portRange is the ports lo to hi, both included; the zero value stands
// for "any port the kernel chooses" (port 0).
type portRange struct{ lo, hi int }

func (r portRange) size() int { return max(r.hi-r.lo+1, 1) }

// minPort is the lowest port handed out: many hosts run services of their
// own on lower ones.
const minPort = 10000

// minWindow is the fewest ports worth choosing among; with less room the
// kernel chooses.
const minWindow = 1000

// ephemeralRange is the kernel's range of ports for outgoing connections
// (Linux's default when it cannot be read).
func ephemeralRange() portRange {
	def := portRange{32768, 60999}
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return def
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return def
	}
	lo, err1 := strconv.Atoi(f[0])
	hi, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || lo > hi {
		return def
	}
	return portRange{lo, hi}
}

// window is the larger span of ports outside the ephemeral range eph, from
// minPort up, or the zero range when neither span has minWindow ports.
func window(eph portRange) portRange {
	below, above := portRange{minPort, eph.lo - 1}, portRange{eph.hi + 1, 65535}
	best := below
	if above.hi-above.lo > below.hi-below.lo {
		best = above
	}
	if best.hi-best.lo+1 < minWindow {
		return portRange{}
	}
	return best
}

// bind binds a free port of w on host, trying the ports from start
// on (wrapping around), and returns the open socket and its port.
func bind(host, network string, w portRange, start int) (interface{ Close() error }, int, error) {
	var lc net.ListenConfig
	var last error
	for i := range min(w.size(), 4096) {
		port := 0
		if w != (portRange{}) {
			port = w.lo + (start-w.lo+i)%w.size()
		}
		addr := net.JoinHostPort(host, strconv.Itoa(port))
		if network == "tcp" {
			l, err := lc.Listen(context.Background(), network, addr)
			if err == nil {
				return l, l.Addr().(*net.TCPAddr).Port, nil
			}
			last = err
		} else {
			c, err := lc.ListenPacket(context.Background(), network, addr)
			if err == nil {
				return c, c.LocalAddr().(*net.UDPAddr).Port, nil
			}
			last = err
		}
		if !errors.Is(last, syscall.EADDRINUSE) && !errors.Is(last, syscall.EACCES) {
			break // not a taken port: the host itself is wrong
		}
	}
	return nil, 0, fmt.Errorf("cannot find a free %s port on %s between %d and %d: %w", strings.ToUpper(network), host, w.lo, w.hi, last)
}

// Package freeport hands out free TCP and UDP ports on a host, for
// processes started on it (standalone mode's cluster, the twemproxy
// baseline, benchmarks and tests).
package freeport

import (
	"context"
	"fmt"
	"net"
)

// Ports returns tcp distinct free TCP ports and udp distinct free UDP
// ports on host, found by binding port 0. All sockets stay open until every
// port is chosen, so no port is handed out twice; another program may still
// take one before the process meant for it binds it.
func Ports(host string, tcp, udp int) (tcpPorts, udpPorts []int, err error) {
	var lc net.ListenConfig
	var open []interface{ Close() error }
	defer func() {
		for _, c := range open {
			_ = c.Close()
		}
	}()
	for range tcp {
		l, err := lc.Listen(context.Background(), "tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			return nil, nil, fmt.Errorf("cannot find a free TCP port on %s: %w", host, err)
		}
		open = append(open, l)
		tcpPorts = append(tcpPorts, l.Addr().(*net.TCPAddr).Port)
	}
	for range udp {
		c, err := lc.ListenPacket(context.Background(), "udp", net.JoinHostPort(host, "0"))
		if err != nil {
			return nil, nil, fmt.Errorf("cannot find a free UDP port on %s: %w", host, err)
		}
		open = append(open, c)
		udpPorts = append(udpPorts, c.LocalAddr().(*net.UDPAddr).Port)
	}
	return tcpPorts, udpPorts, nil
}

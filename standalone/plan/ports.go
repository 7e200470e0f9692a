package plan

import (
	"context"
	"fmt"
	"net"
	"strconv"
)

// FreePorts returns tcp distinct free TCP ports and udp distinct free UDP
// ports on host, found by binding port 0. All sockets stay open until every
// port is chosen, so no port is handed out twice; another program may still
// take one before the process meant for it binds it.
func FreePorts(host string, tcp, udp int) (tcpPorts, udpPorts []int, err error) {
	var lc net.ListenConfig
	var open []interface{ Close() error }
	defer func() {
		for _, c := range open {
			_ = c.Close()
		}
	}()
	for range tcp {
		l, err := lc.Listen(context.Background(), "tcp", hostPort(host, 0))
		if err != nil {
			return nil, nil, fmt.Errorf("cannot find a free TCP port on %s: %w", host, err)
		}
		open = append(open, l)
		tcpPorts = append(tcpPorts, l.Addr().(*net.TCPAddr).Port)
	}
	for range udp {
		c, err := lc.ListenPacket(context.Background(), "udp", hostPort(host, 0))
		if err != nil {
			return nil, nil, fmt.Errorf("cannot find a free UDP port on %s: %w", host, err)
		}
		open = append(open, c)
		udpPorts = append(udpPorts, c.LocalAddr().(*net.UDPAddr).Port)
	}
	return tcpPorts, udpPorts, nil
}

func hostPort(host string, port int) string { return net.JoinHostPort(host, strconv.Itoa(port)) }

// splitPort returns the host and port of a host:port address (port 0 if
// it has none).
func splitPort(addr string) (string, int) {
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		return addr, 0
	}
	n, _ := strconv.Atoi(p)
	return h, n
}

package plan

import (
	"net"
	"strconv"
)

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

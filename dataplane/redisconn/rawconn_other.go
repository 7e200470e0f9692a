//go:build !linux

package redisconn

import (
	"context"
	"net"
)

// Dial connects to a Redis server; elsewhere than on Linux it is a plain
// net.Dialer's connection.
func Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}

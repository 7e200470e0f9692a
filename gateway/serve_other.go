//go:build !linux

package gateway

import "net"

// serveLoops reports false: event loops are Linux's; a goroutine serves
// each connection elsewhere.
func (s *Server) serveLoops(net.Listener) (bool, error) { return false, nil }

// EventLoops reports false: event loops are Linux's.
func EventLoops(Config) bool { return false }

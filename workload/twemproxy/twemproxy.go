// Package twemproxy runs twemproxy (nutcracker), the sharding Redis proxy,
// in front of a cluster's Redis servers: the baseline `distcache bench`
// compares the Redis-compatible gateway with (mode twemproxy). Twemproxy
// spreads keys over its servers by consistent hashing (ketama over 64-bit
// FNV-1a here) and caches nothing, so a skewed workload's hottest keys all
// load the one server each hashes to: the imbalance DistCache's cache
// layers exist to remove (DistCache paper, §2).
package twemproxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/distcache/distcache/internal/freeport"
)

// Binary is nutcracker's name on PATH (Debian package nutcracker), and
// debianPath where Debian installs it, outside a user's PATH.
const (
	Binary     = "nutcracker"
	debianPath = "/usr/sbin/nutcracker"
)

// startTimeout bounds how long Start waits for the proxy to listen.
const startTimeout = 10 * time.Second

// Config configures a proxy.
type Config struct {
	// Binary is the nutcracker executable (default: Binary on PATH).
	Binary string
	// Servers are the Redis servers' host:port addresses, in shard order.
	Servers []string
	// Dir receives the configuration file and the log (required).
	Dir string
}

// Proxy is a running nutcracker process that this package started.
type Proxy struct {
	cmd  *exec.Cmd
	addr string
	done chan error // the process's exit, once
}

// Start writes the configuration, starts nutcracker on a free loopback port
// and waits until it accepts connections.
func Start(ctx context.Context, cfg Config) (*Proxy, error) {
	bin := cfg.Binary
	if bin == "" {
		var err error
		if bin, err = Find(); err != nil {
			return nil, err
		}
	}
	if len(cfg.Servers) == 0 {
		return nil, errors.New("cannot run twemproxy: no Redis servers")
	}
	// Two ports free at once: the proxy's and its stats port.
	ports, _, err := freeport.Ports("127.0.0.1", 2, 0)
	if err != nil {
		return nil, fmt.Errorf("cannot run twemproxy: %w", err)
	}
	addr, statsPort := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0])), strconv.Itoa(ports[1])
	conf := filepath.Join(cfg.Dir, "nutcracker.yml")
	if err := os.WriteFile(conf, []byte(Render(addr, cfg.Servers)), 0o644); err != nil {
		return nil, fmt.Errorf("cannot write twemproxy's configuration: %w", err)
	}
	// The proxy outlives Start's ctx, which bounds only the start: Stop
	// ends it.
	cmd := exec.CommandContext(context.WithoutCancel(ctx), bin, "--conf-file", conf, "--output", filepath.Join(cfg.Dir, "nutcracker.log"),
		"--stats-addr", "127.0.0.1", "--stats-port", statsPort)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("cannot start twemproxy: %w", err)
	}
	p := &Proxy{cmd: cmd, addr: addr, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait() }()
	if err := p.waitListening(ctx); err != nil {
		_ = p.Stop()
		return nil, err
	}
	return p, nil
}

// Find returns the nutcracker executable: Binary on PATH, else Debian's.
func Find() (string, error) {
	path, err := exec.LookPath(Binary)
	if err == nil {
		return path, nil
	}
	if _, serr := os.Stat(debianPath); serr == nil {
		return debianPath, nil
	}
	return "", fmt.Errorf("cannot run twemproxy: %w (install the Debian package nutcracker: make nutcracker)", err)
}

// Render is nutcracker's YAML configuration of one pool listening on addr
// in front of servers (named s0, s1, ... so that the ring does not depend
// on their ports).
func Render(addr string, servers []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "distcache:\n  listen: %s\n  hash: fnv1a_64\n  distribution: ketama\n  redis: true\n", addr)
	b.WriteString("  auto_eject_hosts: false\n  timeout: 2000\n  server_connections: 1\n  servers:\n")
	for i, s := range servers {
		fmt.Fprintf(&b, "    - %s:1 s%d\n", s, i)
	}
	return b.String()
}

// Addr is the proxy's Redis address.
func (p *Proxy) Addr() string { return p.addr }

// PID is the proxy's process id.
func (p *Proxy) PID() int { return p.cmd.Process.Pid }

// Stop ends the proxy (SIGTERM, SIGKILL if it lingers) and waits for it.
func (p *Proxy) Stop() error {
	_ = p.cmd.Process.Signal(os.Interrupt)
	t := time.NewTimer(5 * time.Second)
	defer t.Stop()
	select {
	case <-p.done:
		return nil
	case <-t.C:
		_ = p.cmd.Process.Kill()
		<-p.done
		return nil
	}
}

// waitListening polls the proxy's port until it accepts a connection, the
// process exits or startTimeout passes.
func (p *Proxy) waitListening(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		var d net.Dialer
		if c, err := d.DialContext(ctx, "tcp", p.addr); err == nil {
			return c.Close()
		}
		select {
		case err := <-p.done:
			p.done <- err
			return fmt.Errorf("cannot start twemproxy: it exited, see its log: %w", err)
		case <-ctx.Done():
			return fmt.Errorf("cannot start twemproxy: not listening on %s: %w", p.addr, ctx.Err())
		case <-tick.C:
		}
	}
}

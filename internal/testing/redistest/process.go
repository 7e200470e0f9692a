package redistest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/distcache/distcache/internal/freeport"
)

const (
	readyTimeout = 10 * time.Second       // how long redis-server may take to answer PING
	firstBackoff = 5 * time.Millisecond   // wait after the first failed PING
	maxBackoff   = 100 * time.Millisecond // longest wait between PINGs
	logTail      = 2048                   // bytes of redis-server output shown on failure
)

// errAddrInUse reports that redis-server could not bind its port.
var errAddrInUse = errors.New("address already in use")

// proc is one redis-server process.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once the process has been waited for
	err  error         // the result of Wait, set before done is closed
}

// kill kills the process group with SIGKILL and waits for the process.
func (p *proc) kill() {
	select {
	case <-p.done: // already exited and reaped: its pid may be reused
	default:
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	}
	<-p.done
}

// launch starts redis-server on s.addr and waits until it answers PING. On
// failure the process is gone and the error holds the tail of its output.
func (s *Server) launch() error {
	log, err := os.OpenFile(s.logPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("cannot open redis-server log: %w", err)
	}
	defer log.Close()
	off, err := log.Seek(0, io.SeekEnd)
	if err != nil {
		return fmt.Errorf("cannot open redis-server log: %w", err)
	}
	args := s.args()
	fmt.Fprintf(log, "--- redistest: %s %q\n", s.bin, args)

	// The process outlives launch and is ended by proc.kill (SIGKILL to its
	// process group, as Stop promises), not by a context: Background keeps
	// exec from killing it behind Stop's back.
	cmd := exec.CommandContext(context.Background(), s.bin, args...)
	cmd.Dir = s.dir
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("cannot start redis-server: %w", err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() { p.err = cmd.Wait(); close(p.done) }()

	if err := waitReady(s.addr, p, s.cfg); err != nil {
		p.kill()
		out := s.output(off)
		if strings.Contains(out, "Address already in use") {
			err = fmt.Errorf("%w: %w", errAddrInUse, err)
		}
		return fmt.Errorf("cannot start redis-server on %s: %w\nredis-server output (%s):\n%s",
			s.addr, err, s.logPath(), tail(out))
	}
	s.mu.Lock()
	s.p = p
	s.mu.Unlock()
	return nil
}

// waitReady polls addr until p answers PING, p exits, or readyTimeout passes.
func waitReady(addr string, p *proc, cfg config) error {
	deadline := time.Now().Add(readyTimeout)
	backoff := firstBackoff
	for attempt := 1; ; attempt++ {
		err := probe(addr, p.cmd.Process.Pid, cfg)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no PONG after %d attempts in %v: %w", attempt, readyTimeout, err)
		}
		timer := time.NewTimer(backoff)
		select {
		case <-p.done:
			timer.Stop()
			return fmt.Errorf("redis-server exited before answering PING: %w", p.err)
		case <-timer.C:
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// output returns what redis-server wrote to its log from offset off on.
func (s *Server) output(off int64) string {
	b, err := os.ReadFile(s.logPath())
	if err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	if off > int64(len(b)) {
		off = 0
	}
	return string(bytes.TrimSpace(b[off:]))
}

// tail returns the last logTail bytes of s.
func tail(s string) string {
	if len(s) <= logTail {
		return s
	}
	return "…" + s[len(s)-logTail:]
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	ports, _, err := freeport.Ports("127.0.0.1", 1, 0)
	if err != nil {
		return 0, fmt.Errorf("cannot pick a free port: %w", err)
	}
	return ports[0], nil
}

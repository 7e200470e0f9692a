package redistest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// probeTimeout bounds one readiness probe.
const probeTimeout = time.Second

// probe sends PING and INFO server to addr in raw RESP and checks that the
// answer is +PONG from the process pid, not from another server that took the
// port.
func probe(addr string, pid int) error {
	d := net.Dialer{Timeout: probeTimeout}
	conn, err := d.DialContext(context.Background(), "tcp", addr)
	if err != nil {
		return fmt.Errorf("cannot connect: %w", err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(probeTimeout)); err != nil {
		return fmt.Errorf("cannot set deadline: %w", err)
	}
	const req = "*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n"
	if _, err := io.WriteString(conn, req); err != nil {
		return fmt.Errorf("cannot send PING: %w", err)
	}
	r := bufio.NewReader(conn)
	line, err := r.ReadString('\n')
	if err != nil {
		return fmt.Errorf("cannot read PING reply: %w", err)
	}
	if line != "+PONG\r\n" {
		return fmt.Errorf("PING replied %q", strings.TrimSpace(line))
	}
	line, err = r.ReadString('\n')
	if err != nil {
		return fmt.Errorf("cannot read INFO reply: %w", err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "$")))
	if !strings.HasPrefix(line, "$") || err != nil || n < 0 {
		return fmt.Errorf("INFO replied %q", strings.TrimSpace(line))
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return fmt.Errorf("cannot read INFO reply: %w", err)
	}
	if !strings.Contains(string(body), "\r\nprocess_id:"+strconv.Itoa(pid)+"\r\n") {
		return fmt.Errorf("another server than pid %d answers on %s", pid, addr)
	}
	return nil
}

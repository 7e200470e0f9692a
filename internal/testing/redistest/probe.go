package redistest

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

// probeTimeout bounds one readiness probe.
const probeTimeout = time.Second

// probe sends PING and INFO server to addr in raw RESP and checks that the
// answer is +PONG from the process pid, not from another server that took the
// port.
func probe(addr string, pid int, cfg config) error {
	conn, err := dial(addr, cfg.tls)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(probeTimeout)); err != nil {
		return fmt.Errorf("cannot set deadline: %w", err)
	}
	req := "*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n"
	if cfg.pass != "" {
		req = command("AUTH", cfg.user, cfg.pass) + req
	}
	if _, err := io.WriteString(conn, req); err != nil {
		return fmt.Errorf("cannot send PING: %w", err)
	}
	r := bufio.NewReader(conn)
	if cfg.pass != "" {
		line, err := r.ReadString('\n')
		if err != nil {
			return fmt.Errorf("cannot read AUTH reply: %w", err)
		}
		if line != "+OK\r\n" {
			return fmt.Errorf("AUTH replied %q", strings.TrimSpace(line))
		}
	}
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

// dial connects to addr, with TLS verified against files.CA when files is
// set.
func dial(addr string, files *TLSFiles) (net.Conn, error) {
	d := &net.Dialer{Timeout: probeTimeout}
	if files == nil {
		conn, err := d.DialContext(context.Background(), "tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("cannot connect: %w", err)
		}
		return conn, nil
	}
	ca, err := os.ReadFile(files.CA)
	if err != nil {
		return nil, fmt.Errorf("cannot read CA: %w", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("no certificate in %s", files.CA)
	}
	td := &tls.Dialer{NetDialer: d, Config: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}
	conn, err := td.DialContext(context.Background(), "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("cannot connect with TLS: %w", err)
	}
	return conn, nil
}

// command encodes a command's non-empty arguments in RESP.
func command(args ...string) string {
	var b strings.Builder
	n := 0
	for _, a := range args {
		if a != "" {
			n++
		}
	}
	fmt.Fprintf(&b, "*%d\r\n", n)
	for _, a := range args {
		if a != "" {
			fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
		}
	}
	return b.String()
}

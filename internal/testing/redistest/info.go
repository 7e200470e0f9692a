package redistest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// errNoAppendOnly reports a server that keeps no append-only file.
var errNoAppendOnly = errors.New("append-only file is off")

// AppendOnlyWritten reports whether the redis-server at addr has written
// every write it executed to its append-only file, that is handed it to
// the kernel (INFO persistence: aof_buffer_length:0). With appendfsync
// everysec Redis normally writes before it replies, but postpones the write
// (up to two seconds, replying all the same) while a background fsync is
// still running; until it has written, a crash of the process loses those
// writes. It is an error if the server has no append-only file.
func AppendOnlyWritten(addr string) (bool, error) {
	fields, err := info(addr, "persistence")
	if err != nil {
		return false, err
	}
	if fields["aof_enabled"] != "1" {
		return false, fmt.Errorf("redis-server on %s: %w", addr, errNoAppendOnly)
	}
	n, err := strconv.Atoi(fields["aof_buffer_length"])
	if err != nil {
		return false, fmt.Errorf("redis-server on %s: cannot read aof_buffer_length %q: %w", addr, fields["aof_buffer_length"], err)
	}
	return n == 0, nil
}

// info sends INFO section to addr in raw RESP and returns its fields.
func info(addr, section string) (map[string]string, error) {
	d := net.Dialer{Timeout: probeTimeout}
	conn, err := d.DialContext(context.Background(), "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("cannot connect to %s: %w", addr, err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(probeTimeout)); err != nil {
		return nil, fmt.Errorf("cannot set deadline: %w", err)
	}
	req := fmt.Sprintf("*2\r\n$4\r\nINFO\r\n$%d\r\n%s\r\n", len(section), section)
	if _, err := io.WriteString(conn, req); err != nil {
		return nil, fmt.Errorf("cannot send INFO: %w", err)
	}
	r := bufio.NewReader(conn)
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, fmt.Errorf("cannot read INFO reply: %w", err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "$")))
	if !strings.HasPrefix(line, "$") || err != nil || n < 0 {
		return nil, fmt.Errorf("INFO replied %q", strings.TrimSpace(line))
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, fmt.Errorf("cannot read INFO reply: %w", err)
	}
	fields := map[string]string{}
	for l := range strings.SplitSeq(string(body), "\r\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && !strings.HasPrefix(l, "#") {
			fields[k] = v
		}
	}
	return fields, nil
}

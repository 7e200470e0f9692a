package snapshot

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/distcache/distcache/dataplane/redispipe"
)

// Source is how to reach one shard's Redis.
type Source struct {
	// Addr is host:port.
	Addr string
	// Dial, when set, connects: it does TLS and logs in itself
	// (redisconn.Settings' dialer, which also tries a previous password).
	// Unset: a plain TCP connection, no login.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// IdleTimeout bounds each wait for data from Redis (default 2m):
	// Redis sends a newline every second while it prepares the RDB.
	IdleTimeout time.Duration
}

// eofMarkSize is the length of the EOF mark of a diskless transfer
// ($EOF:<mark>), after which no more RDB bytes come.
const eofMarkSize = 40

// fetched is one shard's RDB as written to disk.
type fetched struct {
	Size         int64
	SHA256       string
	RedisVersion string
	// RDBOnly reports that Redis accepted REPLCONF rdb-only (Redis 7.0
	// and later): it sent the RDB and no replication stream after it.
	RDBOnly bool
}

// conn is a RESP connection that can also read the raw RDB payload.
type conn struct {
	c    net.Conn
	r    *bufio.Reader
	idle time.Duration
}

func dial(ctx context.Context, src Source) (*conn, error) {
	d := src.Dial
	if d == nil {
		d = (&net.Dialer{Timeout: 10 * time.Second}).DialContext
	}
	nc, err := d(ctx, "tcp", src.Addr)
	if err != nil {
		return nil, fmt.Errorf("cannot connect to %s: %w", src.Addr, err)
	}
	idle := src.IdleTimeout
	if idle <= 0 {
		idle = 2 * time.Minute
	}
	return &conn{c: nc, r: bufio.NewReaderSize(nc, 64<<10), idle: idle}, nil
}

// line reads one line without its CRLF.
func (c *conn) line() (string, error) {
	if err := c.c.SetReadDeadline(time.Now().Add(c.idle)); err != nil {
		return "", fmt.Errorf("cannot set a deadline: %w", err)
	}
	s, err := c.r.ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("cannot read from Redis: %w", err)
	}
	return strings.TrimRight(s, "\r\n"), nil
}

// redisError is an error reply.
type redisError string

func (e redisError) Error() string { return string(e) }

// do sends a command and reads a simple, error or bulk string reply.
func (c *conn) do(args ...string) (string, error) {
	if err := c.c.SetWriteDeadline(time.Now().Add(c.idle)); err != nil {
		return "", fmt.Errorf("cannot set a deadline: %w", err)
	}
	cmd := make([][]byte, len(args))
	for i, a := range args {
		cmd[i] = []byte(a)
	}
	if _, err := c.c.Write(redispipe.AppendCommand(nil, cmd...)); err != nil {
		return "", fmt.Errorf("cannot send %s: %w", args[0], err)
	}
	l, err := c.line()
	if err != nil {
		return "", err
	}
	switch {
	case strings.HasPrefix(l, "-"):
		return "", redisError(l[1:])
	case strings.HasPrefix(l, "+"), strings.HasPrefix(l, ":"):
		return l[1:], nil
	case strings.HasPrefix(l, "$"):
		n, err := strconv.Atoi(l[1:])
		if err != nil {
			return "", fmt.Errorf("cannot read the reply to %s: bad length %q", args[0], l)
		}
		if n < 0 {
			return "", nil
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(c.r, b); err != nil {
			return "", fmt.Errorf("cannot read the reply to %s: %w", args[0], err)
		}
		return string(b[:n]), nil
	}
	return "", fmt.Errorf("cannot read the reply to %s: unexpected %q", args[0], l)
}

// infoField is field of an INFO reply.
func infoField(info, field string) string {
	for l := range strings.SplitSeq(info, "\r\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			return v
		}
	}
	return ""
}

// fetchRDB copies the RDB of the Redis at src into path, as a replica's
// full synchronisation receives it, and returns its size and SHA-256. It
// does not verify the RDB.
func fetchRDB(ctx context.Context, src Source, path string) (fetched, error) {
	var out fetched
	c, err := dial(ctx, src)
	if err != nil {
		return out, err
	}
	defer c.c.Close()
	stop := context.AfterFunc(ctx, func() { c.c.Close() })
	defer stop()
	info, err := c.do("INFO", "server")
	if err != nil {
		return out, fmt.Errorf("cannot read INFO server of %s: %w", src.Addr, err)
	}
	out.RedisVersion = infoField(info, "redis_version")
	// As redis-cli --rdb: both are optional, an older Redis refuses them.
	var rerr redisError
	if _, err := c.do("REPLCONF", "capa", "eof"); err != nil && !errors.As(err, &rerr) {
		return out, err
	}
	if _, err := c.do("REPLCONF", "rdb-only", "1"); err == nil {
		out.RDBOnly = true
	} else if !errors.As(err, &rerr) {
		return out, err
	}
	if _, err := c.c.Write([]byte("SYNC\r\n")); err != nil {
		return out, fmt.Errorf("cannot send SYNC to %s: %w", src.Addr, err)
	}
	size, mark, err := c.syncHeader()
	if err != nil {
		return out, fmt.Errorf("cannot start SYNC with %s: %w", src.Addr, err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return out, fmt.Errorf("cannot create %s: %w", path, err)
	}
	defer f.Close()
	h := sha256.New()
	w := io.MultiWriter(f, h)
	if mark == nil {
		out.Size, err = c.copyN(w, size)
	} else {
		out.Size, err = c.copyUntil(w, mark)
	}
	if err != nil {
		return out, fmt.Errorf("cannot read the RDB of %s: %w", src.Addr, err)
	}
	if err := f.Sync(); err != nil {
		return out, fmt.Errorf("cannot write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return out, fmt.Errorf("cannot write %s: %w", path, err)
	}
	out.SHA256 = hex.EncodeToString(h.Sum(nil))
	return out, nil
}

// syncHeader reads the reply to SYNC up to the payload: newlines Redis
// sends while it prepares the RDB, then $<size> or $EOF:<mark> (after
// +FULLRESYNC when Redis answers as to PSYNC).
func (c *conn) syncHeader() (size int64, mark []byte, err error) {
	for {
		l, err := c.line()
		if err != nil {
			return 0, nil, err
		}
		switch {
		case l == "":
			continue // a keepalive newline
		case strings.HasPrefix(l, "-"):
			return 0, nil, redisError(l[1:])
		case strings.HasPrefix(l, "+FULLRESYNC"):
			continue
		case strings.HasPrefix(l, "$EOF:") && len(l) >= 5+eofMarkSize:
			return 0, []byte(l[5 : 5+eofMarkSize]), nil
		case strings.HasPrefix(l, "$"):
			n, err := strconv.ParseInt(l[1:], 10, 64)
			if err != nil || n < 0 {
				return 0, nil, fmt.Errorf("bad payload length %q", l)
			}
			return n, nil, nil
		default:
			return 0, nil, fmt.Errorf("unexpected reply %q", l)
		}
	}
}

// copyN copies n payload bytes to w.
func (c *conn) copyN(w io.Writer, n int64) (int64, error) {
	var done int64
	buf := make([]byte, 64<<10)
	for done < n {
		if err := c.c.SetReadDeadline(time.Now().Add(c.idle)); err != nil {
			return done, fmt.Errorf("cannot set a deadline: %w", err)
		}
		k, err := c.r.Read(buf[:min(int64(len(buf)), n-done)])
		if _, werr := w.Write(buf[:k]); werr != nil {
			return done, fmt.Errorf("cannot write the RDB: %w", werr)
		}
		done += int64(k)
		if err != nil && done < n {
			return done, fmt.Errorf("transfer ended after %d of %d bytes: %w", done, n, err)
		}
	}
	return done, nil
}

// copyUntil copies the payload of a diskless transfer to w: everything
// before mark. Bytes that follow the mark (a replication stream) are left.
func (c *conn) copyUntil(w io.Writer, mark []byte) (int64, error) {
	var done int64
	pending := make([]byte, 0, 128<<10)
	buf := make([]byte, 64<<10)
	for {
		if err := c.c.SetReadDeadline(time.Now().Add(c.idle)); err != nil {
			return done, fmt.Errorf("cannot set a deadline: %w", err)
		}
		k, err := c.r.Read(buf)
		pending = append(pending, buf[:k]...)
		if i := bytes.Index(pending, mark); i >= 0 {
			if _, werr := w.Write(pending[:i]); werr != nil {
				return done, fmt.Errorf("cannot write the RDB: %w", werr)
			}
			return done + int64(i), nil
		}
		if keep := len(pending) - (len(mark) - 1); keep > 0 {
			if _, werr := w.Write(pending[:keep]); werr != nil {
				return done, fmt.Errorf("cannot write the RDB: %w", werr)
			}
			done += int64(keep)
			pending = append(pending[:0], pending[keep:]...)
		}
		if err != nil {
			return done, fmt.Errorf("transfer ended after %d bytes without the EOF mark: %w", done, err)
		}
	}
}

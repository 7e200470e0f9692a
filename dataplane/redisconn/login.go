package redisconn

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/distcache/distcache/dataplane/redispipe"
)

// loginTimeout bounds the TLS handshake and AUTH of a new connection when
// the dial's context has no sooner deadline.
const loginTimeout = 5 * time.Second

// ErrWrongPass is wrapped when Redis refuses every password the files
// hold.
var ErrWrongPass = errors.New("WRONGPASS")

// dial connects to addr as the settings say: TCP (raw system calls
// without TLS, as Dial), TLS verified with the CA bundle read now, then
// AUTH with the password read now, and with the previous password when
// Redis refuses it with WRONGPASS. The go-redis client then finds the
// connection logged in.
func (s Settings) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var conn net.Conn
	var err error
	if s.TLS {
		conn, err = s.dialTLS(ctx, network, addr)
	} else {
		conn, err = Dial(ctx, network, addr)
	}
	if err != nil {
		return nil, err
	}
	if s.PasswordFile == "" {
		return conn, nil
	}
	if err := s.login(ctx, conn); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("cannot log in to Redis at %s: %w", addr, err)
	}
	return conn, nil
}

// dialTLS connects to addr with TLS and completes the handshake.
func (s Settings) dialTLS(ctx context.Context, network, addr string) (net.Conn, error) {
	cfg, err := s.tlsConfig()
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	raw, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	ctx, cancel := loginContext(ctx)
	defer cancel()
	conn := tls.Client(raw, cfg)
	if err := conn.HandshakeContext(ctx); err != nil {
		_ = raw.Close()
		return nil, fmt.Errorf("cannot complete TLS handshake with Redis at %s: %w", addr, err)
	}
	return conn, nil
}

// login sends AUTH on conn with the current password, then with the
// previous one if Redis refused the current one with WRONGPASS.
func (s Settings) login(ctx context.Context, conn net.Conn) error {
	current, previous, err := s.Passwords()
	if err != nil {
		return err
	}
	ctx, cancel := loginContext(ctx)
	defer cancel()
	deadline, _ := ctx.Deadline()
	if err := conn.SetDeadline(deadline); err != nil {
		return fmt.Errorf("cannot set a deadline: %w", err)
	}
	err = auth(conn, s.Username, current)
	if errors.Is(err, ErrWrongPass) && previous != "" && previous != current {
		err = auth(conn, s.Username, previous)
	}
	if err != nil {
		return err
	}
	if err := conn.SetDeadline(time.Time{}); err != nil {
		return fmt.Errorf("cannot clear the deadline: %w", err)
	}
	return nil
}

// AuthCommand is the AUTH command of the settings' login, with the
// password its file holds now (nil without a password), for connections
// that send it themselves (package redispipe). It has no fallback to the
// previous password: a refusal fails such a connection, and its commands
// take a path that dials with the settings.
func (s Settings) AuthCommand() ([][]byte, error) {
	current, _, err := s.Passwords()
	if err != nil || current == "" {
		return nil, err
	}
	if s.Username != "" {
		return [][]byte{[]byte("AUTH"), []byte(s.Username), []byte(current)}, nil
	}
	return [][]byte{[]byte("AUTH"), []byte(current)}, nil
}

// loginContext is ctx bounded by loginTimeout.
func loginContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, loginTimeout)
}

// auth sends AUTH [user] password in RESP and reads the reply. The error
// tells Redis's reply, never the password.
func auth(conn net.Conn, user, password string) error {
	args := [][]byte{[]byte("AUTH"), []byte(password)}
	if user != "" {
		args = [][]byte{[]byte("AUTH"), []byte(user), []byte(password)}
	}
	if _, err := conn.Write(redispipe.AppendCommand(nil, args...)); err != nil {
		return fmt.Errorf("cannot send AUTH: %w", err)
	}
	line, err := readLine(conn)
	if err != nil {
		return fmt.Errorf("cannot read the reply to AUTH: %w", err)
	}
	switch {
	case line == "+OK":
		return nil
	case strings.HasPrefix(line, "-WRONGPASS"):
		return fmt.Errorf("%w: %s", ErrWrongPass, strings.TrimPrefix(line, "-WRONGPASS "))
	default:
		return fmt.Errorf("AUTH replied %q", line)
	}
}

// maxReplyLine bounds the reply line login reads.
const maxReplyLine = 1024

// readLine reads one reply line, byte by byte so that nothing after it is
// consumed, without its CRLF.
func readLine(r io.Reader) (string, error) {
	var line []byte
	b := make([]byte, 1)
	for len(line) < maxReplyLine {
		if _, err := io.ReadFull(r, b); err != nil {
			return "", err
		}
		if b[0] == '\n' {
			return strings.TrimSuffix(string(line), "\r"), nil
		}
		line = append(line, b[0])
	}
	return "", fmt.Errorf("reply line longer than %d bytes", maxReplyLine)
}

package gateway_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/distcache/distcache/internal/testing/poll"
)

// refusals are inputs no command can come of, each with Redis' reply
// (networking.c) or, for a command that cannot fit in MaxCommandBytes
// (the default here), the gateway's. Each is the start of a stream a
// hostile client would go on sending (workload/malformed's streams).
var refusals = []struct {
	name, send, want string
}{
	{"bulk length over 512 MB", "*2\r\n$3\r\nSET\r\n$2000000000\r\n" + strings.Repeat("x", 1000),
		"-ERR Protocol error: invalid bulk length"},
	{"inline line over 64 KB", strings.Repeat("GET malformed:", 70_000/14),
		"-ERR Protocol error: too big inline request"},
	{"array count over 2^30", "*99999999999\r\n", "-ERR Protocol error: invalid multibulk length"},
	{"array longer than a command may be", "*1000000\r\n$3\r\nGET\r\n",
		"-ERR Protocol error: command larger than 1114112 bytes"},
	{"array count line over 64 KB", "*" + strings.Repeat("1", 70_000),
		"-ERR Protocol error: too big mbulk count string"},
	{"bulk length line over 64 KB", "*1\r\n$" + strings.Repeat("1", 70_000),
		"-ERR Protocol error: too big bulk count string"},
	{"element not a bulk string", "*2\r\n$3\r\nGET\r\n:5\r\n", "-ERR Protocol error: expected '$', got ':'"},
}

// TestRefusedAtOnce: for each input above the gateway answers its
// protocol error and closes the connection while the client keeps its
// side open and sends nothing more, so a gateway that waited for the
// rest of the command, for MaxCommandBytes of it or for the client's
// end would fail the test. Both ways of serving connections: event loops
// (where they exist) and a goroutine per connection. Every refusal is
// counted, and the gateway goes on serving.
func TestRefusedAtOnce(t *testing.T) {
	for _, mode := range []struct {
		name  string
		loops int
	}{{"event loops", 1}, {"goroutine per connection", -1}} {
		t.Run(mode.name, func(t *testing.T) {
			// CommandTimeout beyond the wait below: a refusal that waits
			// for it fails the test.
			addr, srv := startGateway(t, withLoops(mode.loops), withCommandTimeout(time.Hour))
			for _, tc := range refusals {
				t.Run(tc.name, func(t *testing.T) {
					r := dialRaw(t, addr)
					// A bound for a gateway that waits, not a synchronisation.
					_ = r.c.SetDeadline(time.Now().Add(30 * time.Second))
					if _, err := io.WriteString(r.c, tc.send); err != nil && !isReset(err) {
						t.Fatal(err) // a reset: refused before everything was sent
					}
					got, err := r.r.ReadString('\n')
					if err != nil {
						t.Fatalf("no reply: %v (read %q)", err, got)
					}
					if got = strings.TrimSuffix(got, "\r\n"); got != tc.want {
						t.Errorf("reply %q, want %q", got, tc.want)
					}
					if _, err := r.r.ReadByte(); err == nil || isTimeout(err) {
						t.Errorf("connection not closed after the reply: %v", err)
					}
				})
			}
			// A goroutine per connection counts a refusal once its
			// connection is closed, which the client may see first.
			poll.Eventually(t, "every refusal counted", func() (bool, error) {
				got := srv.Stats().ProtocolErrors
				return got == uint64(len(refusals)), fmt.Errorf("protocol errors counted: %d, want %d", got, len(refusals))
			})
			ok := dialRaw(t, addr)
			ok.send("PING\r\n")
			if got := ok.line(); got != "+PONG" {
				t.Errorf("a new connection after the refused ones: %q", got)
			}
		})
	}
}

// isReset says whether err is the gateway's reset of a connection it
// closed with input unread.
func isReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed)
}

package gateway_test

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/distcache/distcache/internal/testing/clustertest"
	"github.com/distcache/distcache/internal/testing/redistest"
)

var (
	differentialSeed  = flag.Uint64("differential.seed", 0, "seed of TestDifferential's commands (0: from the clock)")
	differentialCount = flag.Int("differential.commands", 5000, "commands TestDifferential sends")
)

// TestDifferential sends the same seeded random commands, of every kind
// the gateway answers, to the gateway of a fresh cluster and to a fresh
// redis-server, one at a time, over RESP2 and RESP3, through the shims and
// with direct reads and writes (the gateway runs commands at Redis itself),
// from the event loops' rounds and from a goroutine per connection, and compares the replies byte for byte,
// but for the differences testdata/differences.txt lists with why. Keys
// are few, so commands meet keys of every type: WRONGTYPE errors, missing
// keys, expiries and syntax errors are compared too. The seed is printed
// on failure; -differential.seed replays it.
func TestDifferential(t *testing.T) {
	rules := readDifferences(t)
	seed := *differentialSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("seed %d: go test ./gateway -run TestDifferential -differential.seed %d", seed, seed)
		}
	})
	ref := redistest.Start(t)
	for _, gw := range []struct {
		name   string
		direct bool
		loops  int
	}{
		{"through the shims", false, 0}, {"direct", true, 0}, {"direct, a goroutine per connection", true, -1},
	} {
		addr, _, _ := startGatewayOn(t, clustertest.Config{Name: "diff", Racks: 2, ShardsPerRack: 1, Spine: 2,
			DirectReads: gw.direct, DirectWrites: gw.direct, HashTags: true}, withLoops(gw.loops))
		for _, proto := range []int{2, 3} {
			t.Run(fmt.Sprintf("RESP%d %s", proto, gw.name), func(t *testing.T) {
				differential(t, addr, ref.Addr(), proto, seed+uint64(proto), gw.direct, rules)
			})
		}
		rs := dialRESP(t, ref.Addr())
		rs.do([]string{"flushall"}) // the next run starts from nothing on both sides
	}
}

// differential runs TestDifferential's commands over protocol proto, on
// keys of their own, and the commands on the whole keyspace if keyspace.
func differential(t *testing.T, addr, ref string, proto int, seed uint64, keyspace bool, rules map[string]string) {
	gw, rs := dialRESP(t, addr), dialRESP(t, ref)
	if proto == 3 {
		gw.do([]string{"hello", "3"})
		rs.do([]string{"hello", "3"})
	}
	g := newCommandGen(rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)))
	g.prefix = fmt.Sprintf("{dk%d}:", proto) // one hash tag: one shard
	if keyspace {
		g.withShardCommands(rules) // first: its transactions hold none of the keyspace's commands
		g.withKeyspace()
	}
	failures, kinds := 0, map[string]int{}
	defer func() { t.Logf("replies compared: %v", kinds) }()
	for i := range *differentialCount {
		args := g.next()
		want, got := rs.do(args), gw.do(args)
		kinds[replyKind(want)]++
		name := strings.ToLower(args[0])
		if w, g := normalise(rules[name], want), normalise(rules[name], got); !bytes.Equal(w, g) {
			t.Errorf("command %d %q:\n redis-server: %q\n gateway:      %q", i, args, want, got)
			if failures++; failures == 10 {
				t.Fatal("10 differences; stopping")
			}
		}
	}
}

// readDifferences reads testdata/differences.txt: command -> rule.
func readDifferences(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile("testdata/differences.txt")
	if err != nil {
		t.Fatal(err)
	}
	rules := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 || (f[1] != "unordered" && f[1] != "positive" && f[1] != "shape") {
			t.Fatalf("differences.txt: %q is not <command> unordered|positive|shape", line)
		}
		rules[f[0]] = f[1]
	}
	return rules
}

// normalise applies rule to reply.
func normalise(rule string, reply []byte) []byte {
	switch {
	case rule == "positive" && reply[0] == ':':
		if n, err := strconv.ParseInt(string(bytes.TrimSpace(reply[1:])), 10, 64); err == nil && n > 0 {
			return []byte(":positive")
		}
	case rule == "shape" && (reply[0] == '*' || reply[0] == '$'):
		return reply[:bytes.IndexByte(reply, '\n')+1] // the type and the length
	case rule == "unordered" && (reply[0] == '*' || reply[0] == '~'):
		lines := strings.SplitAfter(string(reply), "\r\n")
		var elems []string
		for i := 1; i+1 < len(lines); i += 2 { // an array of bulk strings: header, payload
			elems = append(elems, lines[i]+lines[i+1])
		}
		slices.Sort(elems)
		return []byte(lines[0] + strings.Join(elems, ""))
	}
	return reply
}

// respConn sends commands and reads their raw replies.
type respConn struct {
	t *testing.T
	c net.Conn
	r *bufio.Reader
}

func dialRESP(t *testing.T, addr string) *respConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(5 * time.Minute)) // a bound for a hang, not a synchronisation
	return &respConn{t: t, c: c, r: bufio.NewReader(c)}
}

// do sends args and returns the raw reply.
func (c *respConn) do(args []string) []byte {
	c.t.Helper()
	var b bytes.Buffer
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := c.c.Write(b.Bytes()); err != nil {
		c.t.Fatal(err)
	}
	var out bytes.Buffer
	if err := readReply(c.r, &out); err != nil {
		c.t.Fatalf("reading the reply to %q: %v", args, err)
	}
	return out.Bytes()
}

// readReply copies one RESP2 or RESP3 reply from r to out.
func readReply(r *bufio.Reader, out *bytes.Buffer) error {
	line, err := r.ReadString('\n')
	if err != nil {
		return err
	}
	out.WriteString(line)
	n, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
	switch line[0] {
	case '$', '=', '!': // bulk strings: RESP2's, RESP3's verbatim and error
		if n < 0 {
			return nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return err
		}
		out.Write(buf)
	case '*', '~', '>', '%', '|': // arrays, sets, pushes; maps and attributes of n pairs
		if line[0] == '%' || line[0] == '|' {
			n *= 2
		}
		for range max(n, 0) {
			if err := readReply(r, out); err != nil {
				return err
			}
		}
	}
	return nil
}

// replyKind classifies a reply for the test's log: its type, errors by
// their code.
func replyKind(reply []byte) string {
	switch {
	case reply[0] == '-':
		code, _, _ := strings.Cut(string(reply[1:]), " ")
		return "error " + code
	case bytes.HasPrefix(reply, []byte("$-1")) || bytes.HasPrefix(reply, []byte("*-1")) || reply[0] == '_':
		return "null"
	case bytes.HasPrefix(reply, []byte("*0\r\n")):
		return "empty array"
	}
	return string(reply[:1])
}

package gateway_test

import (
	"bytes"
	"fmt"
	"strconv"
	"testing"

	"github.com/distcache/distcache/internal/testing/clustertest"
	"github.com/distcache/distcache/internal/testing/redistest"
)

// suiteScripts are the command sequences behind the replies Redis's own
// suite found different from Redis' (issue 45), each as the suite sends
// them. Every one was the knock-on of a command the gateway lacks: a test
// that failed on it left its connection in RESP3 (ZINTER between HELLO 3
// and HELLO 2), its stream empty (XADD inside MULTI) or its keys unset
// (FLUSHDB before SET), and the next tests compared what they found with
// what Redis would have had. Here the same sequences run without the
// missing command.
var suiteScripts = []struct {
	name string
	cmds [][]string
}{
	{"ZPOPMIN after HELLO 3 and HELLO 2", [][]string{
		{"hello", "3"},
		{"zadd", "z1", "-1", "a", "1", "b", "2", "c"},
		{"zpopmin", "z1"},
		{"zpopmin", "z1", "1"},
		{"hello", "2"},
		{"zpopmin", "z1"},
		{"zadd", "z2", "0", "a", "1", "b", "3", "d"},
		{"zpopmin", "z2", "2"},
		{"zpopmax", "z2"},
	}},
	{"ZPOPMIN in RESP3 after a failed command", [][]string{
		{"zadd", "z3", "-1", "a", "1", "b"},
		{"hello", "3"},
		{"zinter", "2", "z3", "z4", "withscores"},
		{"zpopmin", "z3"},
		{"hello", "2"},
		{"zpopmin", "z3"},
	}},
	{"MGET of strings, a missing key and a set", [][]string{
		{"set", "foo", "BAR"},
		{"set", "bar", "FOO"},
		{"mget", "foo", "bar"},
		{"mget", "foo", "baazz", "bar"},
		{"sadd", "myset", "ciao"},
		{"mget", "foo", "baazz", "bar", "myset"},
		{"hello", "3"},
		{"mget", "foo", "baazz", "bar", "myset"},
		{"hello", "2"},
	}},
	{"XRANGE and XREVRANGE COUNT over 10,000 entries", streamScript("mystream", 10000)},
}

// streamScript fills stream key with n entries, as the suite's
// insert_into_stream_key does (with explicit IDs, so that both servers
// give the same), then reads it as the suite's tests do: XLEN, XRANGE and
// XREVRANGE with COUNT 10, and XRANGE 100 entries at a time to the end.
func streamScript(key string, n int) [][]string {
	cmds := [][]string{{"del", key}}
	for j := range n {
		id := strconv.Itoa(j+1) + "-0"
		if j%10 == 9 {
			cmds = append(cmds, []string{"xadd", key, id, "item", strconv.Itoa(j), "otherfield", "foo"})
		} else {
			cmds = append(cmds, []string{"xadd", key, id, "item", strconv.Itoa(j)})
		}
	}
	cmds = append(cmds, []string{"xlen", key},
		[]string{"xrange", key, "-", "+", "COUNT", "10"},
		[]string{"xrevrange", key, "+", "-", "COUNT", "10"})
	for from := 1; from <= n; from += 100 {
		cmds = append(cmds, []string{"xrange", key, strconv.Itoa(from) + "-0", "+", "COUNT", "100"})
	}
	return append(cmds, []string{"xrange", key, strconv.Itoa(n+1) + "-0", "+", "COUNT", "100"})
}

// TestSuiteReplies runs suiteScripts on the gateway and on a real
// redis-server, command by command and as one pipeline, from the event
// loops (whose rounds answer a pipeline of one type's commands) and from a
// goroutine per connection, through the shims and directly, and compares
// every reply byte for byte.
func TestSuiteReplies(t *testing.T) {
	ref := redistest.Start(t)
	for _, gw := range []struct {
		name   string
		direct bool
		loops  int
	}{
		{"through the shims", false, 0}, {"direct", true, 0}, {"direct, a goroutine per connection", true, -1},
	} {
		addr, _, _ := startGatewayOn(t, clustertest.Config{Name: "suite", Racks: 2, ShardsPerRack: 1, Spine: 2,
			DirectReads: gw.direct, DirectWrites: gw.direct}, withLoops(gw.loops))
		for _, pipelined := range []bool{false, true} {
			for _, sc := range suiteScripts {
				t.Run(fmt.Sprintf("%s, pipelined %v: %s", gw.name, pipelined, sc.name), func(t *testing.T) {
					prefix := fmt.Sprintf("%s-%v:", gw.name, pipelined)
					want := sendScript(t, ref.Addr(), prefix, sc.cmds, pipelined)
					got := sendScript(t, addr, prefix, sc.cmds, pipelined)
					for i, cmd := range sc.cmds {
						if cmd[0] == "hello" || cmd[0] == "zinter" { // the server's version and id; a command the gateway lacks
							continue
						}
						if !bytes.Equal(got[i], want[i]) {
							t.Errorf("command %d %q:\n redis-server: %q\n gateway:      %q", i, sc.cmds[i], want[i], got[i])
						}
					}
				})
			}
		}
	}
}

// sendScript sends cmds to addr on a new connection, their keys (the
// argument after a command's name, but for HELLO and ZINTER) prefixed,
// one at a time or all at once, and returns their raw replies.
func sendScript(t *testing.T, addr, prefix string, cmds [][]string, pipelined bool) [][]byte {
	t.Helper()
	c := dialRESP(t, addr)
	var all bytes.Buffer
	replies := make([][]byte, 0, len(cmds))
	for _, cmd := range cmds {
		args := append([]string(nil), cmd...)
		for i := 1; i < len(args); i++ {
			if isKeyArg(args, i) {
				args[i] = prefix + args[i]
			}
		}
		var b bytes.Buffer
		fmt.Fprintf(&b, "*%d\r\n", len(args))
		for _, a := range args {
			fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
		}
		if pipelined {
			all.Write(b.Bytes())
			continue
		}
		if _, err := c.c.Write(b.Bytes()); err != nil {
			t.Fatal(err)
		}
		replies = append(replies, readOne(t, c))
	}
	if !pipelined {
		return replies
	}
	if _, err := c.c.Write(all.Bytes()); err != nil {
		t.Fatal(err)
	}
	for range cmds {
		replies = append(replies, readOne(t, c))
	}
	return replies
}

// isKeyArg says whether args[i] is a key in suiteScripts' commands.
func isKeyArg(args []string, i int) bool {
	switch args[0] {
	case "hello":
		return false
	case "zinter":
		return i >= 2 && i < len(args)-1
	case "mget":
		return true
	}
	return i == 1
}

func readOne(t *testing.T, c *respConn) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := readReply(c.r, &out); err != nil {
		t.Fatalf("reading a reply: %v", err)
	}
	return out.Bytes()
}

package gateway

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"testing"

	"github.com/tidwall/redcon"

	"github.com/distcache/distcache/client"
	"github.com/distcache/distcache/internal/testing/clustertest"
)

// FuzzPipeline feeds arbitrary bytes through the path the gateway owns
// after redcon's parser: whatever commands the bytes hold run as one
// connection's pipeline against a real cluster, and every reply is one
// well-formed RESP value. Nothing may panic.
func FuzzPipeline(f *testing.F) {
	for _, seed := range []string{
		"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n",
		"PING\r\nECHO hi\r\nMGET a b c\r\nDEL a b\r\nEXISTS a\r\n",
		"HELLO 3\r\nGET nothing\r\nCLIENT SETNAME x\r\nCLIENT INFO\r\nINFO\r\nCOMMAND\r\n",
		"MSET a 1 b\r\nSELECT 9\r\nQUIT\r\nFOO\r\nget\r\n",
		"SET k v NX GET PX 100\r\nSET k v EX 0\r\nSET k v KEEPTTL XX\r\nINCR k\r\nDECRBY k -9223372036854775808\r\nAPPEND k x\r\nGETSET k y\r\nSETNX k z\r\n",
		"*1\r\n$7\r\nCOMMAND\r\n*2\r\n$7\r\nCOMMAND\r\n$4\r\nDOCS\r\n",
	} {
		f.Add([]byte(seed))
	}
	c := clustertest.Start(f, clustertest.Config{Name: "fuzz", Racks: 1, ShardsPerRack: 1, Spine: 1})
	s, err := New(Config{Store: c.NewClient(client.Config{})})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		rd := redcon.NewReader(bytes.NewReader(data))
		var cmds []redcon.Command
		for len(cmds) < 64 {
			cmd, err := rd.ReadCommand()
			if err != nil {
				break
			}
			cmds = append(cmds, cmd)
		}
		if len(cmds) == 0 {
			return
		}
		sess := &session{id: 1, proto: 2}
		for i, reply := range s.execute(sess, cmds) {
			rest, err := oneValue(reply)
			if err != nil || len(rest) > 0 {
				t.Fatalf("reply %d to %q is not one RESP value (%v, %d bytes left): %q", i, cmds[i].Args, err, len(rest), reply)
			}
		}
	})
}

// oneValue reads one RESP2 or RESP3 value off b and returns the rest.
func oneValue(b []byte) ([]byte, error) {
	i := bytes.Index(b, []byte("\r\n"))
	if len(b) == 0 || i < 0 {
		return nil, io.ErrUnexpectedEOF
	}
	head, rest := b[1:i], b[i+2:]
	n := 0
	if b[0] == '$' || b[0] == '=' || b[0] == '*' || b[0] == '%' {
		var err error
		if n, err = strconv.Atoi(string(head)); err != nil {
			return nil, err
		}
	}
	switch b[0] {
	case '+', '-', ':', '_':
		return rest, nil
	case '$', '=': // a bulk string, RESP3's verbatim string
		if n < 0 {
			return rest, nil
		}
		if len(rest) < n+2 || string(rest[n:n+2]) != "\r\n" {
			return nil, io.ErrUnexpectedEOF
		}
		return rest[n+2:], nil
	case '*', '%':
		if b[0] == '%' {
			n *= 2
		}
		var err error
		for range max(n, 0) {
			if rest, err = oneValue(rest); err != nil {
				return nil, err
			}
		}
		return rest, nil
	}
	return nil, errors.New("unknown RESP type " + string(b[0]))
}

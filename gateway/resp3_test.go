package gateway

import (
	"bytes"
	"testing"
)

func TestAppendRESP3(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  []string
		reply string
		want  string
	}{
		{"nulls", []string{"hmget", "k", "a", "b"}, "*2\r\n$1\r\nv\r\n$-1\r\n", "*2\r\n$1\r\nv\r\n_\r\n"},
		{"a null array", []string{"lpop", "k", "2"}, "*-1\r\n", "_\r\n"},
		{"hgetall", []string{"hgetall", "k"}, "*4\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n",
			"%2\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n"},
		{"smembers", []string{"smembers", "k"}, "*1\r\n$1\r\nx\r\n", "~1\r\n$1\r\nx\r\n"},
		{"spop without a count", []string{"spop", "k"}, "$1\r\nx\r\n", "$1\r\nx\r\n"},
		{"zscore", []string{"zscore", "k", "m"}, "$3\r\n2.5\r\n", ",2.5\r\n"},
		{"zscore of a missing member", []string{"zscore", "k", "m"}, "$-1\r\n", "_\r\n"},
		{"zadd", []string{"zadd", "k", "1", "m"}, ":1\r\n", ":1\r\n"},
		{"zadd incr", []string{"zadd", "k", "incr", "1", "m"}, "$3\r\ninf\r\n", ",inf\r\n"},
		{"zrange withscores", []string{"zrange", "k", "0", "-1", "WithScores"}, "*4\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$4\r\n-inf\r\n",
			"*2\r\n*2\r\n$1\r\na\r\n,1\r\n*2\r\n$1\r\nb\r\n,-inf\r\n"},
		{"zrange", []string{"zrange", "k", "0", "-1"}, "*1\r\n$1\r\na\r\n", "*1\r\n$1\r\na\r\n"},
		{"zpopmin", []string{"zpopmin", "k"}, "*2\r\n$1\r\na\r\n$1\r\n1\r\n", "*2\r\n$1\r\na\r\n,1\r\n"},
		{"zpopmin of nothing", []string{"zpopmin", "k"}, "*0\r\n", "*0\r\n"},
		{"hrandfield withvalues", []string{"hrandfield", "k", "1", "withvalues"}, "*2\r\n$1\r\nf\r\n$1\r\nv\r\n",
			"*1\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n"},
		{"geopos", []string{"geopos", "k", "a", "b"}, "*2\r\n*2\r\n$1\r\n1\r\n$1\r\n2\r\n*-1\r\n", "*2\r\n*2\r\n,1\r\n,2\r\n_\r\n"},
		{"an error", []string{"hgetall", "k"}, "-WRONGTYPE x\r\n", "-WRONGTYPE x\r\n"},
		{"unparsable", []string{"hgetall", "k"}, "*2\r\n$1\r\n", "*2\r\n$1\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := make([][]byte, len(tc.args))
			for i, a := range tc.args {
				args[i] = []byte(a)
			}
			if got := appendRESP3(nil, []byte(tc.reply), resp3ShapeOf(args)); string(got) != tc.want {
				t.Errorf("appendRESP3(%q) = %q, want %q", tc.reply, got, tc.want)
			}
		})
	}
}

// FuzzAppendRESP3: any bytes in any shape are rewritten without a panic,
// and a reply without nulls in the plain shape comes out as it went in.
func FuzzAppendRESP3(f *testing.F) {
	f.Add([]byte("*2\r\n$1\r\na\r\n$-1\r\n"), uint8(0))
	f.Add([]byte("*4\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n"), uint8(4))
	f.Add([]byte(":12\r\n"), uint8(3))
	f.Fuzz(func(t *testing.T, reply []byte, shape uint8) {
		got := appendRESP3(nil, reply, resp3Shape(shape%7))
		if shape%7 == 0 && !bytes.Contains(reply, []byte("-1")) && !bytes.Equal(got, reply) {
			v, rest, ok := parseRESP2(reply)
			if ok && len(rest) == 0 && v.kind != '-' {
				t.Fatalf("%q without nulls came out as %q", reply, got)
			}
		}
	})
}

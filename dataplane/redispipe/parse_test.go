package redispipe

import (
	"bytes"
	"testing"
)

// TestParse checks replies whole, cut short and malformed.
func TestParse(t *testing.T) {
	tests := []struct {
		in      string
		want    Reply
		n       int
		wantErr bool
	}{
		{in: "+OK\r\n", want: Reply{Kind: '+', Value: []byte("OK")}, n: 5},
		{in: "-ERR x\r\n+OK\r\n", want: Reply{Kind: '-', Value: []byte("ERR x")}, n: 8},
		{in: ":-12\r\n", want: Reply{Kind: ':', Int: -12}, n: 6},
		{in: "$3\r\nabc\r\n", want: Reply{Kind: '$', Value: []byte("abc")}, n: 9},
		{in: "$0\r\n\r\n", want: Reply{Kind: '$', Value: []byte{}}, n: 6},
		{in: "$-1\r\n", want: Reply{Kind: '$', Nil: true}, n: 5},
		{in: "$3\r\nab", n: 0},
		{in: "+OK", n: 0},
		{in: "$3\r\nabcd\r\n", wantErr: true},
		{in: ":x\r\n", wantErr: true},
		{in: "$-2\r\n", wantErr: true},
		{in: "*1\r\n$1\r\na\r\n", wantErr: true},
		{in: "\r\n", wantErr: true},
	}
	for _, tt := range tests {
		got, n, err := parse([]byte(tt.in))
		if (err != nil) != tt.wantErr {
			t.Errorf("parse(%q): error %v, want error %v", tt.in, err, tt.wantErr)
			continue
		}
		if tt.wantErr || n != tt.n {
			if n != tt.n {
				t.Errorf("parse(%q): length %d, want %d", tt.in, n, tt.n)
			}
			continue
		}
		if n > 0 && (got.Kind != tt.want.Kind || !bytes.Equal(got.Value, tt.want.Value) || got.Int != tt.want.Int || got.Nil != tt.want.Nil) {
			t.Errorf("parse(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

// FuzzParse checks that no input panics, and that a parsed reply never
// claims more bytes than it was given.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"+OK\r\n", "$3\r\nabc\r\n", "$-1\r\n", ":1\r\n", "-ERR\r\n", "$5\r\nab"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_, n, err := parse(b)
		if err == nil && n > len(b) {
			t.Fatalf("parse(%q) took %d bytes of %d", b, n, len(b))
		}
	})
}

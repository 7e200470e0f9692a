package respframe_test

import (
	"errors"
	"testing"

	"github.com/distcache/distcache/dataplane/respframe"
)

func TestLen(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      string
		want    int
		wantErr bool
	}{
		{"simple string", "+OK\r\nrest", 5, false},
		{"error", "-ERR no\r\n", 9, false},
		{"integer", ":-12\r\n", 6, false},
		{"bulk", "$3\r\nabc\r\n", 9, false},
		{"nil bulk", "$-1\r\n", 5, false},
		{"nil array", "*-1\r\n", 5, false},
		{"empty array", "*0\r\n", 4, false},
		{"nested array", "*2\r\n*1\r\n:1\r\n$-1\r\n+x", 17, false},
		{"part of a line", "+OK", 0, false},
		{"part of a bulk", "$3\r\nab", 0, false},
		{"part of an array", "*2\r\n:1\r\n", 0, false},
		{"empty line", "\r\n", 0, true},
		{"bad integer", ":x\r\n", 0, true},
		{"bad bulk length", "$-2\r\n", 0, true},
		{"bulk without its CRLF", "$1\r\nabc", 0, true},
		{"bad array length", "*-2\r\n", 0, true},
		{"unknown type", "%1\r\n", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := respframe.Len([]byte(tc.in))
			if tc.wantErr {
				if !errors.Is(err, respframe.ErrSyntax) {
					t.Fatalf("Len(%q) = %d, %v; want ErrSyntax", tc.in, n, err)
				}
				return
			}
			if err != nil || n != tc.want {
				t.Fatalf("Len(%q) = %d, %v; want %d", tc.in, n, err, tc.want)
			}
		})
	}
}

func FuzzLen(f *testing.F) {
	for _, s := range []string{"+OK\r\n", "*2\r\n$1\r\na\r\n:3\r\n", "$-1\r\n", "*-1\r\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := respframe.Len(b)
		if err == nil && (n < 0 || n > len(b)) {
			t.Fatalf("Len = %d for %d bytes", n, len(b))
		}
		if err == nil && n > 0 {
			// A complete reply keeps its length with more bytes after it.
			m, err := respframe.Len(append(b[:n:n], "+more\r\n"...))
			if err != nil || m != n {
				t.Fatalf("Len with a suffix = %d, %v; want %d", m, err, n)
			}
		}
	})
}

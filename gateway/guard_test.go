package gateway

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/tidwall/redcon"
)

// guardScan feeds input to a guard of max bytes per command in pieces of
// step bytes (0: at once) and returns the bytes it let through and its
// refusal.
func guardScan(input string, max, step int) (int, string) {
	g := commandGuard{max: max}
	passed := 0
	for rest := []byte(input); len(rest) > 0; {
		n := len(rest)
		if step > 0 {
			n = min(step, n)
		}
		ok, refusal := g.scan(rest[:n])
		passed += ok
		if refusal != "" {
			return passed, refusal
		}
		rest = rest[n:]
	}
	return passed, ""
}

func TestCommandGuard(t *testing.T) {
	const pipeline = "*2\r\n$3\r\nGET\r\n$1\r\nk\r\nPING\r\n\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n*1\r\n$+4\r\nPING\r\n*1\r\n$04\r\nPING\r\n"
	for _, tc := range []struct {
		name, input string
		max         int
		// passed is the bytes let through; refusal the reply, "" none.
		passed  int
		refusal string
	}{
		{"a pipeline of commands", pipeline, 100, len(pipeline), ""},
		{"an incomplete command", "*2\r\n$3\r\nGET\r\n$10\r\nabc", 100, 21, ""},
		{"commands before a refused one pass", "PING\r\n*99999999999\r\n", 100, 19, "ERR Protocol error: invalid multibulk length"},
		{"array count zero", "*0\r\n", 100, 3, "ERR Protocol error: invalid multibulk length"},
		{"array count negative", "*-1\r\n", 100, 4, "ERR Protocol error: invalid multibulk length"},
		{"array count not a number", "*1x\r\n", 100, 4, "ERR Protocol error: invalid multibulk length"},
		{"array count line without CR", "*1\n", 100, 2, "ERR Protocol error: invalid multibulk length"},
		{"array count with a CR inside", "*1\r1\r\n", 100, 5, "ERR Protocol error: invalid multibulk length"},
		{"array count over 2^30", "*1073741825\r\n", 1 << 40, 12, "ERR Protocol error: invalid multibulk length"},
		{"array count at 2^30", "*1073741824\r\n", 1 << 40, 13, ""},
		{"array that cannot fit", "*17\r\n", 101, 4, "ERR Protocol error: command larger than 101 bytes"},
		{"array that just fits", "*16\r\n", 101, 5, ""},
		{"element not a bulk string", "*1\r\n:5\r\n", 100, 4, "ERR Protocol error: expected '$', got ':'"},
		{"bulk length negative", "*1\r\n$-1\r\n", 100, 8, "ERR Protocol error: invalid bulk length"},
		{"bulk length minus zero", "*1\r\n$-0\r\n\r\n", 100, 11, ""},
		{"bulk length empty", "*1\r\n$\r\n", 100, 6, "ERR Protocol error: invalid bulk length"},
		{"bulk length over 512 MB", "*1\r\n$536870913\r\n", 1 << 40, 15, "ERR Protocol error: invalid bulk length"},
		{"bulk length at 512 MB", "*1\r\n$536870912\r\n", 1 << 40, 16, ""},
		{"bulk length far over every limit", "*1\r\n$99999999999999999999999\r\n", 1 << 40, 29, "ERR Protocol error: invalid bulk length"},
		{"bulk that cannot fit", "*1\r\n$90\r\n", 100, 8, "ERR Protocol error: command larger than 100 bytes"},
		{"bulk that just fits", "*1\r\n$89\r\n", 100, 9, ""},
		{"bulk that leaves no room for the next element", "*2\r\n$84\r\n", 100, 8, "ERR Protocol error: command larger than 100 bytes"},
		{"bulk that leaves just room for it", "*2\r\n$83\r\n", 100, 9, ""},
		{"bulk longer than its length", "*1\r\n$2\r\nabc\r\n", 100, 11, "ERR Protocol error: invalid bulk length"},
		{"bulk without its LF", "*1\r\n$2\r\nab\rx", 100, 11, "ERR Protocol error: invalid bulk length"},
		{"bulk without its CR", "*1\r\n$2\r\nabx\n", 100, 11, "ERR Protocol error: invalid bulk length"},
		{"inline at 64 KB", strings.Repeat("a", 64<<10-1) + "\r\n", 1 << 20, 64<<10 + 1, ""},
		{"inline over 64 KB", strings.Repeat("a", 64<<10+1), 1 << 20, 64 << 10, "ERR Protocol error: too big inline request"},
		{"inline over the bound", strings.Repeat("a", 200), 100, 100, "ERR Protocol error: command larger than 100 bytes"},
		{"array count line over 64 KB", "*" + strings.Repeat("0", 64<<10), 1 << 20, 64 << 10, "ERR Protocol error: too big mbulk count string"},
		{"bulk length line over 64 KB", "*1\r\n$" + strings.Repeat("0", 64<<10), 1 << 20, 64<<10 + 4, "ERR Protocol error: too big bulk count string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, step := range []int{0, 1, 3} {
				passed, refusal := guardScan(tc.input, tc.max, step)
				if passed != tc.passed || refusal != tc.refusal {
					t.Errorf("in pieces of %d bytes: passed %d, refused %q; want %d, %q", step, passed, refusal, tc.passed, tc.refusal)
				}
			}
		})
	}
}

// FuzzCommandGuard: on input whose numbers are all small (redcon's parser
// loops over an array's count, and the limits are the guard's own), the
// guard refuses exactly what redcon's parser refuses, with its message,
// whether it sees the bytes at once or a few at a time.
func FuzzCommandGuard(f *testing.F) {
	for _, seed := range []string{
		"*2\r\n$3\r\nGET\r\n$1\r\nk\r\nPING\r\n",
		"*1\r\n:5\r\n", "*-3\r\n", "*1\r\n$x\r\n", "*1\r\n$2\r\nabc\r\n",
		"*2\r\n$3\r\nGET\r\n$-7\r\n", "*1\r\n$+2\r\nab\r\n", "\r\n\n*1\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if bytes.ContainsAny(data, `"'`) {
			t.Skip("quotes: only redcon's parser reads them")
		}
		digits := 0
		for _, c := range data {
			if c >= '0' && c <= '9' {
				digits++
			} else {
				digits = 0
			}
			if digits > 4 {
				t.Skip("numbers beyond the limits tested")
			}
		}
		const max = 1 << 20
		passed, refusal := guardScan(string(data), max, 0)
		if p, r := guardScan(string(data), max, 1+len(data)%7); p != passed || r != refusal {
			t.Fatalf("at once: %d, %q; in pieces: %d, %q", passed, refusal, p, r)
		}
		rd := redcon.NewReader(bytes.NewReader(data))
		var err error
		for err == nil {
			_, err = rd.ReadCommands()
		}
		want := ""
		if !errors.Is(err, io.EOF) {
			want = "ERR " + err.Error()
		}
		if refusal != want && !(strings.HasPrefix(want, "ERR Protocol error: expected '$'") && strings.HasPrefix(refusal, "ERR Protocol error: expected '$'")) {
			t.Fatalf("input %q: guard refused %q after %d bytes, redcon %q", data, refusal, passed, want)
		}
	})
}

// BenchmarkCommandGuard: what the guard adds to a read of a pipeline of
// 16 GETs.
func BenchmarkCommandGuard(b *testing.B) {
	p := []byte(strings.Repeat("*2\r\n$3\r\nGET\r\n$16\r\nkey:000000000001\r\n", 16))
	g := commandGuard{max: DefaultMaxCommandBytes}
	b.SetBytes(int64(len(p)))
	b.ReportAllocs()
	for b.Loop() {
		if _, refusal := g.scan(p); refusal != "" {
			b.Fatal(refusal)
		}
	}
}

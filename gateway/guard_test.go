package gateway

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/redcon"
)

// guarded is what a guard made of some input: the bytes it let through,
// with the reply of each command it discarded, in its place, between ⟨
// and ⟩; its refusal; the bytes of each run of output between discarded
// commands (what one parser reads); the commands of nothing it skipped.
type guarded struct {
	out, refusal string
	runs         []string
	skipped      int
}

// guardFilter feeds input to a guard of max bytes per command and maxArg
// per bulk string (0: max alone) through a connection's reader
// (guardedInput), which reads it in pieces of step bytes (0: at once).
func guardFilter(input string, max, maxArg, step int) guarded {
	in := guardedInput{guard: commandGuard{max: max, maxArg: maxArg}}
	rest := []byte(input)
	raw := func(p []byte) (int, error) {
		if len(rest) == 0 {
			return 0, io.EOF
		}
		n := len(p)
		if step > 0 {
			n = min(n, step)
		}
		n = copy(p, rest[:min(n, len(rest))])
		rest = rest[n:]
		return n, nil
	}
	var g guarded
	var out, run strings.Builder
	p := make([]byte, 4096)
	for {
		n, err := in.read(p, raw)
		out.Write(p[:n])
		run.Write(p[:n])
		switch {
		case errors.Is(err, errDropped):
			reply := in.takeDropped()
			out.WriteString("⟨" + reply + "⟩")
			g.runs = append(g.runs, run.String())
			run.Reset()
			continue
		case errors.Is(err, errCommandRefused):
			g.refusal = in.refusal
		case err == nil:
			continue
		}
		g.out = out.String()
		g.runs = append(g.runs, run.String())
		g.skipped = in.guard.skipped
		return g
	}
}

// guardScan is guardFilter's bytes let through, and its refusal.
func guardScan(input string, max, step int) (int, string) {
	g := guardFilter(input, max, 0, step)
	return len(g.out), g.refusal
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
		{"commands before a refused one pass", "PING\r\n*99999999999\r\n", 100, 6, "ERR Protocol error: invalid multibulk length"},
		{"array count zero: skipped", "*0\r\n", 100, 0, ""},
		{"array count negative: skipped", "*-1\r\n", 100, 0, ""},
		{"array count not a number", "*1x\r\n", 100, 0, "ERR Protocol error: invalid multibulk length"},
		{"array count line without CR", "*1\n", 100, 0, "ERR Protocol error: invalid multibulk length"},
		{"array count with a CR inside", "*1\r1\r\n", 100, 0, "ERR Protocol error: invalid multibulk length"},
		{"array count over 2^30", "*1073741825\r\n", 1 << 40, 0, "ERR Protocol error: invalid multibulk length"},
		{"array count at 2^30", "*1073741824\r\n", 1 << 40, 13, ""},
		{"array count of 30 characters", "*" + strings.Repeat("0", 29) + "1\r\n", 1 << 20, 33, ""},
		{"array count of 31 characters", "*" + strings.Repeat("0", 30) + "1\r\n", 1 << 20, 0, "ERR Protocol error: invalid multibulk length"},
		{"array that cannot fit", "*17\r\n", 101, 0, "ERR Protocol error: command larger than 101 bytes"},
		{"array that just fits", "*16\r\n", 101, 5, ""},
		{"element not a bulk string", "*1\r\n:5\r\n", 100, 4, "ERR Protocol error: expected '$', got ':'"},
		{"bulk length negative", "*1\r\n$-1\r\n", 100, 8, "ERR Protocol error: invalid bulk length"},
		{"bulk length minus zero", "*1\r\n$-0\r\n\r\n", 100, 11, ""},
		{"bulk length empty", "*1\r\n$\r\n", 100, 6, "ERR Protocol error: invalid bulk length"},
		{"bulk length over 512 MB", "*1\r\n$536870913\r\n", 1 << 40, 15, "ERR Protocol error: invalid bulk length"},
		{"bulk length at 512 MB", "*1\r\n$536870912\r\n", 1 << 40, 16, ""},
		{"bulk length far over every limit", "*1\r\n$99999999999999999999999\r\n", 1 << 40, 29, "ERR Protocol error: invalid bulk length"},
		{"bulk that cannot fit: discarded", "*1\r\n$90\r\n", 100, 9, ""},
		{"bulk that just fits", "*1\r\n$89\r\n", 100, 9, ""},
		{"bulk that leaves no room for the next element: discarded", "*2\r\n$84\r\n", 100, 9, ""},
		{"bulk that leaves just room for it", "*2\r\n$83\r\n", 100, 9, ""},
		{"bulk longer than its length", "*1\r\n$2\r\nabc\r\n", 100, 11, "ERR Protocol error: invalid bulk length"},
		{"bulk without its LF", "*1\r\n$2\r\nab\rx", 100, 11, "ERR Protocol error: invalid bulk length"},
		{"bulk without its CR", "*1\r\n$2\r\nabx\n", 100, 11, "ERR Protocol error: invalid bulk length"},
		{"inline at 64 KB", strings.Repeat("a", 64<<10-1) + "\r\n", 1 << 20, 64<<10 + 1, ""},
		{"inline over 64 KB", strings.Repeat("a", 64<<10+1), 1 << 20, 64 << 10, "ERR Protocol error: too big inline request"},
		{"inline over the bound", strings.Repeat("a", 200), 100, 100, "ERR Protocol error: command larger than 100 bytes"},
		{"array count line over 64 KB", "*" + strings.Repeat("0", 64<<10), 1 << 20, 0, "ERR Protocol error: too big mbulk count string"},
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

// TestCommandGuardDiscards: a command with a bulk string larger than a
// value may be, or larger in all than a command may be, is discarded as
// it arrives, and answered in its place once its last byte has; a count
// of 0 or less is skipped, as Redis skips it; the commands around them go
// to the parser.
func TestCommandGuardDiscards(t *testing.T) {
	const set = "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n"
	big := "$11\r\nhello world\r\n"
	for _, tc := range []struct {
		name, input string
		max, maxArg int
		want        guarded
	}{
		{"a bulk over the value limit", "PING\r\n" + set + big + "PING\r\n", 100, 10, guarded{
			out:  "PING\r\n" + set + "$11\r\n⟨" + tooLargeReply + "⟩PING\r\n",
			runs: []string{"PING\r\n" + set + "$11\r\n", "PING\r\n"}}},
		{"a bulk over the value limit, the elements after it too", "*3\r\n$3\r\nSET\r\n" + big + "$1\r\nv\r\n*1\r\n$4\r\nPING\r\n", 100, 10, guarded{
			out:  "*3\r\n$3\r\nSET\r\n$11\r\n⟨" + tooLargeReply + "⟩*1\r\n$4\r\nPING\r\n",
			runs: []string{"*3\r\n$3\r\nSET\r\n$11\r\n", "*1\r\n$4\r\nPING\r\n"}}},
		{"two in a row", set + big + set + big, 100, 10, guarded{
			out:  set + "$11\r\n⟨" + tooLargeReply + "⟩" + set + "$11\r\n⟨" + tooLargeReply + "⟩",
			runs: []string{set + "$11\r\n", set + "$11\r\n", ""}}},
		{"bulks larger in all than a command", set + "$20\r\n" + strings.Repeat("x", 20) + "\r\nPING\r\n", 40, 0, guarded{
			out:  set + "$20\r\n⟨ERR command larger than 40 bytes⟩PING\r\n",
			runs: []string{set + "$20\r\n", "PING\r\n"}}},
		{"a discarded command with a malformed element", "*3\r\n$3\r\nSET\r\n" + big + ":1\r\n", 100, 10, guarded{
			out: "*3\r\n$3\r\nSET\r\n$11\r\n", refusal: "ERR Protocol error: expected '$', got ':'",
			runs: []string{"*3\r\n$3\r\nSET\r\n$11\r\n"}}},
		{"a discarded command with a bulk over 512 MB", "*3\r\n$3\r\nSET\r\n" + big + "$536870913\r\n", 100, 10, guarded{
			out: "*3\r\n$3\r\nSET\r\n$11\r\n", refusal: "ERR Protocol error: invalid bulk length",
			runs: []string{"*3\r\n$3\r\nSET\r\n$11\r\n"}}},
		{"a negative count", "*-10\r\nPING\r\n", 100, 10, guarded{
			out: "PING\r\n", runs: []string{"PING\r\n"}, skipped: 1}},
		{"counts of zero and less between commands", "PING\r\n*0\r\n*-1\r\n*1\r\n$4\r\nPING\r\n*-10\r\n", 100, 10, guarded{
			out: "PING\r\n*1\r\n$4\r\nPING\r\n", runs: []string{"PING\r\n*1\r\n$4\r\nPING\r\n"}, skipped: 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, step := range []int{0, 1, 2, 5} {
				got := guardFilter(tc.input, tc.max, tc.maxArg, step)
				if got.out != tc.want.out || got.refusal != tc.want.refusal || got.skipped != tc.want.skipped ||
					!slices.Equal(got.runs, tc.want.runs) {
					t.Errorf("in pieces of %d bytes:\n got %+v\nwant %+v", step, got, tc.want)
				}
			}
		})
	}
}

// FuzzCommandGuard: whether the guard sees the bytes at once or a few at
// a time, it lets through the same bytes and refuses the same; redcon's
// parser never refuses what it let through (but inline commands' quotes,
// which only redcon reads); and on input whose numbers are all small
// (redcon's parser loops over an array's count, and the limits are the
// guard's own) and without counts of 0 or less (which the guard skips
// and redcon refuses), the guard refuses exactly what redcon's parser
// refuses, with its message.
func FuzzCommandGuard(f *testing.F) {
	for _, seed := range []string{
		"*2\r\n$3\r\nGET\r\n$1\r\nk\r\nPING\r\n",
		"*1\r\n:5\r\n", "*-3\r\n", "*1\r\n$x\r\n", "*1\r\n$2\r\nabc\r\n",
		"*2\r\n$3\r\nGET\r\n$-7\r\n", "*1\r\n$+2\r\nab\r\n", "\r\n\n*1\n",
		"*2\r\n$3\r\nSET\r\n$20\r\n01234567890123456789\r\nPING\r\n",
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
		const max, maxArg = 1 << 20, 16 // bulks over 16 bytes are discarded
		at := guardFilter(string(data), max, maxArg, 0)
		if p := guardFilter(string(data), max, maxArg, 1+len(data)%7); p.out != at.out || p.refusal != at.refusal {
			t.Fatalf("at once: %q, %q; in pieces: %q, %q", at.out, at.refusal, p.out, p.refusal)
		}
		for _, run := range at.runs {
			if err := parseAll([]byte(run)); err != nil {
				t.Fatalf("input %q: redcon refused %q, which the guard let through: %v", data, run, err)
			}
		}
		if at.skipped > 0 || len(at.runs) > 1 {
			return
		}
		want := ""
		if err := parseAll(data); err != nil {
			want = "ERR " + err.Error()
		}
		if at.refusal != want && !(strings.HasPrefix(want, "ERR Protocol error: expected '$'") && strings.HasPrefix(at.refusal, "ERR Protocol error: expected '$'")) {
			t.Fatalf("input %q: guard refused %q after %q, redcon %q", data, at.refusal, at.out, want)
		}
	})
}

// parseAll parses b with redcon's parser: its error, nil at the end of b.
func parseAll(b []byte) error {
	rd := redcon.NewReader(bytes.NewReader(b))
	var err error
	for err == nil {
		_, err = rd.ReadCommands()
	}
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// BenchmarkCommandGuard: what the guard adds to a read of a pipeline of
// 16 GETs.
func BenchmarkCommandGuard(b *testing.B) {
	p := []byte(strings.Repeat("*2\r\n$3\r\nGET\r\n$16\r\nkey:000000000001\r\n", 16))
	g := newCommandGuard(DefaultMaxCommandBytes)
	b.SetBytes(int64(len(p)))
	b.ReportAllocs()
	for b.Loop() {
		if f := g.filter(p); f.refusal != "" || f.keep != len(p) {
			b.Fatal(f)
		}
	}
}

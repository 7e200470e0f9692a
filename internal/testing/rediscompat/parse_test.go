package rediscompat

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestParse reads outputs of the suite against the gateway (testdata: as
// the suite printed them, the stalled one cut short in the middle).
func TestParse(t *testing.T) {
	tests := []struct {
		file, unit                        string
		passed, failed, skipped, cutShort int
		abort                             string // "": the unit ran to its end
		first                             Failure
	}{
		{
			file: "string.log", unit: "unit/type/string",
			passed: 53, failed: 21, skipped: 2,
			first: Failure{Test: "Very big payload in GET/SET", Message: `error writing "sock555925ef4940": connection reset by peer`},
		},
		{
			file: "hash.log", unit: "unit/type/hash",
			passed: 1, failed: 1, cutShort: 1,
			first: Failure{Test: "Is the small hash encoded with a listpack?", Message: "ERR unknown command 'object', with args beginning with: 'encoding' 'smallhash'"},
		},
		{
			file: "list.log", unit: "unit/type/list",
			abort: "ERR CONFIG SET is not supported by the DistCache gateway",
		},
		{
			file: "scripting-stalled.log", unit: "unit/scripting",
			failed: 3,
			abort:  "no progress within the suite's --timeout, in test Script return recursive object",
			first:  Failure{Test: "EVAL - Does Lua interpreter replies to our requests?", Message: "ERR unknown command 'function', with args beginning with: 'load' 'replace' '#!lua name=test redis.register_function('test', function(KEYS, ARGV)  return 'hello'  end)'"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			out, err := os.ReadFile(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			res := Parse(tt.unit, out)
			if res.Passed != tt.passed || res.Failed != tt.failed || res.Skipped != tt.skipped || res.CutShort != tt.cutShort {
				t.Errorf("passed %d, failed %d, skipped %d, cut short %d; want %d, %d, %d, %d",
					res.Passed, res.Failed, res.Skipped, res.CutShort, tt.passed, tt.failed, tt.skipped, tt.cutShort)
			}
			if res.Aborted != (tt.abort != "") || res.AbortReason != tt.abort {
				t.Errorf("aborted %v (%q), want %q", res.Aborted, res.AbortReason, tt.abort)
			}
			if len(res.Failures) != tt.failed+tt.cutShort {
				t.Fatalf("%d failures, want %d", len(res.Failures), tt.failed+tt.cutShort)
			}
			if len(res.Failures) > 0 && res.Failures[0] != tt.first {
				t.Errorf("first failure %+v, want %+v", res.Failures[0], tt.first)
			}
		})
	}
}

// TestParseCutShort reads an error outside a test: its message whole, and
// no test's name.
func TestParseCutShort(t *testing.T) {
	out, err := os.ReadFile(filepath.Join("testdata", "hash.log"))
	if err != nil {
		t.Fatal(err)
	}
	res := Parse("unit/type/hash", out)
	want := Failure{Message: "ERR CONFIG SET is not supported by the DistCache gateway"}
	if got := res.Failures[len(res.Failures)-1]; got != want {
		t.Errorf("last failure %+v, want %+v", got, want)
	}
}

// TestParseUnfinished: output without the suite's "done" for the unit
// (a suite killed from outside) is an aborted unit.
func TestParseUnfinished(t *testing.T) {
	out := "Testing unit/type/incr\n[ok]: INCR against non existing key (1 ms)\n[ok]: INCR against key created by incr itself (0 ms)\n"
	res := Parse("unit/type/incr", []byte(out))
	if res.Passed != 2 || !res.Aborted || res.AbortReason != "the suite ended before the unit did" {
		t.Errorf("got %+v", res)
	}
}

// TestParseColours strips the terminal colours the suite prints when TERM
// says xterm.
func TestParseColours(t *testing.T) {
	out := "\x1b[0;32;49m[ok]\x1b[0m: SET and GET an item (1 ms)\n" +
		"[\x1b[0;31;49merr\x1b[0m]: MGET in tests/unit/type/string.tcl\nExpected 'a' to equal or match 'b'\n" +
		"[1/1 \x1b[0;33;49mdone\x1b[0m]: unit/type/string (1 seconds)\n"
	res := Parse("unit/type/string", []byte(out))
	if res.Passed != 1 || res.Failed != 1 || res.Aborted {
		t.Errorf("got %+v", res)
	}
}

func TestCause(t *testing.T) {
	tests := []struct{ message, want string }{
		{"ERR unknown command 'object', with args beginning with: 'encoding' 'smallhash'", "OBJECT: unknown command"},
		{"Expected 'ERR unknown command 'msetnx', with args beginning with: 'x{t}'' to match '*wrong number of arguments*'", "MSETNX: unknown command"},
		{"ERR unknown subcommand 'TRACKING'. Try CLIENT HELP.", "CLIENT TRACKING: unknown subcommand"},
		{"ERR CONFIG SET is not supported by the DistCache gateway", "CONFIG SET: not supported"},
		{"I/O error reading reply", "connection closed by the gateway"},
		{`error writing "sock555925ef4940": broken pipe`, "connection closed by the gateway"},
		{"Timeout waiting for blocked clients", "no client blocked (blocking commands)"},
		{"no progress within the suite's --timeout, in test Script return recursive object", "a test waited for a reply that never came"},
		{"Expected 'BAR {} FOO' to equal or match '{} {} {}'", "a reply other than Redis's"},
		{"ERR invalid expire time in 'set' command", "ERR invalid expire time in 'set' command"},
		{strings.Repeat("x", 100), strings.Repeat("x", 70) + "..."},
	}
	for _, tt := range tests {
		if got := Cause(tt.message); got != tt.want {
			t.Errorf("Cause(%q) = %q, want %q", tt.message, got, tt.want)
		}
	}
}

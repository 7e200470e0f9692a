package checker

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/distcache/distcache/workload/history"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// golden compares got with testdata/name, rewriting it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file:\ngot:\n%s\nwant:\n%s", name, got, want)
	}
}

// verdictOption edits a verdict built by newVerdict.
type verdictOption func(*Verdict)

// newVerdict is a passing run of 1000 operations on 4 keys, read back both
// ways.
func newVerdict(opts ...verdictOption) *Verdict {
	v := &Verdict{
		Started: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC),
		Settings: Settings{
			MapFile: "/run/map.json", KeyPrefix: DefaultKeyPrefix, Keys: 4, Skew: 1, WriteRatio: 0.3, DeleteShare: 0.1,
			Clients: 4, StaleClients: 1, Workers: 16, Seed: 1, Duration: 20 * time.Second, MaxOps: 1000, OpTimeout: 2 * time.Second,
		},
		Elapsed: 3 * time.Second, EndedBy: EndedAtMaxOps,
		Counts: Counts{
			Operations: 1000, Gets: 700, Hits: 400, NotFound: 20, FailedReads: 3,
			Puts: 270, Deletes: 30, Acknowledged: 290, Refused: 2, Unknown: 8, TimedOut: 5, Preload: 4,
		},
		FirstMap: 1, LastMap: 1,
		Linearizability: history.Result{Keys: 4, Operations: 1001, LeftOut: 6, Linearizable: 4, Elapsed: 1500 * time.Millisecond},
		Routed:          ReadBack{Read: 4},
		Direct:          &ReadBack{Read: 4},
	}
	for _, o := range opts {
		o(v)
	}
	v.decide()
	return v
}

func withViolation(key string) verdictOption {
	return func(v *Verdict) {
		lin := &v.Linearizability
		lin.Linearizable--
		tail := []history.Operation{
			{Client: 0, Kind: history.Put, Key: key, Value: "init", Call: 1000, Return: 2000},
			{Client: 3, Kind: history.Put, Key: key, Value: "w2-7", Call: 5000, Return: 9000},
			{Client: 5, Kind: history.Get, Key: key, Value: "init", Found: true, Call: 12000, Return: 15000},
		}
		lin.Violations = append(lin.Violations, history.Violation{Key: key, Operations: 250, Prefix: tail, PrefixLength: 3, Tail: tail,
			Visualization: "out/keys/" + key + ".html"})
		if v.Histories == nil {
			v.Histories = map[string]string{}
		}
		v.Histories[key] = "out/keys/" + key + ".history.jsonl"
	}
}

func withUnchecked(keys ...string) verdictOption {
	return func(v *Verdict) {
		v.Linearizability.Linearizable -= len(keys)
		v.Linearizability.Unchecked = keys
	}
}

func withLost(direct bool, key string) verdictOption {
	return func(v *Verdict) {
		r := &v.Routed
		if direct {
			r = v.Direct
		}
		r.Lost = append(r.Lost, history.LostWrite{Key: key, Got: history.Observed{Value: "w1-3", Found: true},
			Allowed: history.Finals{Values: []string{"w2-9"}, NotFound: true}})
	}
}

func withUnread(direct bool, keys ...string) verdictOption {
	return func(v *Verdict) {
		r := &v.Routed
		if direct {
			r = v.Direct
		}
		r.Read -= len(keys)
		r.Unread = keys
	}
}

func withoutDirect() verdictOption { return func(v *Verdict) { v.Direct = nil } }

func withStale() verdictOption {
	return func(v *Verdict) {
		v.LastMap = 2
		v.Stale = []StaleEvent{
			{At: 1200 * time.Millisecond, Frozen: true, StaleMap: 1, CurrentMap: 1},
			{At: 2500 * time.Millisecond, StaleMap: 1, CurrentMap: 2},
		}
	}
}

func TestVerdictResultAndSummary(t *testing.T) {
	tests := []struct {
		name    string
		opts    []verdictOption
		result  Result
		summary string
	}{
		{"pass", nil, Pass,
			"PASS: 1000 operations (700 reads, 300 writes, 8 of unknown outcome) on 4 keys: linearizable, no lost write through the cache and in Redis"},
		{"pass without Redis", []verdictOption{withoutDirect()}, Pass,
			"PASS: 1000 operations (700 reads, 300 writes, 8 of unknown outcome) on 4 keys: linearizable, no lost write through the cache"},
		{"violation", []verdictOption{withViolation("k1")}, Fail,
			"FAIL: 1000 operations (700 reads, 300 writes, 8 of unknown outcome) on 4 keys: 1 key not linearizable, no lost write through the cache and in Redis"},
		{"lost in Redis only", []verdictOption{withLost(true, "k2")}, Fail,
			"FAIL: 1000 operations (700 reads, 300 writes, 8 of unknown outcome) on 4 keys: linearizable, 1 lost write"},
		{"lost both ways", []verdictOption{withLost(false, "k2"), withLost(true, "k2")}, Fail,
			"FAIL: 1000 operations (700 reads, 300 writes, 8 of unknown outcome) on 4 keys: linearizable, 2 lost writes"},
		{"unchecked", []verdictOption{withUnchecked("k0", "k3")}, Inconclusive,
			"INCONCLUSIVE: 1000 operations (700 reads, 300 writes, 8 of unknown outcome) on 4 keys: 2 keys unchecked (check timed out), no lost write through the cache and in Redis"},
		{"unread", []verdictOption{withUnread(false, "k1")}, Inconclusive,
			"INCONCLUSIVE: 1000 operations (700 reads, 300 writes, 8 of unknown outcome) on 4 keys: linearizable, no lost write through the cache and in Redis, 1 final read failed"},
		{"unread in Redis", []verdictOption{withUnread(true, "k1", "k2")}, Inconclusive,
			"INCONCLUSIVE: 1000 operations (700 reads, 300 writes, 8 of unknown outcome) on 4 keys: linearizable, no lost write through the cache and in Redis, 2 final reads failed"},
		{"a violation outweighs unchecked keys", []verdictOption{withViolation("k1"), withUnchecked("k0")}, Fail,
			"FAIL: 1000 operations (700 reads, 300 writes, 8 of unknown outcome) on 4 keys: 1 key not linearizable, 1 key unchecked (check timed out), no lost write through the cache and in Redis"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := newVerdict(tc.opts...)
			if v.Result != tc.result || v.Pass() != (tc.result == Pass) {
				t.Fatalf("result %s (pass %v), want %s", v.Result, v.Pass(), tc.result)
			}
			if got := v.Summary(); got != tc.summary {
				t.Fatalf("summary\n%s\nwant\n%s", got, tc.summary)
			}
		})
	}
}

func TestVerdictTextGolden(t *testing.T) {
	tests := []struct {
		file string
		v    *Verdict
	}{
		{"pass.txt.golden", newVerdict(withoutDirect())},
		{"fail.txt.golden", newVerdict(withStale(), withViolation("distcache-check:key:1"), withUnchecked("distcache-check:key:3"),
			withLost(false, "distcache-check:key:2"), withLost(true, "distcache-check:key:2"), withUnread(true, "distcache-check:key:0"))},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			var b bytes.Buffer
			if err := tc.v.WriteText(&b); err != nil {
				t.Fatal(err)
			}
			golden(t, tc.file, b.Bytes())
		})
	}
}

func TestVerdictJSONGolden(t *testing.T) {
	v := newVerdict(withStale(), withViolation("distcache-check:key:1"), withLost(true, "distcache-check:key:2"))
	js, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "verdict.json.golden", append(js, '\n'))
	var back Verdict
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatal(err)
	}
	if back.Result != Fail || back.Direct == nil || len(back.Direct.Lost) != 1 || len(back.Linearizability.Violations) != 1 {
		t.Fatalf("decoded verdict lost its findings: %+v", back)
	}
}

func TestFileName(t *testing.T) {
	tests := []struct{ key, want string }{
		{"distcache-check:key:12", "distcache-check_key_12"},
		{"a/b", "a_b"},
		{"../x", ".._x"},
		{"ok_name-1.2", "ok_name-1.2"},
	}
	for _, tc := range tests {
		if got := fileName(tc.key); got != tc.want {
			t.Errorf("fileName(%q) = %q, want %q", tc.key, got, tc.want)
		}
	}
}

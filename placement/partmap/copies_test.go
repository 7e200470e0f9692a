package partmap_test

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/distcache/distcache/placement/partmap"
)

func keyCopies(key string, members ...string) partmap.KeyCopies {
	return partmap.KeyCopies{Key: []byte(key), Members: members}
}

func mustWithCopies(t *testing.T, m *partmap.Map, copies ...partmap.KeyCopies) *partmap.Map {
	t.Helper()
	next, _, err := m.WithCopies(copies)
	if err != nil {
		t.Fatal(err)
	}
	return next
}

// names lists the member names of cs under m, with "(fenced)" after a
// Fenced one.
func names(m *partmap.Map, cs []partmap.Candidate) []string {
	var out []string
	for _, c := range cs {
		n := m.Layers[c.Layer].Members[c.Member].Name
		if c.Fenced {
			n += " (fenced)"
		}
		out = append(out, n)
	}
	return out
}

func TestCandidatesWithDecidedCopies(t *testing.T) {
	base := mustBuild(t, newSpec(), nil)
	p0 := mustCompile(t, base)
	owners := names(base, p0.Candidates("plain", nil))
	tests := []struct {
		name   string
		copies []partmap.KeyCopies
		state  map[string]partmap.MemberState
		key    string
		want   []string
	}{{
		name:   "a key without a decision keeps its owner in every layer",
		copies: []partmap.KeyCopies{keyCopies("hot", "demo-spine-0", "demo-spine-1", "demo-leaf-2")},
		key:    "plain",
		want:   owners,
	}, {
		name:   "decided holders, upper layer first",
		copies: []partmap.KeyCopies{keyCopies("hot", "demo-leaf-2", "demo-spine-3", "demo-spine-1")},
		key:    "hot",
		want:   []string{"demo-spine-1", "demo-spine-3", "demo-leaf-2"},
	}, {
		name:   "no members: not cached",
		copies: []partmap.KeyCopies{keyCopies("written")},
		key:    "written",
		want:   nil,
	}, {
		name:   "a Fenced holder is marked",
		copies: []partmap.KeyCopies{keyCopies("hot", "demo-spine-1", "demo-spine-2")},
		state:  map[string]partmap.MemberState{"demo-spine-2": partmap.Fenced},
		key:    "hot",
		want:   []string{"demo-spine-1", "demo-spine-2 (fenced)"},
	}, {
		name:   "a Failed holder's copy moves to its layer's owner of the key",
		copies: []partmap.KeyCopies{keyCopies("hot", "demo-spine-0", "demo-leaf-0")},
		state:  map[string]partmap.MemberState{"demo-spine-0": partmap.Failed},
		key:    "hot",
		want:   nil, // filled in below: the spine owner of "hot" without demo-spine-0
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := base
			for name, st := range tt.state {
				m, _, _ = m.WithState(name, st)
			}
			m = mustWithCopies(t, m, tt.copies...)
			p := mustCompile(t, m)
			want := tt.want
			if strings.HasPrefix(tt.name, "a Failed holder") {
				spine := m.Layers[0].Members[p.Owner(0, tt.key)].Name
				want = []string{spine, "demo-leaf-0"}
				if spine == "demo-spine-0" {
					t.Fatalf("a Failed member owns %q", tt.key)
				}
			}
			if got := names(m, p.Candidates(tt.key, nil)); !slices.Equal(got, want) {
				t.Errorf("Candidates(%q) = %v, want %v", tt.key, got, want)
			}
			for l, layer := range m.Layers {
				for i, mb := range layer.Members {
					holds := slices.Contains(want, mb.Name) || slices.Contains(want, mb.Name+" (fenced)")
					if got := p.Holds(l, i, tt.key); got != holds {
						t.Errorf("Holds(%s, %q) = %v, want %v", mb.Name, tt.key, got, holds)
					}
				}
			}
		})
	}
}

func TestWithCopies(t *testing.T) {
	m := mustBuild(t, newSpec(), nil)
	next, changed, err := m.WithCopies([]partmap.KeyCopies{keyCopies("b", "demo-spine-0"), keyCopies("a")})
	if err != nil || !changed || next.Version != m.Version+1 {
		t.Fatalf("WithCopies: version %d, changed %v, %v; want version %d", next.Version, changed, err, m.Version+1)
	}
	if len(m.Copies) != 0 {
		t.Fatalf("WithCopies changed the map it was called on: %v", m.Copies)
	}
	if got := []string{string(next.Copies[0].Key), string(next.Copies[1].Key)}; !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("copies not sorted by key: %v", got)
	}
	same, changed, err := next.WithCopies([]partmap.KeyCopies{keyCopies("a"), keyCopies("b", "demo-spine-0")})
	if err != nil || changed || same != next {
		t.Errorf("the same copies again: changed %v, %v, a new map %v", changed, err, same != next)
	}
	if _, _, err := next.WithCopies([]partmap.KeyCopies{keyCopies("a", "nobody")}); err == nil || !strings.Contains(err.Error(), `no member "nobody"`) {
		t.Errorf("unknown member: %v", err)
	}
	cleared, changed, err := next.WithCopies(nil)
	if err != nil || !changed || cleared.Copies != nil {
		t.Errorf("clearing: %v, changed %v, copies %v", err, changed, cleared.Copies)
	}
}

// TestBuildKeepsDecidedCopies: a rebuild from the spec keeps the decided
// copies whose members still exist and drops those naming a removed one.
func TestBuildKeepsDecidedCopies(t *testing.T) {
	m := mustWithCopies(t, mustBuild(t, newSpec(), nil),
		keyCopies("kept", "demo-spine-0", "demo-spine-1"), keyCopies("gone", "demo-spine-3"))
	smaller := newSpec()
	smaller.Layers[0].Nodes = 3
	next := mustBuild(t, smaller, m)
	if len(next.Copies) != 1 || string(next.Copies[0].Key) != "kept" {
		t.Errorf("copies after removing demo-spine-3: %+v", next.Copies)
	}
	if same := mustBuild(t, newSpec(), m); same != m {
		t.Errorf("an unchanged spec published a new version %d", same.Version)
	}
}

func TestDecodeRejectsBadCopies(t *testing.T) {
	tests := []struct {
		name   string
		copies []partmap.KeyCopies
		want   string
	}{
		{"empty key", []partmap.KeyCopies{{Key: nil}}, "key of 0 bytes"},
		{"long key", []partmap.KeyCopies{{Key: bytes.Repeat([]byte("k"), partmap.MaxCopiesKeyLen+1)}}, "key of 513 bytes"},
		{"unsorted", []partmap.KeyCopies{keyCopies("b"), keyCopies("a")}, "not sorted or listed twice"},
		{"twice", []partmap.KeyCopies{keyCopies("a"), keyCopies("a")}, "not sorted or listed twice"},
		{"unknown member", []partmap.KeyCopies{keyCopies("a", "nobody")}, `no member "nobody"`},
		{"member twice", []partmap.KeyCopies{keyCopies("a", "demo-spine-0", "demo-spine-0")}, `member "demo-spine-0" listed twice`},
		{"too many members", []partmap.KeyCopies{keyCopies("a", slices.Repeat([]string{"demo-spine-0"}, partmap.MaxCopiesPerKey+1)...)}, "65 members"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := mustBuild(t, newSpec(), nil).Clone()
			m.Copies = tt.copies
			if err := m.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate: %v, want an error containing %q", err, tt.want)
			}
		})
	}
	many := make([]partmap.KeyCopies, partmap.MaxKeyCopies+1)
	for i := range many {
		many[i] = keyCopies(string(rune('a'+i/4096)) + strings.Repeat("x", i%4096/64) + string(rune('0'+i%64)))
	}
	m := mustBuild(t, newSpec(), nil).Clone()
	m.Copies = many
	if err := m.Validate(); err == nil || !strings.Contains(err.Error(), "more than 8192") {
		t.Errorf("too many keys: %v", err)
	}
}

// TestGoldenEncodingWithCopies pins the JSON of decided copies: binary keys
// in base64, members by name.
func TestGoldenEncodingWithCopies(t *testing.T) {
	m := mustWithCopies(t, mustBuild(t, newSpec(), nil),
		partmap.KeyCopies{Key: []byte{0, 0xff, 'k'}, Members: []string{"demo-spine-0", "demo-spine-1", "demo-leaf-0"}},
		keyCopies("write-hot"))
	got, err := partmap.Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "demo-copies.json", got)
	back, err := partmap.Decode(got)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(back.Copies, m.Copies, func(a, b partmap.KeyCopies) bool {
		return bytes.Equal(a.Key, b.Key) && slices.Equal(a.Members, b.Members)
	}) {
		t.Errorf("decoded copies %+v, want %+v", back.Copies, m.Copies)
	}
}

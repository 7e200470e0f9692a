package history

import (
	"reflect"
	"testing"
)

func TestPossibleFinals(t *testing.T) {
	tests := []struct {
		name string
		ops  []Operation
		want Finals
	}{
		{
			name: "the last acknowledged put",
			ops:  []Operation{put("a", at(0, 10)), put("b", at(20, 30)), read("b", at(40, 50))},
			want: Finals{Values: []string{"b"}},
		},
		{
			name: "overlapping acknowledged puts may each be last",
			ops:  []Operation{put("a", at(0, 10)), put("b", at(20, 40)), put("c", at(30, 50), byClient(2))},
			want: Finals{Values: []string{"b", "c"}},
		},
		{
			name: "a put that returned before the last one started is not last",
			ops:  []Operation{put("a", at(0, 20)), put("b", at(10, 30), byClient(2)), put("c", at(25, 40))},
			want: Finals{Values: []string{"b", "c"}},
		},
		{
			name: "a put returning exactly when the last one starts may be last",
			ops:  []Operation{put("a", at(0, 20)), put("b", at(20, 30), byClient(2))},
			want: Finals{Values: []string{"a", "b"}},
		},
		{
			name: "an unknown put may be last or not applied",
			ops:  []Operation{put("a", at(0, 10)), put("b", unknownFrom(20), byClient(2))},
			want: Finals{Values: []string{"a", "b"}},
		},
		{
			name: "an unknown put may be applied after a later acknowledged put",
			ops:  []Operation{put("a", at(0, 10)), put("b", unknownFrom(20), byClient(2)), put("c", at(30, 40))},
			want: Finals{Values: []string{"b", "c"}},
		},
		{
			name: "an acknowledged delete last allows not found only",
			ops:  []Operation{put("a", at(0, 10)), del(at(20, 30))},
			want: Finals{NotFound: true},
		},
		{
			name: "a delete overlapping the last put",
			ops:  []Operation{put("a", at(0, 10)), del(at(20, 40)), put("b", at(30, 50), byClient(2))},
			want: Finals{Values: []string{"b"}, NotFound: true},
		},
		{
			name: "an unknown delete may be last or not applied",
			ops:  []Operation{put("a", at(0, 10)), del(unknownFrom(20), byClient(2))},
			want: Finals{Values: []string{"a"}, NotFound: true},
		},
		{
			name: "a delete followed by an acknowledged put",
			ops:  []Operation{del(at(0, 10)), put("a", at(20, 30))},
			want: Finals{Values: []string{"a"}},
		},
		{
			name: "no acknowledged write: nothing applied, or any unknown put",
			ops:  []Operation{put("a", unknownFrom(0)), put("b", unknownFrom(10), byClient(2)), readNotFound(at(20, 30))},
			want: Finals{Values: []string{"a", "b"}, NotFound: true},
		},
		{
			name: "no write at all",
			ops:  []Operation{readNotFound(at(0, 10))},
			want: Finals{NotFound: true},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := PossibleFinals(tc.ops); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("PossibleFinals = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestFinalsAllows(t *testing.T) {
	tests := []struct {
		name   string
		finals Finals
		got    Observed
		want   bool
	}{
		{"a possible value", Finals{Values: []string{"a", "b"}}, Observed{Value: "b", Found: true}, true},
		{"a value that is not possible", Finals{Values: []string{"a"}}, Observed{Value: "b", Found: true}, false},
		{"not found when a delete may be last", Finals{Values: []string{"a"}, NotFound: true}, Observed{}, true},
		{"not found when it is not possible", Finals{Values: []string{"a"}}, Observed{}, false},
		{"a value where only not found is possible", Finals{NotFound: true}, Observed{Value: "a", Found: true}, false},
		{"the empty value is not not-found", Finals{NotFound: true}, Observed{Found: true}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.finals.Allows(tc.got); got != tc.want {
				t.Fatalf("%s allows %s: %v, want %v", tc.finals, tc.got, got, tc.want)
			}
		})
	}
}

func TestLostWrites(t *testing.T) {
	ops := []Operation{
		put("a", at(0, 10), onKey("kept")), put("b", at(20, 30), onKey("kept")),
		put("a", at(0, 10), onKey("lost")), put("b", at(20, 30), onKey("lost")),
		put("a", at(0, 10), onKey("deleted")), del(at(20, 30), onKey("deleted")),
		put("a", at(0, 10), onKey("resurrected")), del(at(20, 30), onKey("resurrected")),
		put("a", at(0, 10), onKey("unread")),
	}
	finals := map[string]Observed{
		"kept":        {Value: "b", Found: true},
		"lost":        {Value: "a", Found: true},
		"deleted":     {},
		"resurrected": {Value: "a", Found: true},
		"foreign":     {Value: "x", Found: true},
	}
	got := LostWrites(ops, finals)
	want := []LostWrite{
		{Key: "foreign", Got: Observed{Value: "x", Found: true}, Allowed: Finals{NotFound: true}},
		{Key: "lost", Got: Observed{Value: "a", Found: true}, Allowed: Finals{Values: []string{"b"}}},
		{Key: "resurrected", Got: Observed{Value: "a", Found: true}, Allowed: Finals{NotFound: true}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("LostWrites = %v\nwant %v", got, want)
	}
	if s, w := got[1].String(), `lost: read "a", but only "b" could be last`; s != w {
		t.Fatalf("String() = %s, want %s", s, w)
	}
}

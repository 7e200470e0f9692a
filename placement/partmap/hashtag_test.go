package partmap_test

import (
	"fmt"
	"testing"

	"github.com/distcache/distcache/placement/partmap"
)

func TestHashTag(t *testing.T) {
	for _, tc := range []struct{ key, want string }{
		{"plain", "plain"},
		{"{user1}:name", "user1"},
		{"a{user1}b{user2}", "user1"},
		{"{}x", "{}x"},  // an empty tag: the whole key
		{"{a", "{a"},    // no closing brace
		{"x}{y}", "y"},  // the first '{', then the first '}' after it
		{"{{a}}", "{a"}, // as Redis Cluster reads it
	} {
		if got := partmap.HashTag(tc.key); got != tc.want {
			t.Errorf("HashTag(%q) = %q, want %q", tc.key, got, tc.want)
		}
	}
}

func TestHashTagsShareAShard(t *testing.T) {
	on := mustCompile(t, mustBuild(t, newSpec(func(s *partmap.Spec) { s.HashTags = true }), nil))
	off := mustCompile(t, mustBuild(t, newSpec(), nil))
	split := false
	for i := range 200 {
		a, b := fmt.Sprintf("{t%d}:a", i), fmt.Sprintf("{t%d}:b", i)
		if on.ShardIndex(a) != on.ShardIndex(b) {
			t.Fatalf("with hash tags, %q is on shard %d and %q on %d", a, on.ShardIndex(a), b, on.ShardIndex(b))
		}
		split = split || off.ShardIndex(a) != off.ShardIndex(b)
	}
	if !split {
		t.Fatal("without hash tags, every pair of keys of a tag shared a shard")
	}
	// The map says so, and a decoded map places keys alike.
	m := mustBuild(t, newSpec(func(s *partmap.Spec) { s.HashTags = true }), nil)
	b, err := partmap.Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	d, err := partmap.Decode(b)
	if err != nil || !d.Storage.HashTags {
		t.Fatalf("decoded map: hashTags %v, err %v", d != nil && d.Storage.HashTags, err)
	}
}

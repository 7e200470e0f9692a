package redundancy_test

import (
	"testing"

	"github.com/distcache/distcache/redundancy"
)

// rateOf is key's summed hits and its shard's reads in r.
func rateOf(r redundancy.Reports, key string) (hits, reads float64) {
	for _, node := range r.Hits {
		for _, k := range node {
			if k.Key == key {
				hits += k.Reads
			}
		}
	}
	for _, sh := range r.Shards {
		for _, k := range sh.Keys {
			if k.Key == key {
				reads += k.Reads
			}
		}
	}
	return hits, reads
}

// TestSmootherKeepsTheLargestOfTheLastRounds: a key's hits summed over the
// nodes and its shard's reads are the largest of the last Rounds rounds,
// so a round that under-counts it (a new holder's first interval) does
// not shrink its copies; the load is the newest round's.
func TestSmootherKeepsTheLargestOfTheLastRounds(t *testing.T) {
	round := func(a, b, shim, load float64) redundancy.Reports {
		return redundancy.Reports{
			Hits:   [][]redundancy.KeyRate{{{Key: "k", Reads: a}}, {{Key: "k", Reads: b}}},
			Shards: map[string]redundancy.ShardReport{"s": {Load: load, Keys: []redundancy.KeyRate{{Key: "k", Reads: shim}}}},
		}
	}
	s := &redundancy.Smoother{Rounds: 2}
	tests := []struct {
		name            string
		in              redundancy.Reports
		hits, reads, ld float64
	}{
		{"first round", round(60, 40, 10, 500), 100, 10, 500},
		{"an under-counted round keeps the first", round(30, 10, 5, 300), 100, 10, 300},
		{"two rounds later the lower rate", round(30, 20, 5, 300), 50, 5, 300},
	}
	for _, tc := range tests {
		out := s.Add(tc.in)
		hits, reads := rateOf(out, "k")
		if hits != tc.hits || reads != tc.reads || out.Shards["s"].Load != tc.ld {
			t.Fatalf("%s: hits %v, reads %v, load %v; want %v, %v, %v", tc.name, hits, reads, out.Shards["s"].Load, tc.hits, tc.reads, tc.ld)
		}
	}
	if out := s.Add(redundancy.Reports{}); len(out.Shards) != 0 {
		t.Fatalf("a round without the shard: %v, want it left out", out.Shards)
	}
}

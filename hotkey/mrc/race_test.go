//go:build race

package mrc

// raceEnabled is set when the tests run under the race detector, which
// makes them about ten times slower: the accuracy tests then use smaller
// workloads.
const raceEnabled = true

//go:build !race

package mrc

// raceEnabled is set when the tests run under the race detector.
const raceEnabled = false

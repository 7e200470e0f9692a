//go:build race

package transport_test

// raceEnabled says whether the race detector is on.
const raceEnabled = true

//go:build race

package wireauth_test

// raceEnabled says whether the race detector is on.
const raceEnabled = true

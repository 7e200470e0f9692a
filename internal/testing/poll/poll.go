// Package poll waits in tests for a condition the test can observe (an
// object the API server shows, a process's state, a published map), never
// for elapsed time: the bound only turns a hang into a failure.
package poll

import (
	"testing"
	"time"
)

// Eventually polls cond until it holds and fails the test after a generous
// bound (30 s). The last error cond returned is part of the failure.
func Eventually(t testing.TB, what string, cond func() (bool, error)) {
	t.Helper()
	Within(t, what, 30*time.Second, cond)
}

// Within is Eventually with its own bound, for conditions that take long
// by design (an alert's `for:` duration).
func Within(t testing.TB, what string, bound time.Duration, cond func() (bool, error)) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(bound)
	var last error
	for {
		ok, err := cond()
		if ok {
			return
		}
		last = err
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("%s: not reached within %s (last error: %v)", what, bound, last)
		}
	}
}

// Until is Eventually for a condition that cannot fail.
func Until(t testing.TB, what string, cond func() bool) {
	t.Helper()
	Eventually(t, what, func() (bool, error) { return cond(), nil })
}

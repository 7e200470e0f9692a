// Package errtest checks an error a test got against the one it wants.
package errtest

import (
	"errors"
	"testing"
)

// ErrAny accepts, as the wanted error, every non-nil error.
var ErrAny = errors.New("any error")

// Check fails t unless err matches want: nil wants no error, ErrAny wants
// one, and any other error wants an error that is (errors.Is) it.
func Check(t testing.TB, err, want error) {
	t.Helper()
	switch {
	case want == nil && err != nil:
		t.Fatalf("error %v, want none", err)
	case errors.Is(want, ErrAny) && err == nil:
		t.Fatal("no error, want one")
	case want != nil && !errors.Is(want, ErrAny) && !errors.Is(err, want):
		t.Fatalf("error %v, want %v", err, want)
	}
}

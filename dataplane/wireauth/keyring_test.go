package wireauth_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/distcache/distcache/dataplane/wireauth"
)

var (
	keyA = []byte("key-a-0123456789abcdef")
	keyB = []byte("key-b-0123456789abcdef")
	keyC = []byte("key-c-0123456789abcdef")
)

// keyring builds a test Keyring.
func keyring(t testing.TB, current, previous []byte) *wireauth.Keyring {
	t.Helper()
	k, err := wireauth.New(current, previous)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func sign(k *wireauth.Keyring, data []byte) []byte { return k.AppendTag(nil, data) }

func flip(b []byte, i int) []byte {
	b = bytes.Clone(b)
	b[i] ^= 0x01
	return b
}

// TestRFC4231Truncated pins the MAC: RFC 4231 test case 5, HMAC-SHA-256
// truncated to 128 bits.
func TestRFC4231Truncated(t *testing.T) {
	k := keyring(t, bytes.Repeat([]byte{0x0c}, 20), nil)
	got := hex.EncodeToString(sign(k, []byte("Test With Truncation")))
	if want := "a3b6167473100ee06e0c796c2955552b"; got != want {
		t.Fatalf("tag = %s, want %s", got, want)
	}
}

func TestVerify(t *testing.T) {
	data := []byte("a datagram: header, key and value bytes")
	signedA := sign(keyring(t, keyA, nil), data)
	signedB := sign(keyring(t, keyB, nil), data)
	tests := []struct {
		name     string
		verifier *wireauth.Keyring
		data     []byte
		tag      []byte
		want     bool
	}{
		{"current key", keyring(t, keyA, nil), data, signedA, true},
		{"wrong key", keyring(t, keyB, nil), data, signedA, false},
		{"previous key accepted", keyring(t, keyB, keyA), data, signedA, true},
		{"current key with a previous", keyring(t, keyB, keyA), data, signedB, true},
		{"neither current nor previous", keyring(t, keyB, keyC), data, signedA, false},
		{"data bit flipped", keyring(t, keyA, nil), flip(data, 0), signedA, false},
		{"last data bit flipped", keyring(t, keyA, nil), flip(data, len(data)-1), signedA, false},
		{"data truncated", keyring(t, keyA, nil), data[:len(data)-1], signedA, false},
		{"data extended", keyring(t, keyA, nil), append(bytes.Clone(data), 0), signedA, false},
		{"tag bit flipped", keyring(t, keyA, nil), data, flip(signedA, wireauth.TagLen-1), false},
		{"tag truncated", keyring(t, keyA, nil), data, signedA[:wireauth.TagLen-1], false},
		{"tag empty", keyring(t, keyA, nil), data, nil, false},
		{"tag too long", keyring(t, keyA, nil), data, append(bytes.Clone(signedA), 0), false},
		{"tag all zero", keyring(t, keyA, nil), data, make([]byte, wireauth.TagLen), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.verifier.Verify(tt.data, tt.tag); got != tt.want {
				t.Errorf("Verify() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestAppendTagAppends(t *testing.T) {
	k := keyring(t, keyA, keyB)
	prefix := []byte("prefix")
	out := k.AppendTag(bytes.Clone(prefix), []byte("data"))
	if len(out) != len(prefix)+wireauth.TagLen || !bytes.HasPrefix(out, prefix) {
		t.Fatalf("AppendTag() = %x", out)
	}
	if !bytes.Equal(out[len(prefix):], sign(keyring(t, keyA, nil), []byte("data"))) {
		t.Fatal("AppendTag() did not sign with the current key")
	}
}

func TestNewRejectsShortKeys(t *testing.T) {
	short := []byte("fifteen-bytes!!")
	for _, tt := range []struct {
		name              string
		current, previous []byte
	}{
		{"short current", short, nil},
		{"empty current", nil, nil},
		{"short previous", keyA, short},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := wireauth.New(tt.current, tt.previous); !errors.Is(err, wireauth.ErrKey) {
				t.Fatalf("New() error = %v, want ErrKey", err)
			}
		})
	}
}

// writeKeys writes a key directory's files; a nil key removes its file.
func writeKeys(t *testing.T, dir string, current, previous []byte) {
	t.Helper()
	for name, k := range map[string][]byte{wireauth.CurrentFile: current, wireauth.PreviousFile: previous} {
		path := filepath.Join(dir, name)
		if k == nil {
			if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(path, k, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRotation follows the documented rotation from key A to key B with
// two processes, one reloading before the other at each step: at every
// point each accepts what the other signs.
func TestRotation(t *testing.T) {
	dirs := [2]string{t.TempDir(), t.TempDir()}
	var rings [2]*wireauth.Keyring
	for i, d := range dirs {
		writeKeys(t, d, keyA, nil)
		var err error
		if rings[i], err = wireauth.Load(d); err != nil {
			t.Fatal(err)
		}
	}
	data := []byte("INVALIDATE")
	agree := func(step string) {
		t.Helper()
		for i := range rings {
			if other := rings[1-i]; !other.Verify(data, sign(rings[i], data)) {
				t.Fatalf("%s: process %d rejects what process %d signs", step, 1-i, i)
			}
		}
	}
	agree("start")
	steps := []struct {
		name              string
		current, previous []byte
	}{
		{"accept B", keyA, keyB},
		{"sign with B", keyB, keyA},
		{"drop A", keyB, nil},
	}
	for _, s := range steps {
		for i := range dirs {
			writeKeys(t, dirs[i], s.current, s.previous)
			changed, err := rings[i].Reload(dirs[i])
			if err != nil || !changed {
				t.Fatalf("%s: Reload() = %v, %v; want a change", s.name, changed, err)
			}
			agree(s.name + ", one process reloaded")
		}
		if changed, err := rings[0].Reload(dirs[0]); err != nil || changed {
			t.Fatalf("%s: second Reload() = %v, %v; want no change", s.name, changed, err)
		}
	}
	if rings[0].Verify(data, sign(keyring(t, keyA, nil), data)) {
		t.Fatal("the dropped key is still accepted")
	}
	if got := rings[0].Stats().Reloads; got != uint64(len(steps)) {
		t.Fatalf("Reloads = %d, want %d", got, len(steps))
	}
}

func TestReloadKeepsKeysOnError(t *testing.T) {
	dir := t.TempDir()
	writeKeys(t, dir, keyA, nil)
	k, err := wireauth.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name    string
		current []byte
	}{
		{"current removed", nil},
		{"current too short", []byte("short")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			writeKeys(t, dir, tt.current, nil)
			if _, err := k.Reload(dir); err == nil {
				t.Fatal("Reload() succeeded")
			}
			data := []byte("PUT")
			if !k.Verify(data, sign(keyring(t, keyA, nil), data)) {
				t.Fatal("the key in use was dropped")
			}
		})
	}
	if got := k.Stats().LoadErrors; got != 2 {
		t.Fatalf("LoadErrors = %d, want 2", got)
	}
}

func TestLoadErrors(t *testing.T) {
	if _, err := wireauth.Load(t.TempDir()); err == nil {
		t.Fatal("Load() of an empty directory succeeded")
	}
}

func TestGenerate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "key")
	if err := wireauth.Generate(dir); err != nil {
		t.Fatal(err)
	}
	first, err := os.ReadFile(filepath.Join(dir, wireauth.CurrentFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, wireauth.PreviousFile), keyA, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := wireauth.Generate(dir); err != nil {
		t.Fatal(err)
	}
	second, err := os.ReadFile(filepath.Join(dir, wireauth.CurrentFile))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(first, second) || len(second) != 64 {
		t.Fatalf("Generate() wrote %q after %q: want a fresh 64-character key", second, first)
	}
	if _, err := os.Stat(filepath.Join(dir, wireauth.PreviousFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("previous key left behind: %v", err)
	}
	fi, err := os.Stat(filepath.Join(dir, wireauth.CurrentFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v, %v; want 0600", fi.Mode(), err)
	}
	if _, err := wireauth.Load(dir); err != nil {
		t.Fatal(err)
	}
}

// TestWatchInstallsRotatedKey: Watch picks up a changed key directory.
func TestWatchInstallsRotatedKey(t *testing.T) {
	dir := t.TempDir()
	writeKeys(t, dir, keyA, nil)
	k, err := wireauth.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { k.Watch(ctx, dir, time.Millisecond, slog.New(slog.DiscardHandler)); close(done) }()
	defer func() { cancel(); <-done }()
	writeKeys(t, dir, keyB, nil)
	data := []byte("UPDATE")
	want := sign(keyring(t, keyB, nil), data)
	select {
	case <-k.Changed():
	case <-time.After(10 * time.Second):
		t.Fatal("Watch did not install the new key")
	}
	if !bytes.Equal(sign(k, data), want) {
		t.Fatal("Watch reported a change but does not sign with the new key")
	}
}

func TestSignVerifyDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items at random under the race detector")
	}
	k := keyring(t, keyA, keyB)
	data := make([]byte, 100)
	buf := make([]byte, 0, 64)
	tag := sign(k, data)
	if n := testing.AllocsPerRun(1000, func() { buf = k.AppendTag(buf[:0], data) }); n != 0 {
		t.Errorf("AppendTag allocates %v times", n)
	}
	if n := testing.AllocsPerRun(1000, func() { k.Verify(data, tag) }); n != 0 {
		t.Errorf("Verify allocates %v times", n)
	}
}

func BenchmarkMAC(b *testing.B) {
	k := keyring(b, keyA, nil)
	for _, n := range []int{100, 1472} {
		data := make([]byte, n)
		buf := make([]byte, 0, 64)
		b.Run("sign/"+map[int]string{100: "100B", 1472: "1472B"}[n], func(b *testing.B) {
			b.SetBytes(int64(n))
			for b.Loop() {
				buf = k.AppendTag(buf[:0], data)
			}
		})
	}
}

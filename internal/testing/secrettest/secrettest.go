// Package secrettest writes a directory as the kubelet writes a mounted
// Secret: each key a symbolic link through "..data" to a directory of the
// current version, which one rename replaces, so that a reader sees every
// key of one version or of the next, never a mix.
package secrettest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// Dir is a Secret volume for a test.
type Dir struct {
	Path    string
	version int
	keys    map[string]bool // every key written so far, linked once
}

// New returns a Secret volume in a new temporary directory holding data.
func New(t testing.TB, data map[string]string) *Dir {
	t.Helper()
	d := &Dir{Path: t.TempDir(), keys: map[string]bool{}}
	d.Set(t, data)
	return d
}

// File is the path of key's file.
func (d *Dir) File(key string) string { return filepath.Join(d.Path, key) }

// Set replaces the Secret's data at once: keys not in data disappear.
func (d *Dir) Set(t testing.TB, data map[string]string) {
	t.Helper()
	d.version++
	name := fmt.Sprintf("..v%d", d.version)
	dir := filepath.Join(d.Path, name)
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for k, v := range data {
		if err := os.WriteFile(filepath.Join(dir, k), []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tmp := filepath.Join(d.Path, "..data_tmp")
	if err := os.Symlink(name, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(d.Path, "..data")); err != nil {
		t.Fatal(err)
	}
	for k := range data {
		if !d.keys[k] {
			if err := os.Symlink(filepath.Join("..data", k), d.File(k)); err != nil {
				t.Fatal(err)
			}
			d.keys[k] = true
		}
	}
}

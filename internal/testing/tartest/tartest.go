// Package tartest extracts tar archives in tests: an image archive to read
// its OCI layout, an image's flattened file system to look at its files.
package tartest

import (
	"archive/tar"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// ExtractFile extracts the tar archive at path (see Extract).
func ExtractFile(t testing.TB, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return Extract(t, f)
}

// Extract writes the directories and regular files of the tar stream r,
// with their modes, into a new temporary directory and returns it; any
// other kind of entry fails the test.
func Extract(t testing.TB, r io.Reader) string {
	t.Helper()
	dir := t.TempDir()
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return dir
		}
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, filepath.FromSlash(h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(dst, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dst, h.FileInfo().Mode()&(fs.ModePerm|fs.ModeSticky)); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(dst, b, h.FileInfo().Mode().Perm()); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("%s: unexpected tar entry type %c", h.Name, h.Typeflag)
		}
	}
}

package containerimage

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// WriteArchiveFile writes img, tagged ref, to the archive at path
// (WriteArchive), whole or not at all: into a temporary file beside it,
// renamed over path once complete. It creates path's directory.
func WriteArchiveFile(path string, img v1.Image, ref string, mtime time.Time) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("cannot write the image %s: %w", ref, err)
	}
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("cannot write the image %s: %w", ref, err)
	}
	if err := WriteArchive(f, img, ref, mtime); err != nil {
		_ = f.Close()
		_ = os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("cannot write the image %s: %w", ref, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("cannot write the image %s: %w", ref, err)
	}
	return nil
}

// CreatedAt is the time of a reproducible image: seconds since the epoch
// when not 0, else SOURCE_DATE_EPOCH when set, else the epoch.
func CreatedAt(seconds int64) (time.Time, error) {
	if seconds == 0 {
		if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
			var err error
			if seconds, err = strconv.ParseInt(s, 10, 64); err != nil {
				return time.Time{}, fmt.Errorf("cannot build the image: SOURCE_DATE_EPOCH %q: %w", s, err)
			}
		}
	}
	return time.Unix(seconds, 0).UTC(), nil
}

package standalone

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/distcache/distcache/dataplane/wireauth"
)

// ensureDataPlaneKey gives the cluster a data-plane key in dir unless it
// has one: a random key generated on the first start, kept across
// restarts of the cluster (clients that find it by its run directory keep
// agreeing with it), and rotated by hand as docs/dataplane.md describes.
func ensureDataPlaneKey(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, wireauth.CurrentFile)); err == nil {
		return nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("cannot check the data-plane key: %w", err)
	}
	return wireauth.Generate(dir)
}

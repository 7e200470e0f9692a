// Package rediscompat runs Redis's own Tcl test suite against the gateway
// of a standalone DistCache cluster: it fetches the suite from Debian's
// source package of the redis-server installed on this machine, starts a
// cluster with `distcache up`, runs the suite's units against the
// cluster's gateway in the suite's external-server mode, and counts what
// passed, failed and was skipped in each unit. `make redis-compat`
// (hack/rediscompat) and test/rediscompat use it.
package rediscompat

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ErrUnavailable reports that Debian's source package could not be
// downloaded (no network, or the archive does not have the version).
var ErrUnavailable = errors.New("the source package cannot be downloaded")

// debianSources are the deb-src lines of the suite's own apt sources list:
// bookworm with its updates and security archives, where Debian's
// redis-server 7.0 comes from.
const debianSources = `deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm main
deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm-updates main
deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian-security bookworm-security main
`

// Source is an unpacked redis source tree.
type Source struct {
	// Dir holds the tree: tests/test_helper.tcl and the units under
	// tests/unit.
	Dir string
	// Version is the Debian source version, e.g. 5:7.0.15-1~deb12u10.
	Version string
}

// InstalledVersion is the Debian source version of the redis-server
// package installed on this machine.
func InstalledVersion(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "dpkg-query", "-W", "-f", "${source:Version}", "redis-server").Output()
	if err != nil {
		return "", fmt.Errorf("cannot read the version of the redis-server package (Debian's, make redis-server): %w", err)
	}
	v := strings.TrimSpace(string(out))
	if v == "" {
		return "", errors.New("cannot read the version of the redis-server package: dpkg-query printed nothing")
	}
	return v, nil
}

// cacheName is the directory under the cache root that holds the source
// tree of Debian version v: redis-src-7.0.15-1~deb12u10 (no epoch).
func cacheName(v string) string {
	if _, after, ok := strings.Cut(v, ":"); ok {
		v = after
	}
	return "redis-src-" + v
}

// Fetch returns the source tree of the installed redis-server's Debian
// version from cacheRoot (e.g. ~/.cache/distcache), and downloads and
// unpacks it there first unless it is there already: `apt-get source`
// with an apt sources list, package lists and cache of its own in a
// temporary directory, so that the machine's apt configuration and lists
// are left alone. It needs dpkg-source (Debian's dpkg-dev) to unpack. A
// download that fails is ErrUnavailable.
func Fetch(ctx context.Context, cacheRoot string) (Source, error) {
	version, err := InstalledVersion(ctx)
	if err != nil {
		return Source{}, err
	}
	dir := filepath.Join(cacheRoot, cacheName(version))
	if _, err := os.Stat(filepath.Join(dir, "tests", "test_helper.tcl")); err == nil {
		return Source{Dir: dir, Version: version}, nil
	}
	if _, err := exec.LookPath("dpkg-source"); err != nil {
		return Source{}, fmt.Errorf("cannot unpack Debian's redis source package: dpkg-source not on PATH (install dpkg-dev, make test-deps does): %w", err)
	}
	if err := os.MkdirAll(cacheRoot, 0o755); err != nil {
		return Source{}, fmt.Errorf("cannot create %s: %w", cacheRoot, err)
	}
	// Beside the final directory, so that the rename below stays on one
	// file system.
	tmp, err := os.MkdirTemp(cacheRoot, "."+cacheName(version)+".")
	if err != nil {
		return Source{}, fmt.Errorf("cannot create a download directory: %w", err)
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	unpacked, err := download(ctx, tmp, version)
	if err != nil {
		return Source{}, err
	}
	if err := os.Rename(unpacked, dir); err != nil {
		// Another run may have put it there meanwhile.
		if _, statErr := os.Stat(filepath.Join(dir, "tests", "test_helper.tcl")); statErr != nil {
			return Source{}, fmt.Errorf("cannot move the source tree to %s: %w", dir, err)
		}
	}
	return Source{Dir: dir, Version: version}, nil
}

// download runs apt-get update and apt-get source redis=version in tmp
// and returns the unpacked tree's directory.
func download(ctx context.Context, tmp, version string) (string, error) {
	list := filepath.Join(tmp, "sources.list")
	if err := os.WriteFile(list, []byte(debianSources), 0o644); err != nil {
		return "", fmt.Errorf("cannot write the apt sources list: %w", err)
	}
	for _, d := range []string{"lists/partial", "cache/archives/partial", "src"} {
		if err := os.MkdirAll(filepath.Join(tmp, d), 0o755); err != nil {
			return "", fmt.Errorf("cannot create the apt directories: %w", err)
		}
	}
	opts := []string{
		"-o", "Dir::Etc::sourcelist=" + list,
		"-o", "Dir::Etc::sourceparts=-",
		"-o", "Dir::State::Lists=" + filepath.Join(tmp, "lists"),
		"-o", "Dir::Cache=" + filepath.Join(tmp, "cache"),
		"-o", "DPkg::Lock::Timeout=600",
	}
	if os.Geteuid() == 0 {
		// apt's download user cannot enter a directory of root's.
		opts = append(opts, "-o", "APT::Sandbox::User=root")
	}
	aptGet := func(dir string, args ...string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, "apt-get", append(append([]string{}, opts...), args...)...)
		cmd.Dir = dir
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("%w: apt-get %s: %w\n%s", ErrUnavailable, strings.Join(args, " "), err, out.Bytes())
		}
		return out.Bytes(), nil
	}
	out, err := aptGet(tmp, "update")
	if err != nil {
		return "", err
	}
	// apt-get update succeeds when it cannot reach the archive, with a
	// warning.
	if indexes, _ := filepath.Glob(filepath.Join(tmp, "lists", "*_Sources*")); len(indexes) == 0 {
		return "", fmt.Errorf("%w: apt-get update fetched no source index:\n%s", ErrUnavailable, out)
	}
	src := filepath.Join(tmp, "src")
	if _, err := aptGet(src, "source", "redis="+version); err != nil {
		return "", err
	}
	trees, err := filepath.Glob(filepath.Join(src, "redis-*", "tests", "test_helper.tcl"))
	if err != nil || len(trees) != 1 {
		return "", fmt.Errorf("cannot find the unpacked source tree in %s: %d trees with tests/test_helper.tcl", src, len(trees))
	}
	return filepath.Dir(filepath.Dir(trees[0])), nil
}

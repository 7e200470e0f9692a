package main

import (
	"context"
	"debug/elf"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/distcache/distcache/containerimage"
)

// Where the Redis image puts things.
const (
	// RedisServerPath is redis-server's path, on the image's PATH.
	RedisServerPath = "/usr/bin/redis-server"
	// RedisPATH is the image's PATH.
	RedisPATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	// RedisDataDir is the image's working directory, where the operator
	// mounts the data volume.
	RedisDataDir = "/data"
)

// RedisImage is the image of the redis-server at server (a path or a name
// on PATH) with the shared libraries ldd lists for it.
func RedisImage(ctx context.Context, server string, created time.Time) (v1.Image, error) {
	files, err := RedisFiles(ctx, server)
	if err != nil {
		return nil, err
	}
	version, err := redisVersion(ctx, server)
	if err != nil {
		return nil, err
	}
	return containerimage.FromFiles(containerimage.FilesSpec{
		Files:      files,
		Entrypoint: []string{RedisServerPath},
		Env:        []string{"PATH=" + RedisPATH},
		User:       "0:0",
		WorkingDir: RedisDataDir,
		Arch:       runtime.GOARCH,
		Created:    created,
		Labels: map[string]string{
			"org.opencontainers.image.title":       "redis",
			"org.opencontainers.image.description": "redis-server " + version + " and its shared libraries, copied from the host that built the image (hack/localkube/images)",
			"org.opencontainers.image.version":     version,
			"org.opencontainers.image.source":      containerimage.Source,
			"org.opencontainers.image.created":     created.UTC().Format(time.RFC3339),
		},
		CreatedBy: "hack/localkube/images: " + server,
		Comment:   "redis-server " + version,
	})
}

// RedisFiles are the Redis image's files: the directories a container
// needs, /etc/passwd and /etc/group naming root, redis-server at
// RedisServerPath, and every library ldd lists at its path (symbolic links
// followed), the dynamic loader included.
func RedisFiles(ctx context.Context, server string) ([]containerimage.File, error) {
	bin, err := exec.LookPath(server)
	if err != nil {
		return nil, fmt.Errorf("cannot build the Redis image: cannot find redis-server %s (`make redis-server` installs it): %w", server, err)
	}
	ldd, err := exec.LookPath("ldd")
	if err != nil {
		return nil, fmt.Errorf("cannot build the Redis image: cannot find ldd: %w", err)
	}
	out, err := exec.CommandContext(ctx, ldd, bin).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("cannot build the Redis image: cannot list the libraries of %s: %w\n%s", bin, err, out)
	}
	libs, err := ParseLdd(string(out))
	if err != nil {
		return nil, fmt.Errorf("cannot build the Redis image: %s: %w", bin, err)
	}
	interp, err := interpreter(bin)
	if err != nil {
		return nil, fmt.Errorf("cannot build the Redis image: %w", err)
	}
	if interp != "" && !slices.Contains(libs, interp) {
		libs = append(libs, interp)
	}
	slices.Sort(libs)
	data, err := os.ReadFile(bin)
	if err != nil {
		return nil, fmt.Errorf("cannot build the Redis image: %w", err)
	}
	files := []containerimage.File{
		{Path: "/etc", Mode: fs.ModeDir | 0o755},
		{Path: "/etc/passwd", Mode: 0o644, Data: []byte("root:x:0:0:root:/root:/usr/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n")},
		{Path: "/etc/group", Mode: 0o644, Data: []byte("root:x:0:\nnogroup:x:65534:\n")},
		{Path: "/tmp", Mode: fs.ModeDir | fs.ModeSticky | 0o777},
		{Path: RedisDataDir, Mode: fs.ModeDir | 0o755},
		{Path: RedisServerPath, Mode: 0o755, Data: data},
	}
	for _, lib := range libs {
		st, err := os.Stat(lib)
		if err != nil {
			return nil, fmt.Errorf("cannot build the Redis image: %w", err)
		}
		b, err := os.ReadFile(lib)
		if err != nil {
			return nil, fmt.Errorf("cannot build the Redis image: %w", err)
		}
		files = append(files, containerimage.File{Path: lib, Mode: st.Mode().Perm(), Data: b})
	}
	return files, nil
}

// ParseLdd is the paths of the libraries in ldd's output: "name => path
// (address)" lines and the loader's "path (address)"; the vDSO has none.
// A library ldd cannot find is an error.
func ParseLdd(out string) ([]string, error) {
	var paths []string
	for line := range strings.Lines(out) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		target := line
		if lib, rest, ok := strings.Cut(line, "=>"); ok {
			target = strings.TrimSpace(rest)
			if strings.HasPrefix(target, "not found") {
				return nil, fmt.Errorf("cannot find library %s", strings.TrimSpace(lib))
			}
		}
		if fields := strings.Fields(target); len(fields) > 0 && strings.HasPrefix(fields[0], "/") && !slices.Contains(paths, fields[0]) {
			paths = append(paths, fields[0])
		}
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("ldd lists no libraries in %q", out)
	}
	return paths, nil
}

// interpreter is the dynamic loader bin names ("" if static).
func interpreter(bin string) (string, error) {
	f, err := elf.Open(bin)
	if err != nil {
		return "", fmt.Errorf("cannot read %s: %w", bin, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type != elf.PT_INTERP {
			continue
		}
		b := make([]byte, p.Filesz)
		if _, err := p.ReadAt(b, 0); err != nil {
			return "", fmt.Errorf("cannot read the interpreter of %s: %w", bin, err)
		}
		return strings.TrimRight(string(b), "\x00"), nil
	}
	return "", nil
}

// redisVersion is the version redis-server reports ("7.0.15").
func redisVersion(ctx context.Context, server string) (string, error) {
	out, err := exec.CommandContext(ctx, server, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("cannot build the Redis image: cannot run %s --version: %w", server, err)
	}
	for f := range strings.FieldsSeq(string(out)) {
		if v, ok := strings.CutPrefix(f, "v="); ok {
			return v, nil
		}
	}
	return "", fmt.Errorf("cannot build the Redis image: no version in %s --version: %q", server, out)
}

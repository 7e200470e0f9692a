package containerimage

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Where the image puts things.
const (
	// BinaryPath is the entrypoint.
	BinaryPath = "/usr/local/bin/distcache"
	// User is the non-root user and group the image runs as (the
	// convention of distroless' "nonroot").
	User = "65532:65532"
	// Source is the project's repository, for the source label.
	Source = "https://github.com/distcache/distcache"
)

// Spec says what to build.
type Spec struct {
	// Binary is the statically linked distcache executable for Arch.
	Binary []byte
	// Arch is its GOARCH (amd64, arm64, ...).
	Arch string
	// Version is the image's version (its tag and version label).
	Version string
	// Revision is the git commit (the revision label; "" to leave it out).
	Revision string
	// Created is the commit's time: the image's creation time and every
	// file's modification time.
	Created time.Time
}

// Build assembles the image of spec.
func Build(spec Spec) (v1.Image, error) {
	if len(spec.Binary) == 0 {
		return nil, fmt.Errorf("cannot build image: no binary")
	}
	if spec.Arch == "" || spec.Version == "" {
		return nil, fmt.Errorf("cannot build image: architecture %q and version %q must be set", spec.Arch, spec.Version)
	}
	files, err := rootFS(spec)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(files)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("cannot build image layer: %w", err)
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{
		Layer:   layer,
		History: v1.History{Created: v1.Time{Time: spec.Created}, CreatedBy: "containerimage: " + BinaryPath, Comment: "distcache " + spec.Version},
	})
	if err != nil {
		return nil, fmt.Errorf("cannot build image: %w", err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("cannot build image config: %w", err)
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture, cfg.Created = "linux", spec.Arch, v1.Time{Time: spec.Created}
	cfg.Config = v1.Config{
		Entrypoint: []string{BinaryPath},
		User:       User,
		WorkingDir: "/",
		Env:        []string{"PATH=/usr/local/bin"},
		Labels:     Labels(spec),
	}
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		return nil, fmt.Errorf("cannot build image config: %w", err)
	}
	return img, nil
}

// Labels are the image's org.opencontainers.image.* labels.
func Labels(spec Spec) map[string]string {
	l := map[string]string{
		"org.opencontainers.image.title":       "distcache",
		"org.opencontainers.image.description": "Multi-layer caching tier that keeps Redis-backed key-value stores balanced under skewed load",
		"org.opencontainers.image.source":      Source,
		"org.opencontainers.image.url":         Source,
		"org.opencontainers.image.licenses":    "Apache-2.0",
		"org.opencontainers.image.version":     spec.Version,
		"org.opencontainers.image.created":     spec.Created.UTC().Format(time.RFC3339),
	}
	if spec.Revision != "" {
		l["org.opencontainers.image.revision"] = spec.Revision
	}
	return l
}

// rootFS is the layer's tar: the binary, and /etc/passwd and /etc/group
// naming the non-root user, so tools that look the user up find it.
func rootFS(spec Spec) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := []string{"etc/", "tmp/", "usr/", "usr/local/", "usr/local/bin/"}
	for _, d := range dirs {
		mode := int64(0o755)
		if d == "tmp/" {
			mode = 0o1777
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: mode, ModTime: spec.Created}); err != nil {
			return nil, fmt.Errorf("cannot build image layer: %w", err)
		}
	}
	files := []struct {
		name string
		mode int64
		data []byte
	}{
		{"etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		{"etc/group", 0o644, []byte("root:x:0:\nnonroot:x:65532:\n")},
		{BinaryPath[1:], 0o755, spec.Binary},
	}
	for _, f := range files {
		h := &tar.Header{Typeflag: tar.TypeReg, Name: f.name, Mode: f.mode, Size: int64(len(f.data)), ModTime: spec.Created}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("cannot build image layer: %w", err)
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, fmt.Errorf("cannot build image layer: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("cannot build image layer: %w", err)
	}
	return buf.Bytes(), nil
}

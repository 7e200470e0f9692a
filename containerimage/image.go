package containerimage

import (
	"fmt"
	"io/fs"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
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
	return FromFiles(FilesSpec{
		Files:      rootFS(spec),
		Entrypoint: []string{BinaryPath},
		User:       User,
		WorkingDir: "/",
		Env:        []string{"PATH=/usr/local/bin"},
		Arch:       spec.Arch,
		Created:    spec.Created,
		Labels:     Labels(spec),
		CreatedBy:  "containerimage: " + BinaryPath,
		Comment:    "distcache " + spec.Version,
	})
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

// rootFS is the layer's files: the binary, and /etc/passwd and /etc/group
// naming the non-root user, so tools that look the user up find it.
func rootFS(spec Spec) []File {
	return []File{
		{Path: "/etc", Mode: fs.ModeDir | 0o755},
		{Path: "/tmp", Mode: fs.ModeDir | fs.ModeSticky | 0o777},
		{Path: "/usr", Mode: fs.ModeDir | 0o755},
		{Path: "/usr/local", Mode: fs.ModeDir | 0o755},
		{Path: "/usr/local/bin", Mode: fs.ModeDir | 0o755},
		{Path: "/etc/passwd", Mode: 0o644, Data: []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		{Path: "/etc/group", Mode: 0o644, Data: []byte("root:x:0:\nnonroot:x:65532:\n")},
		{Path: BinaryPath, Mode: 0o755, Data: spec.Binary},
	}
}

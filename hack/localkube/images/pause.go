package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/distcache/distcache/containerimage"
)

// PausePackage is the pause program's package.
const PausePackage = "github.com/distcache/distcache/hack/localkube/pause"

// PausePath is the pause image's entrypoint.
const PausePath = "/pause"

// PauseImage builds the pause program (static, for this machine's
// architecture) and the image of it.
func PauseImage(ctx context.Context, created time.Time) (v1.Image, error) {
	bin, err := buildPause(ctx)
	if err != nil {
		return nil, err
	}
	return containerimage.FromFiles(containerimage.FilesSpec{
		Files:      []containerimage.File{{Path: PausePath, Mode: 0o755, Data: bin}},
		Entrypoint: []string{PausePath},
		User:       "65535:65535",
		Arch:       runtime.GOARCH,
		Created:    created,
		Labels: map[string]string{
			"org.opencontainers.image.title":       "pause",
			"org.opencontainers.image.description": "localkube's pod sandbox: waits for SIGTERM and reaps children",
			"org.opencontainers.image.source":      containerimage.Source,
			"org.opencontainers.image.created":     created.UTC().Format(time.RFC3339),
		},
		CreatedBy: "hack/localkube/images: " + PausePackage,
	})
}

// buildPause is the statically linked pause program, built with the go
// command of PATH from the module of the working directory.
func buildPause(ctx context.Context) ([]byte, error) {
	dir, err := os.MkdirTemp("", "pause-")
	if err != nil {
		return nil, fmt.Errorf("cannot build the pause program: %w", err)
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "pause")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w -buildid=", "-o", out, PausePackage)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("cannot build the pause program (run this from the repository): %w\n%s", err, b)
	}
	bin, err := os.ReadFile(out)
	if err != nil {
		return nil, fmt.Errorf("cannot build the pause program: %w", err)
	}
	return bin, nil
}

package containerimage_test

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/distcache/distcache/containerimage"
	"github.com/distcache/distcache/internal/buildinfo"
	"github.com/distcache/distcache/internal/testing/tartest"
)

const testVersion = "v0.1.0-test"

// staticBinary builds a statically linked distcache whose version is
// testVersion, as `make image` does.
func staticBinary(t *testing.T) []byte {
	t.Helper()
	out := filepath.Join(t.TempDir(), "distcache")
	cmd := exec.CommandContext(t.Context(), "go", "build", "-trimpath", "-o", out,
		"-ldflags", "-s -w -X github.com/distcache/distcache/internal/buildinfo.version="+testVersion,
		"github.com/distcache/distcache/cmd/distcache")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cannot build distcache: %v\n%s", err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestArchive builds the image, writes its archive, and opens it the two
// ways its consumers do: as Docker's manifest.json (docker load, kind) and
// as an OCI image layout (ctr images import). It checks the image's
// configuration and that the binary inside runs `version`.
func TestArchive(t *testing.T) {
	created := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	spec := containerimage.Spec{Binary: staticBinary(t), Arch: runtime.GOARCH, Version: testVersion, Revision: "abc123", Created: created}
	img, err := containerimage.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "image.tar")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	ref := buildinfo.Repository + ":" + testVersion
	if err := containerimage.WriteArchive(f, img, ref, created); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	want, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}

	t.Run("docker manifest", func(t *testing.T) {
		loaded, err := tarball.ImageFromPath(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		checkConfig(t, loaded, spec)
		if m, _ := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(path) }); len(m) != 1 || len(m[0].RepoTags) != 1 || m[0].RepoTags[0] != ref {
			t.Fatalf("manifest.json %+v, want one image tagged %s", m, ref)
		}
		runVersion(t, loaded)
	})
	t.Run("OCI layout", func(t *testing.T) {
		dir := tartest.ExtractFile(t, path)
		idx, err := layout.ImageIndexFromPath(dir)
		if err != nil {
			t.Fatal(err)
		}
		im, err := idx.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		if len(im.Manifests) != 1 || im.Manifests[0].Digest != want {
			t.Fatalf("index.json lists %+v, want the image %s", im.Manifests, want)
		}
		if got := im.Manifests[0].Annotations["io.containerd.image.name"]; got != ref {
			t.Fatalf("containerd image name %q, want %q", got, ref)
		}
		if got := im.Manifests[0].Annotations["org.opencontainers.image.ref.name"]; got != testVersion {
			t.Fatalf("OCI ref name %q, want %q", got, testVersion)
		}
		loaded, err := idx.Image(want)
		if err != nil {
			t.Fatal(err)
		}
		checkConfig(t, loaded, spec)
	})
}

func checkConfig(t *testing.T, img v1.Image, spec containerimage.Spec) {
	t.Helper()
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.OS != "linux" || cfg.Architecture != spec.Arch {
		t.Errorf("platform %s/%s, want linux/%s", cfg.OS, cfg.Architecture, spec.Arch)
	}
	if len(cfg.Config.Entrypoint) != 1 || cfg.Config.Entrypoint[0] != containerimage.BinaryPath {
		t.Errorf("entrypoint %q, want [%s]", cfg.Config.Entrypoint, containerimage.BinaryPath)
	}
	if cfg.Config.User != containerimage.User || cfg.Config.User == "" || cfg.Config.User[0] == '0' {
		t.Errorf("user %q, want the non-root %s", cfg.Config.User, containerimage.User)
	}
	for k, v := range map[string]string{
		"org.opencontainers.image.version":  spec.Version,
		"org.opencontainers.image.revision": spec.Revision,
		"org.opencontainers.image.created":  "2026-11-25T12:00:00Z",
		"org.opencontainers.image.source":   containerimage.Source,
		"org.opencontainers.image.title":    "distcache",
	} {
		if got := cfg.Config.Labels[k]; got != v {
			t.Errorf("label %s = %q, want %q", k, got, v)
		}
	}
	if !cfg.Created.Equal(spec.Created) {
		t.Errorf("created %v, want %v", cfg.Created, spec.Created)
	}
}

// runVersion extracts the image's entrypoint and runs its `version`.
func runVersion(t *testing.T, img v1.Image) {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	bin := filepath.Join(t.TempDir(), "distcache")
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			t.Fatalf("no %s in the image", containerimage.BinaryPath)
		}
		if err != nil {
			t.Fatal(err)
		}
		if "/"+h.Name != containerimage.BinaryPath {
			continue
		}
		if h.Mode&0o111 == 0 {
			t.Fatalf("%s has mode %o: not executable", h.Name, h.Mode)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(bin, b, 0o755); err != nil {
			t.Fatal(err)
		}
		break
	}
	checkStatic(t, bin)
	out, err := exec.CommandContext(t.Context(), bin, "version", "-o", "json").Output()
	if err != nil {
		t.Fatalf("the image's binary cannot run version: %v", err)
	}
	var info buildinfo.Info
	if err := json.Unmarshal(out, &info); err != nil {
		t.Fatalf("version printed %q: %v", out, err)
	}
	if info.Version != testVersion || info.Platform != "linux/"+runtime.GOARCH {
		t.Fatalf("the image's binary is %+v, want version %s for linux/%s", info, testVersion, runtime.GOARCH)
	}
}

// TestReproducible checks that the same binary and spec give the same
// image digest and the same archive bytes.
func TestReproducible(t *testing.T) {
	spec := containerimage.Spec{Binary: []byte("#!not really a binary\n"), Arch: "arm64", Version: "v1.2.3", Created: time.Unix(1_700_000_000, 0).UTC()}
	var archives [2]bytes.Buffer
	var digests [2]v1.Hash
	for i := range 2 {
		img, err := containerimage.Build(spec)
		if err != nil {
			t.Fatal(err)
		}
		if digests[i], err = img.Digest(); err != nil {
			t.Fatal(err)
		}
		if err := containerimage.WriteArchive(&archives[i], img, "example.test/distcache:v1.2.3", spec.Created); err != nil {
			t.Fatal(err)
		}
	}
	if digests[0] != digests[1] || !bytes.Equal(archives[0].Bytes(), archives[1].Bytes()) {
		t.Fatalf("two builds differ: %s and %s", digests[0], digests[1])
	}
}

func TestBuildRejects(t *testing.T) {
	good := containerimage.Spec{Binary: []byte("x"), Arch: "amd64", Version: "v1"}
	tests := []struct {
		name string
		edit func(*containerimage.Spec)
	}{
		{"no binary", func(s *containerimage.Spec) { s.Binary = nil }},
		{"no architecture", func(s *containerimage.Spec) { s.Arch = "" }},
		{"no version", func(s *containerimage.Spec) { s.Version = "" }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := good
			tc.edit(&s)
			if _, err := containerimage.Build(s); err == nil {
				t.Fatal("built an image")
			}
		})
	}
	img, err := containerimage.Build(good)
	if err != nil {
		t.Fatal(err)
	}
	if err := containerimage.WriteArchive(io.Discard, img, "Not A Reference!", time.Time{}); err == nil {
		t.Fatal("wrote an archive for a bad reference")
	}
}

// checkStatic checks that the executable at path needs no dynamic loader:
// the image has no libc to offer one.
func checkStatic(t *testing.T, path string) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatalf("the image's binary is not an ELF executable: %v", err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Fatal("the image's binary is dynamically linked (it has an interpreter)")
		}
	}
}

package containerimage_test

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/distcache/distcache/containerimage"
	"github.com/distcache/distcache/internal/testing/tartest"
)

func filesSpec() containerimage.FilesSpec {
	return containerimage.FilesSpec{
		Files: []containerimage.File{
			{Path: "/tmp", Mode: fs.ModeDir | fs.ModeSticky | 0o777},
			{Path: "/usr/bin/tool", Mode: 0o755, Data: []byte("tool")},
			{Path: "/lib/x86_64-linux-gnu/libc.so.6", Mode: 0o644, Data: []byte("libc")},
			{Path: "/data", Mode: fs.ModeDir | 0o700},
		},
		Entrypoint: []string{"/usr/bin/tool"},
		Env:        []string{"PATH=/usr/bin"},
		User:       "0:0",
		Arch:       "amd64",
		Created:    time.Unix(1_700_000_000, 0).UTC(),
		Labels:     map[string]string{"l": "v"},
	}
}

// TestFromFiles checks the layer's entries, in order with their parent
// directories and modes, and the config.
func TestFromFiles(t *testing.T) {
	spec := filesSpec()
	img, err := containerimage.FromFiles(spec)
	if err != nil {
		t.Fatal(err)
	}
	type entry struct {
		name string
		mode int64
		data string
	}
	var got []entry
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("%d layers (%v), want 1", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !h.ModTime.Equal(spec.Created) {
			t.Errorf("%s: time %v, want %v", h.Name, h.ModTime, spec.Created)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, entry{h.Name, h.Mode, string(b)})
	}
	want := []entry{
		{"tmp/", 0o1777, ""},
		{"usr/", 0o755, ""},
		{"usr/bin/", 0o755, ""},
		{"usr/bin/tool", 0o755, "tool"},
		{"lib/", 0o755, ""},
		{"lib/x86_64-linux-gnu/", 0o755, ""},
		{"lib/x86_64-linux-gnu/libc.so.6", 0o644, "libc"},
		{"data/", 0o700, ""},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("layer holds\n%v\nwant\n%v", got, want)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.Config
	if cfg.Architecture != "amd64" || cfg.OS != "linux" || !slices.Equal(c.Entrypoint, spec.Entrypoint) || !slices.Equal(c.Env, spec.Env) ||
		c.User != "0:0" || c.WorkingDir != "/" || c.Labels["l"] != "v" || !cfg.Created.Equal(spec.Created) {
		t.Fatalf("config %+v on %s/%s created %v, want the spec's", c, cfg.OS, cfg.Architecture, cfg.Created)
	}
	// The same spec, the same digest.
	again, err := containerimage.FromFiles(filesSpec())
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := img.Digest()
	d2, _ := again.Digest()
	if d1 != d2 {
		t.Fatalf("two builds differ: %s and %s", d1, d2)
	}
}

func TestFromFilesRejects(t *testing.T) {
	tests := []struct {
		name string
		edit func(*containerimage.FilesSpec)
	}{
		{"no files", func(s *containerimage.FilesSpec) { s.Files = nil }},
		{"no architecture", func(s *containerimage.FilesSpec) { s.Arch = "" }},
		{"relative path", func(s *containerimage.FilesSpec) { s.Files[1].Path = "usr/bin/tool" }},
		{"unclean path", func(s *containerimage.FilesSpec) { s.Files[1].Path = "/usr/../bin/tool" }},
		{"root", func(s *containerimage.FilesSpec) { s.Files[0].Path = "/" }},
		{"twice", func(s *containerimage.FilesSpec) { s.Files[2].Path = s.Files[1].Path }},
		{"a directory then a file", func(s *containerimage.FilesSpec) { s.Files[2].Path, s.Files[2].Mode = "/usr/bin", 0o644 }},
		{"below a file", func(s *containerimage.FilesSpec) { s.Files[2].Path = "/usr/bin/tool/libc.so.6" }},
		{"symbolic link", func(s *containerimage.FilesSpec) { s.Files[1].Mode |= fs.ModeSymlink }},
		{"directory with data", func(s *containerimage.FilesSpec) { s.Files[3].Data = []byte("x") }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := filesSpec()
			tc.edit(&s)
			if _, err := containerimage.FromFiles(s); err == nil {
				t.Fatal("built an image")
			}
		})
	}
}

// TestArchiveDockerHub checks that an image of Docker Hub is named as
// containerd and Docker name it (docker.io/library/redis:7.4, which a pod's
// "redis:7.4" resolves to), not as go-containerregistry does
// (index.docker.io/...).
func TestArchiveDockerHub(t *testing.T) {
	img, err := containerimage.FromFiles(filesSpec())
	if err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{"docker.io/library/redis:7.4", "index.docker.io/library/redis:7.4"} {
		var buf bytes.Buffer
		if err := containerimage.WriteArchive(&buf, img, ref, time.Time{}); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "redis.tar")
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		m, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(path) })
		if err != nil || len(m) != 1 || !slices.Equal(m[0].RepoTags, []string{"docker.io/library/redis:7.4"}) {
			t.Errorf("%s: manifest.json %+v (%v), want docker.io/library/redis:7.4", ref, m, err)
		}
		idx, err := layout.ImageIndexFromPath(tartest.ExtractFile(t, path))
		if err != nil {
			t.Fatal(err)
		}
		im, err := idx.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		if got := im.Manifests[0].Annotations["io.containerd.image.name"]; got != "docker.io/library/redis:7.4" {
			t.Errorf("%s: containerd's name %q, want docker.io/library/redis:7.4", ref, got)
		}
	}
}

package main

import (
	"debug/elf"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/distcache/distcache/containerimage"
	"github.com/distcache/distcache/internal/testing/tartest"
)

var created = time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)

func TestParseLdd(t *testing.T) {
	out := `	linux-vdso.so.1 (0x00007ffd5a9e0000)
	libm.so.6 => /lib/x86_64-linux-gnu/libm.so.6 (0x00007f020ccb2000)
	libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f020be1e000)
	/lib64/ld-linux-x86-64.so.2 (0x00007f020cdb5000)
	libm.so.6 => /lib/x86_64-linux-gnu/libm.so.6 (0x00007f020ccb2000)
`
	got, err := ParseLdd(out)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/lib/x86_64-linux-gnu/libm.so.6", "/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2"}
	if !slices.Equal(got, want) {
		t.Fatalf("ParseLdd = %q, want %q", got, want)
	}
	for _, bad := range []string{"\tlibfoo.so.1 => not found\n\tlibc.so.6 => /lib/libc.so.6 (0x1)\n", "\tlinux-vdso.so.1 (0x1)\n", ""} {
		if got, err := ParseLdd(bad); err == nil {
			t.Errorf("ParseLdd(%q) = %q, want an error", bad, got)
		}
	}
}

func TestPauseImage(t *testing.T) {
	img, err := PauseImage(t.Context(), created)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), PauseArchive)
	if err := containerimage.WriteArchiveFile(path, img, PauseRef, created); err != nil {
		t.Fatal(err)
	}
	loaded := readBack(t, path, img, PauseRef, "registry.k8s.io/pause:3.10")
	cfg := config(t, loaded)
	if !slices.Equal(cfg.Config.Entrypoint, []string{"/pause"}) {
		t.Errorf("entrypoint %q, want [/pause]", cfg.Config.Entrypoint)
	}
	root := extract(t, loaded)
	if names := entries(t, root); !slices.Equal(names, []string{"/pause"}) {
		t.Errorf("the image holds %q, want only /pause", names)
	}
	checkExecutable(t, filepath.Join(root, "pause"))
	f, err := elf.Open(filepath.Join(root, "pause"))
	if err != nil {
		t.Fatalf("/pause is not an ELF executable: %v", err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Fatal("/pause is dynamically linked: the image has no loader")
		}
	}
	if want, ok := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[runtime.GOARCH]; ok && f.Machine != want {
		t.Errorf("/pause is for %v, not %s", f.Machine, runtime.GOARCH)
	}
}

// TestRedisRefIsTheOperatorDefault checks that RedisRef is what a pod of
// the operator asks for when the CacheCluster names no Redis image: the
// CRD's default of spec.images.redis.
func TestRedisRefIsTheOperatorDefault(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "crds", "distcache.io_cacheclusters.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(b, &crd); err != nil {
		t.Fatal(err)
	}
	if len(crd.Spec.Versions) == 0 || crd.Spec.Versions[0].Schema == nil {
		t.Fatal("the CRD has no schema")
	}
	redis := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["images"].Properties["redis"]
	if redis.Default == nil {
		t.Fatal("spec.images.redis has no default")
	}
	var def string
	if err := yaml.Unmarshal(redis.Default.Raw, &def); err != nil {
		t.Fatal(err)
	}
	want, err := name.ParseReference(def)
	if err != nil {
		t.Fatal(err)
	}
	got, err := name.ParseReference(RedisRef)
	if err != nil {
		t.Fatal(err)
	}
	if got.Name() != want.Name() {
		t.Fatalf("RedisRef %s is %s; the operator's default %q is %s", RedisRef, got.Name(), def, want.Name())
	}
}

// redisImage builds the Redis image from this machine's redis-server, or
// skips the test where it is not installed.
func redisImage(t *testing.T) v1.Image {
	t.Helper()
	if _, err := os.Stat("/usr/bin/redis-server"); err != nil {
		t.Skipf("no redis-server (make redis-server installs it): %v", err)
	}
	img, err := RedisImage(t.Context(), "/usr/bin/redis-server", created)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func TestRedisImage(t *testing.T) {
	img := redisImage(t)
	path := filepath.Join(t.TempDir(), RedisArchive)
	if err := containerimage.WriteArchiveFile(path, img, RedisRef, created); err != nil {
		t.Fatal(err)
	}
	loaded := readBack(t, path, img, RedisRef, "docker.io/library/redis:7.4")
	cfg := config(t, loaded)
	if !slices.Equal(cfg.Config.Entrypoint, []string{RedisServerPath}) || !slices.Contains(cfg.Config.Env, "PATH="+RedisPATH) {
		t.Errorf("entrypoint %q and env %q, want [%s] and PATH=%s", cfg.Config.Entrypoint, cfg.Config.Env, RedisServerPath, RedisPATH)
	}
	if v := cfg.Config.Labels["org.opencontainers.image.version"]; v == "" {
		t.Error("no version label")
	}
	root := extract(t, loaded)
	names := entries(t, root)
	for _, want := range []string{"/usr/bin/redis-server", "/etc/passwd", "/etc/group", "/data/", "/tmp/", "/lib64/ld-linux-x86-64.so.2"} {
		if runtime.GOARCH != "amd64" && strings.HasPrefix(want, "/lib64") {
			continue
		}
		if !slices.Contains(names, want) {
			t.Errorf("no %s in the image (it holds %q)", want, names)
		}
	}
	checkExecutable(t, filepath.Join(root, "usr", "bin", "redis-server"))
	if st, err := os.Stat(filepath.Join(root, "tmp")); err != nil || st.Mode()&fs.ModeSticky == 0 || st.Mode().Perm() != 0o777 {
		t.Errorf("/tmp is %v (%v), want drwxrwxrwt", st.Mode(), err)
	}
	passwd, err := os.ReadFile(filepath.Join(root, "etc", "passwd"))
	if err != nil || !strings.HasPrefix(string(passwd), "root:x:0:0:") {
		t.Errorf("/etc/passwd %q (%v) does not name root", passwd, err)
	}
	runFromRoot(t, root)
}

// TestRedisReproducible builds the Redis image twice.
func TestRedisReproducible(t *testing.T) {
	var digests [2]v1.Hash
	for i := range digests {
		var err error
		if digests[i], err = redisImage(t).Digest(); err != nil {
			t.Fatal(err)
		}
	}
	if digests[0] != digests[1] {
		t.Fatalf("two builds differ: %s and %s", digests[0], digests[1])
	}
}

func TestRedisFilesErrors(t *testing.T) {
	_, err := RedisFiles(t.Context(), filepath.Join(t.TempDir(), "redis-server"))
	if err == nil || !strings.Contains(err.Error(), "cannot find redis-server") {
		t.Errorf("a missing redis-server gave %v", err)
	}
	t.Setenv("PATH", t.TempDir())
	if _, err := os.Stat("/usr/bin/redis-server"); err != nil {
		t.Skip("no redis-server")
	}
	_, err = RedisFiles(t.Context(), "/usr/bin/redis-server")
	if err == nil || !strings.Contains(err.Error(), "cannot find ldd") {
		t.Errorf("a missing ldd gave %v", err)
	}
}

// readBack opens the archive at path as `docker load` (manifest.json) and
// `ctr images import` (the OCI layout's index.json) do, checks that both
// name the image ref (containerd's name: wantName) and that the layout
// holds built, and returns the image manifest.json describes.
func readBack(t *testing.T, path string, built v1.Image, ref, wantName string) v1.Image {
	t.Helper()
	img, err := tarball.ImageFromPath(path, nil)
	if err != nil {
		t.Fatalf("%s as a docker archive: %v", path, err)
	}
	m, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(path) })
	if err != nil || len(m) != 1 || !slices.Equal(m[0].RepoTags, []string{wantName}) {
		t.Fatalf("manifest.json %+v (%v), want one image tagged %s", m, err, wantName)
	}
	dir := tartest.ExtractFile(t, path)
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	want, err := built.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 || im.Manifests[0].Digest != want {
		t.Fatalf("index.json lists %+v, want %s", im.Manifests, want)
	}
	if got := im.Manifests[0].Annotations["io.containerd.image.name"]; got != wantName {
		t.Fatalf("containerd's name of %s is %q, want %q", ref, got, wantName)
	}
	fromLayout, err := idx.Image(want)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fromLayout.Layers(); err != nil {
		t.Fatal(err)
	}
	cfg := config(t, img)
	if cfg.OS != "linux" || cfg.Architecture != runtime.GOARCH || !cfg.Created.Equal(created) {
		t.Errorf("image for %s/%s created %v, want linux/%s created %v", cfg.OS, cfg.Architecture, cfg.Created, runtime.GOARCH, created)
	}
	return img
}

func config(t *testing.T, img v1.Image) *v1.ConfigFile {
	t.Helper()
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// extract writes img's file system into a new directory, with the layer's
// modes.
func extract(t *testing.T, img v1.Image) string {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	return tartest.Extract(t, rc)
}

// entries are the paths under root, directories with a trailing slash.
func entries(t *testing.T, root string) []string {
	t.Helper()
	var names []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		n := "/" + filepath.ToSlash(strings.TrimPrefix(p, root+string(filepath.Separator)))
		if d.IsDir() {
			n += "/"
		}
		names = append(names, n)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

func checkExecutable(t *testing.T, path string) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm()&0o111 != 0o111 {
		t.Errorf("%s has mode %v: not executable by everyone", path, st.Mode())
	}
}

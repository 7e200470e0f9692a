package containerimage

import (
	"archive/tar"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// ociLayout is the oci-layout file of an OCI image layout.
const ociLayout = `{"imageLayoutVersion":"1.0.0"}`

// dockerManifest is one entry of Docker's manifest.json.
type dockerManifest struct {
	Config   string
	RepoTags []string
	Layers   []string
}

// WriteArchive writes img, tagged ref (repository:tag), to w as an OCI image
// layout in a tar that also holds Docker's manifest.json (package doc).
// Every entry's time is mtime, so the archive is reproducible.
func WriteArchive(w io.Writer, img v1.Image, ref string, mtime time.Time) error {
	tag, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		return fmt.Errorf("cannot write image archive: image reference %q: %w", ref, err)
	}
	a := &archive{tw: tar.NewWriter(w), mtime: mtime}
	if err := a.image(img, tag); err != nil {
		return fmt.Errorf("cannot write image archive: %w", err)
	}
	return nil
}

// image writes img's blobs, the layout's index and Docker's manifest.
func (a *archive) image(img v1.Image, tag name.Tag) error {
	manifest, err := img.RawManifest()
	if err != nil {
		return err
	}
	mdigest, err := img.Digest()
	if err != nil {
		return err
	}
	config, err := img.RawConfigFile()
	if err != nil {
		return err
	}
	cdigest, err := img.ConfigName()
	if err != nil {
		return err
	}
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	dm := dockerManifest{Config: blobPath(cdigest), RepoTags: []string{fullName(tag)}}
	a.file("oci-layout", []byte(ociLayout))
	a.file(blobPath(cdigest), config)
	for _, l := range layers {
		d, err := l.Digest()
		if err != nil {
			return err
		}
		a.layer(blobPath(d), l)
		dm.Layers = append(dm.Layers, blobPath(d))
	}
	a.file(blobPath(mdigest), manifest)
	index, err := json.Marshal(v1.IndexManifest{
		SchemaVersion: 2,
		MediaType:     types.OCIImageIndex,
		Manifests: []v1.Descriptor{{
			MediaType: types.OCIManifestSchema1,
			Size:      int64(len(manifest)),
			Digest:    mdigest,
			Annotations: map[string]string{
				"io.containerd.image.name":          fullName(tag),
				"org.opencontainers.image.ref.name": tag.TagStr(),
			},
		}},
	})
	if err != nil {
		return err
	}
	a.file("index.json", index)
	docker, err := json.Marshal([]dockerManifest{dm})
	if err != nil {
		return err
	}
	a.file("manifest.json", docker)
	if a.err != nil {
		return a.err
	}
	return a.tw.Close()
}

// fullName is tag's full name as containerd and Docker normalize it: Docker
// Hub's registry is docker.io there (go-containerregistry says
// index.docker.io), so that a pod's "redis:7.4" finds the imported
// docker.io/library/redis:7.4.
func fullName(tag name.Tag) string {
	if tag.RegistryStr() == name.DefaultRegistry {
		return "docker.io/" + tag.RepositoryStr() + ":" + tag.TagStr()
	}
	return tag.Name()
}

// archive writes tar entries, keeping the first error.
type archive struct {
	tw    *tar.Writer
	mtime time.Time
	dirs  map[string]bool
	err   error
}

func (a *archive) dir(name string) {
	if a.dirs == nil {
		a.dirs = map[string]bool{}
	}
	if a.err != nil || a.dirs[name] {
		return
	}
	a.dirs[name] = true
	a.err = a.tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: 0o755, ModTime: a.mtime})
}

func (a *archive) header(name string, size int64) {
	if strings.HasPrefix(name, blobDir) {
		a.dir("blobs/")
		a.dir(blobDir)
	}
	if a.err == nil {
		a.err = a.tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: size, ModTime: a.mtime})
	}
}

func (a *archive) file(name string, data []byte) {
	a.header(name, int64(len(data)))
	if a.err == nil {
		_, a.err = a.tw.Write(data)
	}
}

// layer writes l's compressed blob.
func (a *archive) layer(name string, l v1.Layer) {
	if a.err != nil {
		return
	}
	size, err := l.Size()
	if err != nil {
		a.err = err
		return
	}
	rc, err := l.Compressed()
	if err != nil {
		a.err = err
		return
	}
	defer rc.Close()
	a.header(name, size)
	if a.err == nil {
		_, a.err = io.Copy(a.tw, rc)
	}
}

// blobDir holds the blobs of the layout's only algorithm.
const blobDir = "blobs/sha256/"

func blobPath(h v1.Hash) string { return "blobs/" + h.Algorithm + "/" + h.Hex }

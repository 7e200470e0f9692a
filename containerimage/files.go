package containerimage

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// File is one entry of an image's only layer: a regular file, or a
// directory when Mode has fs.ModeDir.
type File struct {
	// Path is absolute ("/usr/bin/redis-server").
	Path string
	// Mode holds the permissions, fs.ModeDir for a directory and
	// fs.ModeSticky for a sticky one (/tmp).
	Mode fs.FileMode
	// Data is a regular file's contents.
	Data []byte
}

// FilesSpec says what FromFiles builds: an image of one layer holding
// Files, on an empty base.
type FilesSpec struct {
	// Files in the order the layer holds them; the parent directories a
	// file needs and no earlier entry names come just before it (0755).
	Files []File
	// Entrypoint, Env, User and WorkingDir ("/" if empty) of the config.
	Entrypoint []string
	Env        []string
	User       string
	WorkingDir string
	// Arch is the GOARCH of the image's executables.
	Arch string
	// Created is the image's creation time and every file's modification
	// time.
	Created time.Time
	// Labels of the config.
	Labels map[string]string
	// CreatedBy and Comment describe the layer in the image's history.
	CreatedBy, Comment string
}

// FromFiles assembles the image of spec. The same spec gives the same
// digest.
func FromFiles(spec FilesSpec) (v1.Image, error) {
	if len(spec.Files) == 0 {
		return nil, fmt.Errorf("cannot build image: no files")
	}
	if spec.Arch == "" {
		return nil, fmt.Errorf("cannot build image: no architecture")
	}
	files, err := layerTar(spec.Files, spec.Created)
	if err != nil {
		return nil, fmt.Errorf("cannot build image layer: %w", err)
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
		History: v1.History{Created: v1.Time{Time: spec.Created}, CreatedBy: spec.CreatedBy, Comment: spec.Comment},
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
	wd := spec.WorkingDir
	if wd == "" {
		wd = "/"
	}
	cfg.Config = v1.Config{
		Entrypoint: spec.Entrypoint,
		User:       spec.User,
		WorkingDir: wd,
		Env:        spec.Env,
		Labels:     spec.Labels,
	}
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		return nil, fmt.Errorf("cannot build image config: %w", err)
	}
	return img, nil
}

// layerTar is the tar of files, every entry's time mtime.
func layerTar(files []File, mtime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	isDir := map[string]bool{} // the entries so far, by name without a trailing slash
	var add func(name string, f File) error
	add = func(name string, f File) error {
		key := strings.TrimSuffix(name, "/")
		if _, ok := isDir[key]; ok {
			return fmt.Errorf("/%s is in the layer twice", key)
		}
		// The parent directories first.
		if dir := path.Dir(key); dir != "." {
			dirSeen, ok := isDir[dir]
			if ok && !dirSeen {
				return fmt.Errorf("/%s is below the file /%s", key, dir)
			}
			if !ok {
				if err := add(dir+"/", File{Mode: fs.ModeDir | 0o755}); err != nil {
					return err
				}
			}
		}
		isDir[key] = f.Mode.IsDir()
		h := &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: tarMode(f.Mode), Size: int64(len(f.Data)), ModTime: mtime}
		if f.Mode.IsDir() {
			h.Typeflag, h.Size = tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err := tw.Write(f.Data)
		return err
	}
	for _, f := range files {
		name, err := entryName(f)
		if err != nil {
			return nil, err
		}
		if err := add(name, f); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// entryName is f's name in the layer: its path without the leading slash,
// with a trailing one for a directory.
func entryName(f File) (string, error) {
	if !path.IsAbs(f.Path) || path.Clean(f.Path) != strings.TrimSuffix(f.Path, "/") || f.Path == "/" {
		return "", fmt.Errorf("file path %q is not a clean absolute path below /", f.Path)
	}
	if f.Mode.Type()&^fs.ModeDir != 0 {
		return "", fmt.Errorf("%s: only regular files and directories are supported (mode %v)", f.Path, f.Mode)
	}
	name := strings.TrimSuffix(f.Path[1:], "/")
	if f.Mode.IsDir() {
		if len(f.Data) > 0 {
			return "", fmt.Errorf("directory %s has data", f.Path)
		}
		name += "/"
	}
	return name, nil
}

// tarMode is the tar header's mode of m: its permissions and sticky,
// setuid and setgid bits.
func tarMode(m fs.FileMode) int64 {
	mode := int64(m.Perm())
	if m&fs.ModeSticky != 0 {
		mode |= 0o1000
	}
	if m&fs.ModeSetgid != 0 {
		mode |= 0o2000
	}
	if m&fs.ModeSetuid != 0 {
		mode |= 0o4000
	}
	return mode
}

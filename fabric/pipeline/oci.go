package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// TitleAnnotation names a layer's file in an OCI artefact, as `oras push`
// records it.
const TitleAnnotation = "org.opencontainers.image.title"

// MaxBlobBytes bounds each file pulled from an artefact.
const MaxBlobBytes = 256 << 20

// ErrArtefact is wrapped when an OCI artefact is not a compiled program:
// no manifest, or no layer for the P4Info or the device config.
var ErrArtefact = errors.New("not a compiled program")

// Artefact is a compiled program pulled from an OCI registry.
type Artefact struct {
	// P4Info and DeviceConfig are the two files' bytes.
	P4Info, DeviceConfig []byte
	// Digest is the artefact's manifest digest (sha256:…): the build's
	// identity in the registry, whatever tag named it.
	Digest string
}

// Resolve is the manifest digest ref names now, by a HEAD request (a tag
// may move; a digest does not). keys is nil for anonymous access.
func Resolve(ctx context.Context, ref string, keys authn.Keychain) (string, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return "", fmt.Errorf("cannot resolve %s: %w", ref, err)
	}
	d, err := remote.Head(r, remoteOptions(ctx, keys)...)
	if err != nil {
		return "", fmt.Errorf("cannot resolve %s: %w", ref, err)
	}
	return d.Digest.String(), nil
}

// Pull fetches the artefact ref names: an OCI or Docker image manifest
// whose layers carry their file names (TitleAnnotation), one named
// p4infoKey and one deviceConfigKey, as `oras push` writes them. keys is
// nil for anonymous access.
func Pull(ctx context.Context, ref, p4infoKey, deviceConfigKey string, keys authn.Keychain) (*Artefact, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return nil, fmt.Errorf("cannot pull %s: %w", ref, err)
	}
	opts := remoteOptions(ctx, keys)
	desc, err := remote.Get(r, opts...)
	if err != nil {
		return nil, fmt.Errorf("cannot pull %s: %w", ref, err)
	}
	if desc.MediaType != types.OCIManifestSchema1 && desc.MediaType != types.DockerManifestSchema2 {
		return nil, fmt.Errorf("cannot pull %s: its manifest is %s, want an OCI image manifest (oras push writes one): %w", ref, desc.MediaType, ErrArtefact)
	}
	img, err := desc.Image()
	if err != nil {
		return nil, fmt.Errorf("cannot pull %s: %w", ref, err)
	}
	m, err := img.Manifest()
	if err != nil {
		return nil, fmt.Errorf("cannot read the manifest of %s: %w", ref, err)
	}
	a := &Artefact{Digest: desc.Digest.String()}
	var titles []string
	for _, l := range m.Layers {
		title := l.Annotations[TitleAnnotation]
		titles = append(titles, title)
		var dst *[]byte
		switch title {
		case p4infoKey:
			dst = &a.P4Info
		case deviceConfigKey:
			dst = &a.DeviceConfig
		default:
			continue
		}
		if l.Size > MaxBlobBytes {
			return nil, fmt.Errorf("cannot pull %s: %s holds %d bytes, more than %d: %w", ref, title, l.Size, MaxBlobBytes, ErrArtefact)
		}
		if *dst, err = fetchBlob(r.Context().Digest(l.Digest.String()), opts); err != nil {
			return nil, fmt.Errorf("cannot pull %s from %s: %w", title, ref, err)
		}
	}
	for _, key := range []string{p4infoKey, deviceConfigKey} {
		if !slices.Contains(titles, key) {
			return nil, fmt.Errorf("cannot pull %s: no layer titled %q (the layers are %q): %w", ref, key, titles, ErrArtefact)
		}
	}
	return a, nil
}

// fetchBlob reads one blob, checked against its digest.
func fetchBlob(d name.Digest, opts []remote.Option) ([]byte, error) {
	l, err := remote.Layer(d, opts...)
	if err != nil {
		return nil, err
	}
	rc, err := l.Compressed() // the blob as stored: no decompression
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, MaxBlobBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxBlobBytes {
		return nil, fmt.Errorf("blob %s holds more than %d bytes: %w", d.DigestStr(), MaxBlobBytes, ErrArtefact)
	}
	return b, nil
}

func remoteOptions(ctx context.Context, keys authn.Keychain) []remote.Option {
	opts := []remote.Option{remote.WithContext(ctx)}
	if keys != nil {
		opts = append(opts, remote.WithAuthFromKeychain(keys))
	}
	return opts
}

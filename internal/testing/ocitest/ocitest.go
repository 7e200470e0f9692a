// Package ocitest runs an OCI registry inside a test process —
// go-containerregistry's pkg/registry, a real implementation of the
// distribution API, on loopback — and pushes artefacts to it as `oras
// push` lays them out: an OCI image manifest whose layers are files,
// each titled with its name.
package ocitest

import (
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Registry is a running registry.
type Registry struct {
	// Host is its host:port on loopback (plain HTTP, as clients assume
	// for loopback).
	Host string
	auth authn.Authenticator
}

// Option shapes a registry.
type Option func(*options)

type options struct{ user, password string }

// WithBasicAuth makes the registry require user and password (HTTP basic
// authentication) for every request.
func WithBasicAuth(user, password string) Option {
	return func(o *options) { o.user, o.password = user, password }
}

// Start runs a registry on loopback until the test ends.
func Start(t testing.TB, opts ...Option) *Registry {
	t.Helper()
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	var h http.Handler = registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	r := &Registry{auth: authn.Anonymous}
	if o.user != "" {
		inner := h
		h = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			if u, p, ok := req.BasicAuth(); !ok || u != o.user || p != o.password {
				w.Header().Set("WWW-Authenticate", `Basic realm="ocitest"`)
				http.Error(w, "authentication required", http.StatusUnauthorized)
				return
			}
			inner.ServeHTTP(w, req)
		})
		r.auth = &authn.Basic{Username: o.user, Password: o.password}
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	r.Host = srv.Listener.Addr().String()
	return r
}

// File is one file of an artefact.
type File struct {
	Name      string
	MediaType string
	Content   []byte
}

// Push pushes files to the registry as repository:tag, one layer a file
// titled with its name, and returns the manifest's digest.
func (r *Registry) Push(t testing.TB, repoTag string, files ...File) string {
	t.Helper()
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, "application/vnd.oci.empty.v1+json")
	for _, f := range files {
		var err error
		img, err = mutate.Append(img, mutate.Addendum{
			Layer:       static.NewLayer(f.Content, types.MediaType(f.MediaType)),
			Annotations: map[string]string{"org.opencontainers.image.title": f.Name},
			MediaType:   types.MediaType(f.MediaType),
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	ref, err := name.ParseReference(r.Host + "/" + repoTag)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img, remote.WithAuth(r.auth), remote.WithContext(t.Context())); err != nil {
		t.Fatalf("cannot push %s: %v", ref, err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}

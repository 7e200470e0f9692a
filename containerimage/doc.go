// Package containerimage builds the distcache container image without a
// container runtime, the way ko does: the statically linked binary is one
// layer on an empty base, and the manifest and config are assembled in Go
// with go-containerregistry. One image serves every role — operator, cache
// node, storage shim — chosen by the command its pod runs.
//
// The image runs as a non-root user (UID/GID 65532, named in the layer's
// /etc/passwd and /etc/group) with the binary as its entrypoint, carries the
// org.opencontainers.image.* labels, and is reproducible: every file time
// and the image's creation time are the commit's time, so the same commit
// and binary give the same digest.
//
// WriteArchive writes it as a tar that `docker load`, `kind load
// image-archive`, `ctr images import` and `podman load` accept: an OCI image
// layout (oci-layout, index.json, blobs/) that also carries Docker's
// manifest.json pointing at the same blobs, as `docker save` writes since
// Docker 25. It names an image of Docker Hub docker.io/library/NAME:TAG, as
// containerd and Docker do, so that a pod's "redis:7.4" finds it.
//
// FromFiles builds other images the same way, one layer of the files it is
// given on an empty base (Build is FromFiles with the distcache binary):
// hack/localkube/images builds localkube's pause and Redis images with it.
package containerimage

# The distcache image for people with Docker. `make image` builds the same
# image without a Docker daemon (package containerimage): one static binary
# on an empty base, run as the non-root user 65532.
#
#   docker build --build-arg VERSION=v0.1.0 -t ghcr.io/distcache/distcache:v0.1.0 .

FROM golang:1.26.8 AS build
ARG VERSION=v0.1.0
ARG COMMIT=
ARG DATE=
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X github.com/distcache/distcache/internal/buildinfo.version=${VERSION} -X github.com/distcache/distcache/internal/buildinfo.commit=${COMMIT} -X github.com/distcache/distcache/internal/buildinfo.date=${DATE}" \
      -o /out/usr/local/bin/distcache ./cmd/distcache \
 && mkdir -p /out/etc /out/tmp && chmod 1777 /out/tmp \
 && printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' > /out/etc/passwd \
 && printf 'root:x:0:\nnonroot:x:65532:\n' > /out/etc/group

FROM scratch
ARG VERSION=v0.1.0
LABEL org.opencontainers.image.title="distcache" \
      org.opencontainers.image.description="Multi-layer caching tier that keeps Redis-backed key-value stores balanced under skewed load" \
      org.opencontainers.image.source="https://github.com/distcache/distcache" \
      org.opencontainers.image.url="https://github.com/distcache/distcache" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}"
COPY --from=build /out/ /
ENV PATH=/usr/local/bin
USER 65532:65532
WORKDIR /
ENTRYPOINT ["/usr/local/bin/distcache"]

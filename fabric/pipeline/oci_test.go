package pipeline_test

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/distcache/distcache/fabric/pipeline"
	"github.com/distcache/distcache/internal/testing/ocitest"
)

// artefact is a compiled program's two files as `oras push` stores them.
func artefact(p4info, device []byte) []ocitest.File {
	return []ocitest.File{
		{Name: pipeline.DefaultP4InfoKey, MediaType: "application/vnd.distcache.p4info.v1+text", Content: p4info},
		{Name: pipeline.DefaultDeviceConfigKey, MediaType: "application/vnd.distcache.device-config.v1", Content: device},
	}
}

// TestPull pulls compiled programs from a registry on loopback: by tag
// and by digest, the exact bytes pushed; a tag that moves resolves to
// the new build; an artefact without the files is refused.
func TestPull(t *testing.T) {
	reg := ocitest.Start(t)
	p4info, device := keptP4Info(t, "distcache-v1model"), []byte("\x00bmv2 JSON\xff")
	digest := reg.Push(t, "pipelines/cache-switch:v1", artefact(p4info, device)...)
	ref := reg.Host + "/pipelines/cache-switch:v1"

	for _, r := range []string{ref, reg.Host + "/pipelines/cache-switch@" + digest} {
		a, err := pipeline.Pull(t.Context(), r, pipeline.DefaultP4InfoKey, pipeline.DefaultDeviceConfigKey, nil)
		if err != nil {
			t.Fatal(err)
		}
		if string(a.P4Info) != string(p4info) || string(a.DeviceConfig) != string(device) || a.Digest != digest {
			t.Errorf("Pull(%s) = %d and %d bytes, digest %s; want the pushed files, digest %s", r, len(a.P4Info), len(a.DeviceConfig), a.Digest, digest)
		}
	}
	if got, err := pipeline.Resolve(t.Context(), ref, nil); err != nil || got != digest {
		t.Errorf("Resolve = %s, %v; want %s", got, err, digest)
	}

	moved := reg.Push(t, "pipelines/cache-switch:v1", artefact(p4info, []byte("rebuilt"))...)
	if got, err := pipeline.Resolve(t.Context(), ref, nil); err != nil || got != moved || moved == digest {
		t.Errorf("Resolve after the tag moved = %s, %v; want %s", got, err, moved)
	}

	reg.Push(t, "pipelines/other:v1", ocitest.File{Name: "cache_switch.json", MediaType: "application/json", Content: []byte("{}")})
	_, err := pipeline.Pull(t.Context(), reg.Host+"/pipelines/other:v1", pipeline.DefaultP4InfoKey, pipeline.DefaultDeviceConfigKey, nil)
	if !errors.Is(err, pipeline.ErrArtefact) || !strings.Contains(err.Error(), `no layer titled "p4info.txt"`) {
		t.Errorf("artefact without the files: %v", err)
	}
	if _, err := pipeline.Pull(t.Context(), reg.Host+"/pipelines/none:v1", "a", "b", nil); err == nil {
		t.Error("pulled an artefact that does not exist")
	}
}

// TestPullWithCredentials: a registry that requires a login refuses an
// anonymous pull and serves one with the credentials of a Docker config
// (a kubernetes.io/dockerconfigjson Secret).
func TestPullWithCredentials(t *testing.T) {
	reg := ocitest.Start(t, ocitest.WithBasicAuth("builder", "s3cret"))
	p4info := keptP4Info(t, "distcache-v1model")
	reg.Push(t, "pipelines/cache-switch:v1", artefact(p4info, []byte("bin"))...)
	ref := reg.Host + "/pipelines/cache-switch:v1"
	if _, err := pipeline.Pull(t.Context(), ref, pipeline.DefaultP4InfoKey, pipeline.DefaultDeviceConfigKey, nil); err == nil {
		t.Fatal("an anonymous pull succeeded")
	}
	for name, cfg := range map[string]string{
		"auth":                 fmt.Sprintf(`{"auths": {%q: {"auth": %q}}}`, reg.Host, base64.StdEncoding.EncodeToString([]byte("builder:s3cret"))),
		"username and scheme":  fmt.Sprintf(`{"auths": {"http://%s/v2/": {"username": "builder", "password": "s3cret"}}}`, reg.Host),
		"another registry too": fmt.Sprintf(`{"auths": {"ghcr.io": {"auth": "eDp5"}, %q: {"username": "builder", "password": "s3cret"}}}`, reg.Host),
	} {
		t.Run(name, func(t *testing.T) {
			keys, err := pipeline.DockerConfigKeychain([]byte(cfg))
			if err != nil {
				t.Fatal(err)
			}
			a, err := pipeline.Pull(t.Context(), ref, pipeline.DefaultP4InfoKey, pipeline.DefaultDeviceConfigKey, keys)
			if err != nil || string(a.DeviceConfig) != "bin" {
				t.Fatalf("Pull = %v, %v", a, err)
			}
		})
	}
	if _, err := pipeline.DockerConfigKeychain([]byte(`{"auths": {"r": {"auth": "not base64!"}}}`)); err == nil {
		t.Error("a malformed auth was accepted")
	}
}

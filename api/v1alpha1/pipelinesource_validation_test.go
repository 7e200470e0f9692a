package v1alpha1_test

import (
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/distcache/distcache/api/v1alpha1"
)

// Messages of the CEL rules of pipelinesource_types.go and
// SwitchFabricSpec.
const (
	msgOneSource       = "pipelineSource needs exactly one of configMapRef, secretRef or image"
	msgTwoFiles        = "p4infoKey and deviceConfigKey must name two different files"
	msgImageReference  = "image.reference must be REGISTRY/REPOSITORY:TAG or REGISTRY/REPOSITORY@sha256:DIGEST"
	msgSourceIsStratum = "pipelineSource is for driver: stratum (with onos, the pipeconf carries the program)"
)

const testDigest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// withPipelineSource sets the fabric's spec.pipelineSource.
func withPipelineSource(src v1alpha1.PipelineSource) fabricOption {
	return func(f *v1alpha1.SwitchFabric) { f.Spec.PipelineSource = &src }
}

func configMapSource(name string) v1alpha1.PipelineSource {
	return v1alpha1.PipelineSource{ConfigMapRef: &v1alpha1.PipelineObjectRef{Name: name}}
}

func imageSource(ref string) v1alpha1.PipelineSource {
	return v1alpha1.PipelineSource{Image: &v1alpha1.PipelineImage{Reference: ref}}
}

// pipelineRuleCases break the CEL rules of spec.pipelineSource.
func pipelineRuleCases() []ruleCase {
	both := configMapSource("bmv2-build")
	both.Image = &v1alpha1.PipelineImage{Reference: "registry.example/pipelines/cache-switch:1.0"}
	sameKeys := v1alpha1.PipelineSource{SecretRef: &v1alpha1.PipelineObjectRef{Name: "tofino-build",
		PipelineFiles: v1alpha1.PipelineFiles{P4InfoKey: "build", DeviceConfigKey: "build"}}}
	return []ruleCase{
		{"pipelineSource with a ConfigMap and an image", newFabric(withPipelineSource(both)), "spec.pipelineSource", msgOneSource},
		{"pipelineSource without a source", newFabric(withPipelineSource(v1alpha1.PipelineSource{})), "spec.pipelineSource", msgOneSource},
		{"pipelineSource with one key for both files", newFabric(withPipelineSource(sameKeys)), "spec.pipelineSource.secretRef", msgTwoFiles},
		{"image without a tag or digest", newFabric(withPipelineSource(imageSource("registry.example/pipelines/cache-switch"))),
			"spec.pipelineSource.image", msgImageReference},
		{"image with an upper-case repository", newFabric(withPipelineSource(imageSource("registry.example/Pipelines/cache-switch:1.0"))),
			"spec.pipelineSource.image", msgImageReference},
		{"image with a short digest", newFabric(withPipelineSource(imageSource("registry.example/pipelines/cache-switch@sha256:0123"))),
			"spec.pipelineSource.image", msgImageReference},
		{"pipelineSource with the onos driver", newFabric(withDriver(v1alpha1.DriverONOS), withONOS("https://onos.example:8181/onos/v1"),
			withSwitches(v1alpha1.Switch{Name: "s1", DeviceID: 1, Role: v1alpha1.RoleSpine}), withPipelineSource(configMapSource("bmv2-build"))),
			"spec", msgSourceIsStratum},
	}
}

// pipelineSchemaCases break the OpenAPI markers of spec.pipelineSource.
func pipelineSchemaCases() []schemaCase {
	pathKey := configMapSource("bmv2-build")
	pathKey.ConfigMapRef.P4InfoKey = "out/p4info.txt"
	return []schemaCase{
		{"ConfigMap key with a slash", newFabric(withPipelineSource(pathKey)), "spec.pipelineSource.configMapRef.p4infoKey",
			[]string{"spec.pipelineSource.configMapRef.p4infoKey", "should match"}},
		{"ConfigMap without a name", newFabric(withPipelineSource(configMapSource(""))), "spec.pipelineSource.configMapRef.name",
			[]string{"spec.pipelineSource.configMapRef.name", "at least 1 chars long"}},
	}
}

// pipelineValidCases are fabrics with each kind of pipelineSource.
func pipelineValidCases() []validCase {
	keys := v1alpha1.PipelineSource{SecretRef: &v1alpha1.PipelineObjectRef{Name: "tofino-build",
		PipelineFiles: v1alpha1.PipelineFiles{P4InfoKey: "cache_switch.p4info.bin", DeviceConfigKey: "pipeline.pb.bin"}}}
	private := imageSource("registry.example:5000/team/pipelines/cache-switch:v1.2.0-tofino@" + testDigest)
	private.Image.PullSecretRef = &v1alpha1.LocalSecretReference{Name: "registry-login"}
	return []validCase{
		{"pipelineSource ConfigMap, default keys", newFabric(withPipelineSource(configMapSource("bmv2-build")))},
		{"pipelineSource Secret, own keys", newFabric(withPipelineSource(keys))},
		{"pipelineSource image by tag", newFabric(withPipelineSource(imageSource("ghcr.io/example/cache-switch:bmv2-2026.1")))},
		{"pipelineSource image by digest", newFabric(withPipelineSource(imageSource("ghcr.io/example/cache-switch@" + testDigest)))},
		{"pipelineSource image on a port, with a pull Secret", newFabric(withPipelineSource(private))},
	}
}

// TestPipelineSourceDefaults: the keys of a source default to the file
// names the docs use.
func TestPipelineSourceDefaults(t *testing.T) {
	for _, src := range []v1alpha1.PipelineSource{configMapSource("bmv2-build"), imageSource("ghcr.io/example/cache-switch:1")} {
		f := newFabric(withPipelineSource(src))
		if err := create(t, f); err != nil {
			t.Fatal(err)
		}
		got := &v1alpha1.SwitchFabric{}
		if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(f), got); err != nil {
			t.Fatal(err)
		}
		files := got.Spec.PipelineSource.Image
		var pf v1alpha1.PipelineFiles
		if files != nil {
			pf = files.PipelineFiles
		} else {
			pf = got.Spec.PipelineSource.ConfigMapRef.PipelineFiles
		}
		if pf.P4InfoKey != "p4info.txt" || pf.DeviceConfigKey != "device_config.bin" {
			t.Errorf("keys %+v, want p4info.txt and device_config.bin", pf)
		}
	}
}

// TestPipelineSourceMessagesReadable: a refusal names the rule in words,
// not the CEL expression.
func TestPipelineSourceMessagesReadable(t *testing.T) {
	err := create(t, newFabric(withPipelineSource(v1alpha1.PipelineSource{})))
	if err == nil || !strings.Contains(err.Error(), msgOneSource) || strings.Contains(err.Error(), "has(self") {
		t.Fatalf("error %v", err)
	}
}

package plan_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/internal/testing/switchtest"
	"github.com/distcache/distcache/layout"
	"github.com/distcache/distcache/standalone/plan"
)

// switchCluster is a cluster of one shard whose spine is a fabric's two
// switches, with the fabric's pipelineSource src.
func switchCluster(t *testing.T, src *v1alpha1.PipelineSource) *layout.Cluster {
	t.Helper()
	fabric := &v1alpha1.SwitchFabricSpec{Driver: v1alpha1.DriverStratum, Pipeline: "distcache-v1model", PipelineSource: src,
		Switches: []v1alpha1.Switch{
			{Name: "a", DeviceID: 1, Role: v1alpha1.RoleSpine, P4RuntimeAddress: "127.0.0.1:29559", DataAddress: "127.0.0.1:27400"},
			{Name: "b", DeviceID: 2, Role: v1alpha1.RoleSpine, P4RuntimeAddress: "127.0.0.1:29560", DataAddress: "127.0.0.1:27500"},
		}}
	c, err := switchSpineCluster("sw", v1alpha1.StorageSpec{Racks: 1, ShardsPerRack: 1}, fabric)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// switchSpineCluster lays out cluster name of storage whose spine layer
// is the spine switches of fabric "lab", with a leaf layer bound to the
// racks.
func switchSpineCluster(name string, storage v1alpha1.StorageSpec, fabric *v1alpha1.SwitchFabricSpec) (*layout.Cluster, error) {
	spec := v1alpha1.CacheClusterSpec{
		Storage: storage,
		Layers: []v1alpha1.NamedLayer{
			{Name: "spine", CacheLayerSpec: v1alpha1.CacheLayerSpec{Backend: v1alpha1.BackendSwitch,
				Switch: &v1alpha1.SwitchLayerSpec{FabricRef: "lab", Role: v1alpha1.RoleSpine}}},
			{Name: "leaf", CacheLayerSpec: v1alpha1.CacheLayerSpec{BoundToRacks: true}},
		},
	}
	return layout.Resolve(name, &spec, nil, func(ref string) (layout.Fabric, bool) { return layout.Fabric{Spec: fabric}, ref == "lab" })
}

// buildDir is a directory holding a build's files under the default keys.
func buildDir(t *testing.T, p4info []byte) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "p4info.txt"), p4info, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "device_config.bin"), []byte("bmv2 JSON"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// fabricArgs are the arguments of the plan's fabric controller.
func fabricArgs(t *testing.T, p *plan.Plan) []string {
	t.Helper()
	for _, pr := range p.Processes {
		if pr.Kind == plan.Fabric {
			return pr.Args
		}
	}
	t.Fatal("no fabric controller in the plan")
	return nil
}

// TestSwitchPipeline: --switch-pipeline-dir stands for the ConfigMap or
// Secret of the fabric's pipelineSource, and the fabric controller gets
// its files; an image is the controller's to pull; the build is checked
// before anything runs.
func TestSwitchPipeline(t *testing.T) {
	dir := buildDir(t, switchtest.CacheSwitchP4Info(t))
	secret := &v1alpha1.PipelineSource{SecretRef: &v1alpha1.PipelineObjectRef{Name: "build",
		PipelineFiles: v1alpha1.PipelineFiles{P4InfoKey: "p4info.txt", DeviceConfigKey: "device_config.bin"}}}
	image := &v1alpha1.PipelineSource{Image: &v1alpha1.PipelineImage{Reference: "registry.example/pipelines/cache-switch:1",
		PipelineFiles: v1alpha1.PipelineFiles{P4InfoKey: "cache_switch.p4info.txt", DeviceConfigKey: "cache_switch.json"}}}
	tests := []struct {
		name string
		src  *v1alpha1.PipelineSource
		dir  string
		want []string
	}{
		{"ConfigMap, default keys", &v1alpha1.PipelineSource{ConfigMapRef: &v1alpha1.PipelineObjectRef{Name: "build"}}, dir,
			[]string{"--p4info=" + filepath.Join(dir, "p4info.txt"), "--device-config=" + filepath.Join(dir, "device_config.bin")}},
		{"Secret", secret, dir, []string{"--p4info=" + filepath.Join(dir, "p4info.txt")}},
		{"image", image, "", []string{"--pipeline-image=registry.example/pipelines/cache-switch:1",
			"--pipeline-image-p4info=cache_switch.p4info.txt", "--pipeline-image-device-config=cache_switch.json"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := plan.New(switchCluster(t, tc.src), plan.Options{RunDir: t.TempDir(), Ports: sequentialPorts, SwitchPipelineDir: tc.dir})
			if err != nil {
				t.Fatal(err)
			}
			args := fabricArgs(t, p)
			for _, w := range tc.want {
				if !slices.Contains(args, w) {
					t.Errorf("fabric args %q lack %q", args, w)
				}
			}
		})
	}
	p, err := plan.New(switchCluster(t, nil), plan.Options{RunDir: t.TempDir(), Ports: sequentialPorts})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range fabricArgs(t, p) {
		if strings.HasPrefix(a, "--p4info") || strings.HasPrefix(a, "--pipeline-image") {
			t.Errorf("a fabric without pipelineSource gets %s", a)
		}
	}
}

func TestSwitchPipelineRefused(t *testing.T) {
	configMap := &v1alpha1.PipelineSource{ConfigMapRef: &v1alpha1.PipelineObjectRef{Name: "build"}}
	image := &v1alpha1.PipelineSource{Image: &v1alpha1.PipelineImage{Reference: "registry.example/pipelines/cache-switch:1"}}
	renamed := []byte(strings.Replace(string(switchtest.CacheSwitchP4Info(t)), `name: "cache_lookup"`, `name: "lookup"`, 1))
	tests := []struct {
		name        string
		src         *v1alpha1.PipelineSource
		dir         string
		want        string
		unsupported bool
	}{
		{"ConfigMap without its files", configMap, "", "standalone mode has no ConfigMaps: pass its keys as files with distcache up --switch-pipeline-dir DIR", true},
		{"files without a pipelineSource", nil, buildDir(t, switchtest.CacheSwitchP4Info(t)), "no SwitchFabric of the cluster sets a pipelineSource", false},
		{"files for an image", image, buildDir(t, switchtest.CacheSwitchP4Info(t)), "which the fabric controller pulls itself", false},
		{"files of another P4Info", configMap, buildDir(t, renamed), "table cache_lookup (id 0x2000004) missing", false},
		{"files missing", configMap, t.TempDir(), "cannot read the P4Info", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := plan.Check(switchCluster(t, tc.src), &plan.Options{SwitchPipelineDir: tc.dir})
			if err == nil || !strings.Contains(err.Error(), tc.want) || errors.Is(err, plan.ErrUnsupported) != tc.unsupported {
				t.Fatalf("error %v, want %q (unsupported %v)", err, tc.want, tc.unsupported)
			}
		})
	}
}

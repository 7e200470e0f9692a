package switchfabric_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	"google.golang.org/protobuf/encoding/prototext"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/fabric/pipeline"
	"github.com/distcache/distcache/internal/testing/ocitest"
	"github.com/distcache/distcache/internal/testing/poll"
	"github.com/distcache/distcache/internal/testing/switchtest"
	"github.com/distcache/distcache/placement/partmap"
)

// editedP4Info is the kept P4Info changed by edit.
func editedP4Info(t *testing.T, edit func(*p4configv1.P4Info)) []byte {
	t.Helper()
	info := &p4configv1.P4Info{}
	if err := prototext.Unmarshal(switchtest.CacheSwitchP4Info(t), info); err != nil {
		t.Fatal(err)
	}
	edit(info)
	b, err := prototext.Marshal(info)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func renameCacheLookup(info *p4configv1.P4Info) {
	for _, tb := range info.Tables {
		if tb.Preamble.Name == "cache_lookup" {
			tb.Preamble.Name = "lookup"
		}
	}
}

func withPipelineSource(src v1alpha1.PipelineSource) fabricOption {
	return func(f *v1alpha1.SwitchFabric) { f.Spec.PipelineSource = &src }
}

func configMapSource(name string) v1alpha1.PipelineSource {
	return v1alpha1.PipelineSource{ConfigMapRef: &v1alpha1.PipelineObjectRef{Name: name}}
}

// buildConfigMap creates or replaces the ConfigMap of a build: the
// P4Info as text under data, the device config under binaryData.
func buildConfigMap(t *testing.T, ns, name string, p4info, device []byte) {
	t.Helper()
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	err := env.Client.Get(ctx, client.ObjectKeyFromObject(cm), cm)
	cm.Data = map[string]string{pipeline.DefaultP4InfoKey: string(p4info)}
	cm.BinaryData = map[string][]byte{pipeline.DefaultDeviceConfigKey: device}
	if err == nil {
		err = env.Client.Update(ctx, cm)
	} else {
		err = env.Client.Create(ctx, cm)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// sourcedFabric starts a software switch, fabric "fabric" of it that
// takes its build from src, and cluster "shop" in ns on it, changed by
// opts; it returns the switch and the fabric.
func sourcedFabric(t *testing.T, ns string, src v1alpha1.PipelineSource, opts ...func(*v1alpha1.CacheCluster)) (*switchtest.Target, *v1alpha1.SwitchFabric) {
	t.Helper()
	target := switchtest.StartTarget(t, 1, 1)
	f := newFabric(t, ns, "fabric", spineSwitch("spine-0", target.P4Runtime, target.Addr().String()), withPipelineSource(src))
	newCluster(t, ns, "shop", "fabric", opts...)
	return target, f
}

// switchRuns waits until the switch holds exactly device and cookie,
// read back over P4Runtime.
func switchRuns(t *testing.T, target *switchtest.Target, device []byte, cookie uint64) {
	t.Helper()
	poll.Eventually(t, fmt.Sprintf("the switch holds %d bytes of device config, cookie %#016x", len(device), cookie), func() (bool, error) {
		got, err := switchtest.PipelineConfig(target.P4Runtime, 1)
		if err != nil {
			return false, err
		}
		return string(got.GetP4DeviceConfig()) == string(device) && got.GetCookie().GetCookie() == cookie,
			fmt.Errorf("it holds %q, cookie %#016x", got.GetP4DeviceConfig(), got.GetCookie().GetCookie())
	})
}

// runsBuild says the status reports the build of cookie, programmed on
// the fabric's one switch.
func runsBuild(s *v1alpha1.SwitchFabricStatus, source string, cookie uint64, bytes int) bool {
	hex := fmt.Sprintf("%#016x", cookie)
	return s.Pipeline != nil && s.Pipeline.Source == source && s.Pipeline.Cookie == hex && s.Pipeline.DeviceConfigBytes == int64(bytes) &&
		len(s.SwitchStatuses) == 1 && s.SwitchStatuses[0].Programmed && s.SwitchStatuses[0].Cookie == hex
}

// TestPipelineSources: the operator pushes a compiled program from each
// kind of source, and the software switch holds its exact bytes and the
// build's content-hash cookie, which the status records.
func TestPipelineSources(t *testing.T) {
	startOperator(t)
	p4info, device := switchtest.CacheSwitchP4Info(t), []byte("\x00{\"program\": \"cache_switch.p4\"}\xff\xfe")
	cookie := pipeline.Cookie(p4info, device)
	reg := ocitest.Start(t, ocitest.WithBasicAuth("builder", "s3cret"))
	digest := reg.Push(t, "pipelines/cache-switch:bmv2-1",
		ocitest.File{Name: "cache_switch.p4info.txt", MediaType: "application/vnd.distcache.p4info.v1+text", Content: p4info},
		ocitest.File{Name: "cache_switch.json", MediaType: "application/vnd.distcache.device-config.v1", Content: device})
	image := fmt.Sprintf("%s/pipelines/cache-switch:bmv2-1", reg.Host)
	files := v1alpha1.PipelineFiles{P4InfoKey: "cache_switch.p4info.txt", DeviceConfigKey: "cache_switch.json"}

	for _, tc := range []struct {
		name, source, digest string
		prepare              func(t *testing.T, ns string)
		src                  v1alpha1.PipelineSource
	}{
		{name: "ConfigMap", source: "configMap/bmv2-build", src: configMapSource("bmv2-build"),
			prepare: func(t *testing.T, ns string) { buildConfigMap(t, ns, "bmv2-build", p4info, device) }},
		{name: "Secret", source: "secret/bmv2-build", src: v1alpha1.PipelineSource{SecretRef: &v1alpha1.PipelineObjectRef{Name: "bmv2-build", PipelineFiles: files}},
			prepare: func(t *testing.T, ns string) {
				createSecret(t, ns, "bmv2-build", "", map[string][]byte{files.P4InfoKey: p4info, files.DeviceConfigKey: device})
			}},
		{name: "OCI artefact with a pull Secret", source: image, digest: digest,
			src: v1alpha1.PipelineSource{Image: &v1alpha1.PipelineImage{Reference: image, PipelineFiles: files,
				PullSecretRef: &v1alpha1.LocalSecretReference{Name: "registry-login"}}},
			prepare: func(t *testing.T, ns string) {
				auth := base64.StdEncoding.EncodeToString([]byte("builder:s3cret"))
				createSecret(t, ns, "registry-login", corev1.SecretTypeDockerConfigJson, map[string][]byte{
					corev1.DockerConfigJsonKey: fmt.Appendf(nil, `{"auths": {%q: {"auth": %q}}}`, reg.Host, auth)})
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := namespace(t)
			tc.prepare(t, ns)
			target, f := sourcedFabric(t, ns, tc.src)
			fabricStatus(t, f, "Ready with the build of "+tc.source, func(s *v1alpha1.SwitchFabricStatus) bool {
				return is(s, v1alpha1.ConditionReady, true, v1alpha1.ReasonReconciled) && runsBuild(s, tc.source, cookie, len(device)) &&
					s.Pipeline.Digest == tc.digest
			})
			switchRuns(t, target, device, cookie)
		})
	}
}

func createSecret(t *testing.T, ns, name string, typ corev1.SecretType, data map[string][]byte) {
	t.Helper()
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Type: typ, Data: data}
	if err := env.Client.Create(context.Background(), sec); err != nil {
		t.Fatal(err)
	}
}

// TestPipelineSourceRefused: a build that cannot be pushed blocks a
// fabric with the typed reason and pushes nothing to its switch.
func TestPipelineSourceRefused(t *testing.T) {
	startOperator(t)
	for _, tc := range []struct {
		name, reason, text string
		prepare            func(t *testing.T, ns string)
		src                v1alpha1.PipelineSource
	}{
		{name: "P4Info with a renamed table", reason: v1alpha1.ReasonP4InfoMismatch, text: "table cache_lookup (id 0x2000004) missing",
			src: configMapSource("build"), prepare: func(t *testing.T, ns string) {
				buildConfigMap(t, ns, "build", editedP4Info(t, renameCacheLookup), []byte("bmv2"))
			}},
		{name: "P4Info that does not parse", reason: v1alpha1.ReasonPipelineSourceInvalid, text: "cannot parse the P4Info",
			src: configMapSource("build"), prepare: func(t *testing.T, ns string) { buildConfigMap(t, ns, "build", []byte("tables {"), []byte("bmv2")) }},
		{name: "ConfigMap missing", reason: v1alpha1.ReasonPipelineSourceInvalid, text: "ConfigMap build does not exist",
			src: configMapSource("build"), prepare: func(*testing.T, string) {}},
		{name: "Secret without the device config", reason: v1alpha1.ReasonPipelineSourceInvalid, text: "Secret build has no key device_config.bin",
			src: v1alpha1.PipelineSource{SecretRef: &v1alpha1.PipelineObjectRef{Name: "build"}}, prepare: func(t *testing.T, ns string) {
				createSecret(t, ns, "build", "", map[string][]byte{pipeline.DefaultP4InfoKey: switchtest.CacheSwitchP4Info(t)})
			}},
		{name: "image not in the registry", reason: v1alpha1.ReasonPipelineSourceInvalid, text: "cannot pull",
			src:     v1alpha1.PipelineSource{Image: &v1alpha1.PipelineImage{Reference: ocitest.Start(t).Host + "/pipelines/none:1"}},
			prepare: func(*testing.T, string) {}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := namespace(t)
			tc.prepare(t, ns)
			target, f := sourcedFabric(t, ns, tc.src)
			fabricStatus(t, f, tc.reason, func(s *v1alpha1.SwitchFabricStatus) bool {
				c := condition(s, v1alpha1.ConditionReady)
				return is(s, v1alpha1.ConditionReady, false, tc.reason) && is(s, v1alpha1.ConditionDegraded, true, tc.reason) &&
					strings.Contains(c.Message, tc.text) && len(s.SwitchStatuses) == 0 && s.Pipeline == nil
			})
			if _, _, ok := target.Switch().Pipeline(); ok {
				t.Error("the switch got a pipeline from a source the operator refused")
			}
		})
	}
}

// TestPipelineUpgradeInSession: a new build in the ConfigMap reaches the
// switch in its running session (RECONCILE_AND_COMMIT): the switch keeps
// its entries and serves the key it cached before from the same slot; a
// build with another P4Info, or a source gone, changes nothing on the
// switch and is reported.
func TestPipelineUpgradeInSession(t *testing.T) {
	startOperator(t)
	ns := namespace(t)
	p4info, build1, build2 := switchtest.CacheSwitchP4Info(t), []byte("\x00bmv2 build 1\xff"), []byte("\x00bmv2 build 2, upgraded\xff")
	buildConfigMap(t, ns, "bmv2-build", p4info, build1)
	// An hour's lease, anchored at the switch's clock at its last packet:
	// the switch serves its cached key whenever the test asks.
	target, f := sourcedFabric(t, ns, configMapSource("bmv2-build"), func(cc *v1alpha1.CacheCluster) {
		cc.Spec.Coherence.ServingLease = &metav1.Duration{Duration: time.Hour}
		cc.Spec.Coherence.PreviousMapGrace = &metav1.Duration{Duration: time.Hour}
	})
	cookie1, cookie2 := pipeline.Cookie(p4info, build1), pipeline.Cookie(p4info, build2)
	fabricStatus(t, f, "build 1 programmed", func(s *v1alpha1.SwitchFabricStatus) bool {
		return is(s, v1alpha1.ConditionReady, true, v1alpha1.ReasonReconciled) && runsBuild(s, "configMap/bmv2-build", cookie1, len(build1))
	})
	switchRuns(t, target, build1, cookie1)
	poll.Eventually(t, "lease renewed", func() (bool, error) {
		until, err := leaseUntil(target.Switch())
		return until > 0, err
	})
	const slot = 900
	readPort := netip.AddrPortFrom(target.Addr().Addr(), partmap.SwitchReadPort(target.Addr().Port(), 0))
	switchtest.CacheValue(t, target.Switch(), "user:42", slot, []byte("cached before"))
	hit := func(when string) {
		t.Helper()
		if r := switchtest.Get(t, readPort, "user:42"); r.Flags&wire.FlagHit == 0 || string(r.Value) != "cached before" {
			t.Fatalf("%s: GET answered flags %#x value %q, want a hit", when, r.Flags, r.Value)
		}
	}
	// The shard's pod address does not resolve here: route the shard to
	// a loopback port, as the controller would its shim.
	switchtest.RouteShard(t, target.Switch(), 0, netip.MustParseAddrPort("127.0.0.1:9"))
	hit("before the upgrade")

	buildConfigMap(t, ns, "bmv2-build", p4info, build2)
	fabricStatus(t, f, "build 2 taken in the same session", func(s *v1alpha1.SwitchFabricStatus) bool {
		return is(s, v1alpha1.ConditionReady, true, v1alpha1.ReasonReconciled) && runsBuild(s, "configMap/bmv2-build", cookie2, len(build2)) &&
			s.SwitchStatuses[0].Sessions == 1
	})
	switchRuns(t, target, build2, cookie2)
	hit("after the upgrade")
	if n := switchtest.CacheHits(t, target.Switch(), slot); n != 2 {
		t.Errorf("cache_hits[%d] = %d after the upgrade, want 2: the switch lost its state", slot, n)
	}
	poll.Eventually(t, "PipelineUpgraded event", func() (bool, error) { return hasEvent(f, "PipelineUpgraded", "RECONCILE_AND_COMMIT") })

	for _, tc := range []struct {
		name, reason, text string
		p4info             []byte
	}{
		{"renamed table", v1alpha1.ReasonP4InfoMismatch, "table cache_lookup (id 0x2000004) missing", editedP4Info(t, renameCacheLookup)},
		{"p4c's digest id: a P4Info the check accepts, not the one the switch runs", v1alpha1.ReasonP4InfoMismatch,
			"is not the one the switches run", editedP4Info(t, func(i *p4configv1.P4Info) { i.Digests[0].Preamble.Id = 0x17000000 | 402183 })},
	} {
		buildConfigMap(t, ns, "bmv2-build", tc.p4info, []byte("bmv2 build 3"))
		fabricStatus(t, f, tc.name+": "+tc.reason, func(s *v1alpha1.SwitchFabricStatus) bool {
			c := condition(s, v1alpha1.ConditionReady)
			return is(s, v1alpha1.ConditionReady, false, tc.reason) && strings.Contains(c.Message, tc.text) &&
				runsBuild(s, "configMap/bmv2-build", cookie2, len(build2))
		})
		switchRuns(t, target, build2, cookie2)
	}
	if err := env.Client.Delete(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "bmv2-build", Namespace: ns}}); err != nil {
		t.Fatal(err)
	}
	fabricStatus(t, f, "source gone, build 2 kept", func(s *v1alpha1.SwitchFabricStatus) bool {
		return is(s, v1alpha1.ConditionReady, false, v1alpha1.ReasonPipelineSourceInvalid) && runsBuild(s, "configMap/bmv2-build", cookie2, len(build2))
	})
	hit("with the source gone")
}

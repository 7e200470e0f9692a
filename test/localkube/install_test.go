package localkube

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/containerimage"
	"github.com/distcache/distcache/internal/buildinfo"
	"github.com/distcache/distcache/internal/testing/kubetest"
	"github.com/distcache/distcache/internal/testing/poll"
	"github.com/distcache/distcache/operator/controller/cachecluster"
)

// imageArchive builds the distcache image as `make image` does (a static
// binary, package containerimage) into dir, named name, and returns the
// archive's path.
func imageArchive(ctx context.Context, t *testing.T, dir, name string) string {
	t.Helper()
	bin := filepath.Join(dir, "distcache")
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, "./cmd/distcache")
	build.Dir = kubetest.RepoRoot()
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("cannot build distcache: %v\n%s", err, out)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	created := time.Unix(0, 0).UTC()
	img, err := containerimage.Build(containerimage.Spec{Binary: data, Arch: runtime.GOARCH, Version: buildinfo.Release, Created: created})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "distcache.tar")
	if err := containerimage.WriteArchiveFile(path, img, name, created); err != nil {
		t.Fatal(err)
	}
	return path
}

// operatorNamespace is where the chart is installed.
const operatorNamespace = "distcache-system"

// helm is Helm's configuration for the operator's namespace, and the
// repository's chart.
func helm(t *testing.T, kubeconfig string) (*action.Configuration, *chart.Chart) {
	t.Helper()
	ns := operatorNamespace
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig, flags.Namespace = &kubeconfig, &ns
	cfg := new(action.Configuration)
	if err := cfg.Init(flags, ns, "secret", t.Logf); err != nil {
		t.Fatalf("cannot initialise Helm: %v", err)
	}
	c, err := loader.Load(filepath.Join(kubetest.RepoRoot(), "charts", "distcache"))
	if err != nil {
		t.Fatal(err)
	}
	return cfg, c
}

// helmInstall installs the repository's chart as `helm install distcache
// charts/distcache -n distcache-system --create-namespace --wait` does.
func helmInstall(ctx context.Context, t *testing.T, kubeconfig string) {
	t.Helper()
	cfg, c := helm(t, kubeconfig)
	in := action.NewInstall(cfg)
	in.ReleaseName, in.Namespace, in.CreateNamespace = "distcache", operatorNamespace, true
	in.Wait, in.Timeout = true, 4*time.Minute
	if _, err := in.RunWithContext(ctx, c, map[string]any{}); err != nil {
		t.Fatalf("helm install: %v", err)
	}
}

// helmUpgrade upgrades the release as `helm upgrade distcache
// charts/distcache -n distcache-system --wait` with values does.
func helmUpgrade(ctx context.Context, t *testing.T, kubeconfig string, values map[string]any) {
	t.Helper()
	cfg, c := helm(t, kubeconfig)
	up := action.NewUpgrade(cfg)
	up.Namespace, up.Wait, up.Timeout = operatorNamespace, true, 4*time.Minute
	if _, err := up.RunWithContext(ctx, "distcache", c, values); err != nil {
		t.Fatalf("helm upgrade: %v", err)
	}
}

// benchRow matches a mode's row of the benchmark's table: its last two
// columns are errors and coherence messages.
var benchRow = regexp.MustCompile(`(?m)^\s*(nocache|distcache)\s.*\s(\d+)\s+(\d+)\s*$`)

// percent matches a percentage of a benchmark row.
var percent = regexp.MustCompile(`(\d+\.\d)%`)

// installPath follows docs/operator.md's install path on the running
// localkube: the image loaded, the chart installed, the managed sample Ready
// with real pods, and the benchmark Job of hack/kind run to completion with
// no error and no lost write.
func installPath(ctx context.Context, t *testing.T, k *kube) {
	kubectl := k.do
	script(ctx, t, k.dir, "load", imageArchive(ctx, t, t.TempDir(), buildinfo.Image))
	helmInstall(ctx, t, k.kubeconfig())
	root := kubetest.RepoRoot()
	kubectl("", "apply", "-f", filepath.Join(root, "config", "samples", "distcache_v1alpha1_cachecluster_managed.yaml"))
	kubectl("", "wait", "--for=condition=Ready", "cachecluster/shop-managed", "--timeout=240s")
	kubectl("", "rollout", "status", "deployment/"+cachecluster.GatewayName(sample), "--timeout=240s")
	k.awaitHealed(sample, samplePods)
	// The pods' DNS records (names under their headless Services) reach
	// CoreDNS a moment after the pods are Ready; a client that starts
	// before then fails its first operations. Wait for every shard's name.
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, net.JoinHostPort(dnsServiceIP, "53"))
	}}
	for rack := range 4 {
		for shard := range 2 {
			host := fmt.Sprintf("shop-managed-rack-%d-%d.shop-managed-rack-%d.default.svc.cluster.local", rack, shard, rack)
			poll.Eventually(t, "DNS record of "+host, func() (bool, error) {
				_, err := r.LookupHost(ctx, host)
				return err == nil, err
			})
		}
	}
	gatewayIP := kubectl("", "get", "service", cachecluster.GatewayName(sample), "-o", "jsonpath={.spec.clusterIP}")
	gatewayServes(ctx, t, gatewayIP)
	gatewayAuthenticates(ctx, t, k, gatewayIP)
	gatewayServesTLS(ctx, t, k, gatewayIP)
	copiesOn(k)
	kubectl("", "apply", "-f", filepath.Join(root, "hack", "kind", "bench-job.yaml"))
	copiesDuring(k, "shop-managed-bench")
	copiesOff(k)
	logs := kubectl("", "logs", "job/shop-managed-bench")
	rows := benchRow.FindAllStringSubmatch(logs, -1)
	if len(rows) != 2 || !strings.Contains(logs, "no lost writes") || strings.Contains(logs, "writes failed") {
		t.Fatalf("benchmark Job: want both modes and no lost writes:\n%s", logs)
	}
	for _, r := range rows {
		if r[2] != "0" {
			t.Errorf("benchmark Job: %s had %s errors", r[1], r[2])
		}
		// The cache caches: DistCache's mode serves hits (the last
		// percentage of its row is the hit ratio of all layers).
		hits := percent.FindAllStringSubmatch(r[0], -1)
		if r[1] == "distcache" && (len(hits) == 0 || hits[len(hits)-1][1] == "0.0") {
			t.Errorf("benchmark Job: distcache served no hit:\n%s", r[0])
		}
	}
	if _, report, ok := strings.Cut(logs, "DistCache benchmark"); ok {
		t.Logf("benchmark Job: DistCache benchmark%s", report)
	}
}

// gatewayUser and gatewayPassword are the user the gateway requires once
// gatewayAuthenticates gives it a users Secret.
const gatewayUser, gatewayPassword = "checkout", "localkube-s3cret"

// gatewayAuthenticates gives the sample's gateway users from a Secret
// (spec.gateway.usersSecretName), as docs/gateway.md says: the kubelet
// mounts the Secret into the rolled-out gateway pod, GatewayReady comes
// back, a client without credentials gets NOAUTH, and the Secret's user
// reads and writes through the Service.
func gatewayAuthenticates(ctx context.Context, t *testing.T, k *kube, clusterIP string) {
	t.Helper()
	secret := sample + "-gateway-users"
	k.do("", "create", "secret", "generic", secret, "--from-literal="+gatewayUser+"="+gatewayPassword)
	k.do("", "patch", "cachecluster", sample, "--type=merge",
		"-p", `{"spec":{"gateway":{"usersSecretName":"`+secret+`"}}}`)
	k.do("", "rollout", "status", "deployment/"+cachecluster.GatewayName(sample), "--timeout=240s")
	k.do("", "wait", "--for=condition=GatewayReady", "cachecluster/"+sample, "--timeout=240s")
	addr := net.JoinHostPort(clusterIP, "6379")
	anonymous := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer anonymous.Close()
	// kube-proxy leads new connections to the new pod once the old one has
	// left the Service's endpoints.
	poll.Eventually(t, "NOAUTH from the gateway without credentials", func() (bool, error) {
		err := anonymous.Get(ctx, "localkube:gateway").Err()
		return err != nil && strings.HasPrefix(err.Error(), "NOAUTH"), err
	})
	user := redis.NewClient(&redis.Options{Addr: addr, Username: gatewayUser, Password: gatewayPassword})
	defer user.Close()
	if err := user.Set(ctx, "localkube:auth", "as "+gatewayUser, 0).Err(); err != nil {
		t.Fatalf("SET as %s through the gateway Service: %v", gatewayUser, err)
	}
	if got, err := user.Get(ctx, "localkube:gateway").Result(); err != nil || got != "hello" {
		t.Fatalf("GET as %s through the gateway Service = %q (%v)", gatewayUser, got, err)
	}
	wrong := redis.NewClient(&redis.Options{Addr: addr, Username: gatewayUser, Password: "wrong", MaxRetries: -1})
	defer wrong.Close()
	if err := wrong.Ping(ctx).Err(); err == nil || !strings.HasPrefix(err.Error(), "WRONGPASS") {
		t.Fatalf("a wrong password through the gateway Service: %v, want WRONGPASS", err)
	}
	t.Logf("gateway with users Secret %s: NOAUTH without credentials, WRONGPASS with a wrong password, %s reads and writes",
		secret, gatewayUser)
}

// gatewayServes uses the sample's Redis-compatible gateway through its
// Service, as an application would: go-redis, unmodified, at the Service's
// address and port 6379 (kube-proxy's rules lead it to a gateway pod).
func gatewayServes(ctx context.Context, t *testing.T, clusterIP string) {
	t.Helper()
	rc := redis.NewClient(&redis.Options{Addr: net.JoinHostPort(clusterIP, "6379")})
	defer rc.Close()
	// The first write waits for kube-proxy's rules and for the gateway to
	// reach the shards by their DNS names, as the benchmark Job below.
	poll.Eventually(t, "SET through the gateway Service", func() (bool, error) {
		err := rc.Set(ctx, "localkube:gateway", "hello", 0).Err()
		return err == nil, err
	})
	if got, err := rc.Get(ctx, "localkube:gateway").Result(); err != nil || got != "hello" {
		t.Fatalf("GET through the gateway Service = %q (%v)", got, err)
	}
	if n, err := rc.IncrBy(ctx, "localkube:counter", 5).Result(); err != nil || n < 5 {
		t.Fatalf("INCRBY through the gateway Service = %d (%v)", n, err)
	}
	if info, err := rc.Info(ctx, "distcache").Result(); err != nil || !strings.Contains(info, "cluster:"+sample) {
		t.Fatalf("INFO distcache through the gateway Service = %q (%v)", info, err)
	}
}

// copiesOn turns spec.hotKeys.replication on for the sample, deciding
// every 2 s with capacities small enough that the benchmark Job's hottest
// keys (about 100 reads a second, above the 20 of minRate) count and large
// enough that its load leaves the shards room (capacities near the load
// make the decision move keys to one copy and back, a map version at each
// decision), and waits for a decision that read the report of every Ready
// cache node and shim through the pod network.
func copiesOn(k *kube) {
	k.t.Helper()
	k.do("", "patch", "cachecluster", sample, "--type=merge", "-p",
		`{"spec":{"hotKeys":{"replication":{"enabled":true,"interval":"2s","storageCapacity":1000,"nodeCapacity":10000}}}}`)
	k.await("copies decided from every pod's report", time.Minute, func() (bool, error) {
		cc := k.cluster(sample)
		hk := cc.Status.HotKeys
		if cc.Status.ObservedGeneration != cc.Generation || hk == nil || hk.LastDecision == nil {
			return false, fmt.Errorf("status.hotKeys %+v at generation %d", hk, cc.Status.ObservedGeneration)
		}
		return hk.ReportsMissing == 0, fmt.Errorf("%d reports missing", hk.ReportsMissing)
	})
}

// copiesDuring waits for job to complete, and fails the test unless a
// decision while it ran considered some of its keys.
func copiesDuring(k *kube, job string) {
	k.t.Helper()
	var seen v1alpha1.HotKeyStatus
	k.await("benchmark Job complete", 4*time.Minute, func() (bool, error) {
		if hk := k.cluster(sample).Status.HotKeys; hk != nil && hk.Uncached+hk.OneCopy+hk.TwoCopies+hk.MoreCopies > 0 {
			seen = *hk
		}
		// Through the API client, not kubectl: a process every 50 ms would
		// take a core from the benchmark.
		j, err := k.cs.BatchV1().Jobs("default").Get(k.ctx, job, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return j.Status.Succeeded == 1, fmt.Errorf("job %s succeeded %d", job, j.Status.Succeeded)
	})
	if seen.LastDecision == nil {
		k.t.Fatal("no decision of copies while the benchmark Job ran considered a key")
	}
	k.t.Logf("a decision of copies of hot keys under the benchmark Job: %+v (partition map v%d after the Job)", seen, k.cluster(sample).Status.MapVersion)
}

// copiesOff turns the decision off again and waits until the map gives every key one copy per layer.
func copiesOff(k *kube) {
	k.t.Helper()
	k.do("", "patch", "cachecluster", sample, "--type=merge", "-p", `{"spec":{"hotKeys":{"replication":{"enabled":false}}}}`)
	k.await("copies back to one per layer", time.Minute, func() (bool, error) {
		cc := k.cluster(sample)
		return cc.Status.ObservedGeneration == cc.Generation && cc.Status.HotKeys == nil, fmt.Errorf("status.hotKeys %+v", cc.Status.HotKeys)
	})
	k.awaitHealed(sample, samplePods)
}

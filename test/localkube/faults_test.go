package localkube

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/distcache/distcache/internal/testing/kubetest"
)

// sample is the CacheCluster of config/samples that the tests run: 8
// storage pods, 4 spine and 4 leaf cache nodes, and a gateway.
const (
	sample     = "shop-managed"
	samplePods = 17
)

// checkJob is a run of chaos/check-job.yaml against the sample cluster.
type checkJob struct {
	k    *kube
	name string
}

// startCheck applies chaos/check-job.yaml, rewritten for the sample in
// namespace default as docs/chaos.md shows, under name, and waits until
// its preload is done and the timed workload runs.
func (k *kube) startCheck(name string) *checkJob {
	k.t.Helper()
	raw, err := os.ReadFile(filepath.Join(kubetest.RepoRoot(), "chaos", "check-job.yaml"))
	if err != nil {
		k.t.Fatal(err)
	}
	manifest := strings.NewReplacer(
		"namespace: distcache\n", "namespace: default\n",
		"name: distcache-check\n", "name: "+name+"\n",
		"distcache/demo-partition-map", "default/"+sample+"-partition-map",
		"demo-", sample+"-",
		"distcache.io/client: demo\n", "distcache.io/client: "+sample+"\n",
	).Replace(string(raw))
	k.do(manifest, "apply", "-f", "-")
	j := &checkJob{k: k, name: name}
	k.await(name+"'s workload started", 5*time.Minute, func() (bool, error) {
		log := j.log()
		if j.failed() {
			k.t.Fatalf("%s failed:\n%s", name, log)
		}
		return strings.Contains(log, "check: workload"), fmt.Errorf("log:\n%s", log)
	})
	return j
}

// failed says whether the check's Job has failed.
func (j *checkJob) failed() bool {
	job, err := j.k.cs.BatchV1().Jobs("default").Get(j.k.ctx, j.name, metav1.GetOptions{})
	return err == nil && job.Status.Failed > 0
}

// log is the check's output so far ("" before its pod runs).
func (j *checkJob) log() string {
	out, err := j.k.run("", "logs", "job/"+j.name)
	if err != nil {
		return ""
	}
	return out
}

// pod is the name of the check's pod.
func (j *checkJob) pod() string {
	j.k.t.Helper()
	pods, err := j.k.cs.CoreV1().Pods("default").List(j.k.ctx, metav1.ListOptions{LabelSelector: "job-name=" + j.name})
	if err != nil || len(pods.Items) != 1 {
		j.k.t.Fatalf("pods of job %s: %v (%d)", j.name, err, len(pods.Items))
	}
	return pods.Items[0].Name
}

// finish ends the workload with SIGTERM and waits for the verdict: the
// workload must still have been running (every fault happened under it),
// and the check must pass. It returns the check's log.
func (j *checkJob) finish() string {
	k := j.k
	k.t.Helper()
	k.signal(j.pod(), "check", "SIGTERM")
	k.await(j.name+" finished", 10*time.Minute, func() (bool, error) {
		job, err := k.cs.BatchV1().Jobs("default").Get(k.ctx, j.name, metav1.GetOptions{})
		return err == nil && job.Status.Succeeded+job.Status.Failed > 0, err
	})
	log := j.log()
	k.t.Logf("%s:\n%s", j.name, log)
	ended, readBack := strings.Index(log, "the workload ends now"), strings.Index(log, "check: read-back")
	if ended < 0 || readBack < ended {
		k.t.Errorf("%s: the workload ended before the test ended it: the faults were not all under the workload", j.name)
	}
	if !strings.Contains(log, "\nPASS: ") && !strings.HasPrefix(log, "PASS: ") {
		k.t.Fatalf("%s did not pass", j.name)
	}
	return log
}

// checkVerdict is the verdict line of a check that passed.
var checkVerdict = regexp.MustCompile(`(?m)^PASS: \d+ operations \(\d+ reads, \d+ writes, (\d+) of unknown outcome\)`)

// failedReads is the count of failed reads (each logged as it failed) and
// of writes of unknown outcome (the verdict's) in the log of a check that
// passed.
func failedReads(t *testing.T, log string) (reads, unknownWrites int) {
	t.Helper()
	m := checkVerdict.FindStringSubmatch(log)
	if m == nil {
		t.Fatalf("no verdict in the check's log:\n%s", log)
	}
	unknownWrites, _ = strconv.Atoi(m[1])
	return len(failedRead.FindAllString(log, -1)), unknownWrites
}

// faultWindow is when one fault was under way: from its injection to the
// cluster healed.
type faultWindow struct {
	kind     string
	from, to time.Time
}

// failedRead is the time of a "read failed" line of the check's log.
var failedRead = regexp.MustCompile(`(?m)^time=(\S+) level=WARN msg="read failed"`)

// unknownWrite is the time of a "write of unknown outcome" line of the
// check's log.
var unknownWrite = regexp.MustCompile(`(?m)^time=(\S+) level=WARN msg="write of unknown outcome"`)

// countIn counts the check's log lines that line matches (its first group
// the time) in each kind of fault window, "between faults" for the others.
func countIn(t *testing.T, log string, line *regexp.Regexp, windows []faultWindow) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, w := range windows {
		out[w.kind] += 0
	}
	for _, m := range line.FindAllStringSubmatch(log, -1) {
		at, err := time.Parse(time.RFC3339Nano, m[1])
		if err != nil {
			t.Fatalf("a log line's time %q: %v", m[1], err)
		}
		kind := "between faults"
		for _, w := range windows {
			if !at.Before(w.from) && !at.After(w.to) {
				kind = w.kind
				break
			}
		}
		out[kind]++
	}
	return out
}

// killContainer kills container name of pod with SIGKILL and waits until
// the kubelet has restarted it and the cluster has healed.
func (k *kube) killContainer(pod, name string) {
	k.t.Helper()
	restarts := k.container(pod, name).RestartCount
	k.signal(pod, name, "SIGKILL")
	k.await(pod+"'s "+name+" restarted", 3*time.Minute, func() (bool, error) {
		c := k.container(pod, name)
		return c.RestartCount > restarts && c.Ready, fmt.Errorf("restarts %d, ready %v", c.RestartCount, c.Ready)
	})
	k.awaitHealed(sample, samplePods)
}

// restartOperator deletes the operator's pod and waits until its
// replacement holds the leader election lease.
func (k *kube) restartOperator() {
	k.t.Helper()
	const ns = "distcache-system"
	sel := metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=operator"}
	old, err := k.cs.CoreV1().Pods(ns).List(k.ctx, sel)
	if err != nil || len(old.Items) != 1 {
		k.t.Fatalf("operator pods: %v (%d)", err, len(old.Items))
	}
	if err := k.cs.CoreV1().Pods(ns).Delete(k.ctx, old.Items[0].Name, metav1.DeleteOptions{}); err != nil {
		k.t.Fatal(err)
	}
	k.await("a new operator leads", 3*time.Minute, func() (bool, error) {
		pods, err := k.cs.CoreV1().Pods(ns).List(k.ctx, sel)
		if err != nil {
			return false, err
		}
		leases, err := k.cs.CoordinationV1().Leases(ns).List(k.ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, p := range pods.Items {
			if p.Name != old.Items[0].Name && podIsReady(p) && heldBy(leases.Items, p.Name) {
				return true, nil
			}
		}
		return false, fmt.Errorf("%d operator pods, leases %d", len(pods.Items), len(leases.Items))
	})
}

// heldBy says whether one of leases is held by pod (controller-runtime's
// identity is the pod's hostname and a suffix).
func heldBy(leases []coordinationv1.Lease, pod string) bool {
	for _, l := range leases {
		if h := l.Spec.HolderIdentity; h != nil && strings.HasPrefix(*h, pod+"_") {
			return true
		}
	}
	return false
}

func podIsReady(p corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue && p.DeletionTimestamp == nil
		}
	}
	return false
}

// scaleSpine sets the sample's spine layer to nodes with kubectl patch and
// waits until the cluster has healed with them.
func (k *kube) scaleSpine(nodes int32) {
	k.t.Helper()
	k.do("", "patch", "cachecluster", sample, "--type", "json", "-p",
		fmt.Sprintf(`[{"op":"replace","path":"/spec/layers/0/nodes","value":%d}]`, nodes))
	k.await(fmt.Sprintf("spine of %d nodes", nodes), 3*time.Minute, func() (bool, error) {
		cc := k.cluster(sample)
		return cc.Status.Members == nodes+4, fmt.Errorf("%d members", cc.Status.Members)
	})
	k.awaitHealed(sample, samplePods+nodes-4)
}

// members are the sample's cache members, spine first.
func (k *kube) members() []string {
	k.t.Helper()
	var out []string
	for _, l := range k.cluster(sample).Status.Layers {
		for _, m := range l.Members {
			out = append(out, m.Name)
		}
	}
	return out
}

// remapDeletions is how many cache-node pods the remap timing deletes on
// the quiet cluster; loadedDeletions how many more it deletes under the
// check's workload.
const (
	remapDeletions  = 10
	loadedDeletions = 3
)

// faultsUnderCheck times the remap after cache-node pod deletions on the
// quiet cluster, then runs the faults of the issue one at a time under a
// `distcache check` Job, each healed before the next: cache-node pods
// deleted (and timed again), a shim and a Redis container killed, the
// operator's pod restarted (and a deletion healed by its successor), and
// the spine layer scaled up and down. The check must pass: every history
// linearizable, no acknowledged write lost. It returns the quiet and the
// loaded timings.
func faultsUnderCheck(k *kube) (quiet, loaded []remapTimes) {
	k.t.Helper()
	// A grace period of a second, as docs/benchmarks.md's remap timing
	// states, and the shortest hold-down.
	k.do("", "patch", "cachecluster", sample, "--type", "merge", "-p", `{"spec":{"failover":{"gracePeriod":"1s","holdDown":"1s"}}}`)
	k.await("failover patch observed", time.Minute, func() (bool, error) {
		cc := k.cluster(sample)
		return cc.Status.ObservedGeneration == cc.Generation, nil
	})
	k.awaitHealed(sample, samplePods)
	members := k.members()
	deleteTimed := func(i int) remapTimes {
		r := k.deleteAndTime(sample, members[i%len(members)])
		k.awaitHealed(sample, samplePods)
		return r
	}
	for i := range remapDeletions {
		quiet = append(quiet, deleteTimed(i))
	}

	check := k.startCheck(sample + "-check")
	var windows []faultWindow
	during := func(kind string, fault func()) {
		from := time.Now()
		fault()
		windows = append(windows, faultWindow{kind, from, time.Now()})
	}
	for i := range loadedDeletions {
		during("cache-node pod deleted", func() { loaded = append(loaded, deleteTimed(i)) })
	}
	during("shim container killed", func() { k.killContainer(sample+"-rack-1-0", "shim") })
	during("redis container killed", func() { k.killContainer(sample+"-rack-2-1", "redis") })
	during("operator restarted, then a cache-node pod deleted", func() {
		k.restartOperator()
		loaded = append(loaded, deleteTimed(loadedDeletions))
	})
	during("spine scaled out and in", func() {
		k.scaleSpine(5)
		k.scaleSpine(4)
	})
	log := check.finish()
	failed := countIn(k.t, log, failedRead, windows)
	reads, unknown := failedReads(k.t, log)
	k.t.Logf("%s: %d failed reads, %d writes of unknown outcome; failed reads by fault: %v; writes of unknown outcome by fault: %v",
		check.name, reads, unknown, failed, countIn(k.t, log, unknownWrite, windows))
	// A read of a key whose candidate is gone goes to the other candidate
	// or to storage: none fails. A Redis server killed fails the reads of
	// its shard's uncached keys until it is back, if that takes longer
	// than a read's deadline (the check's --op-timeout, 2 s).
	for _, kind := range []string{"cache-node pod deleted", "operator restarted, then a cache-node pod deleted", "spine scaled out and in", "between faults"} {
		if failed[kind] != 0 {
			k.t.Errorf("%s: %d reads failed, want none", kind, failed[kind])
		}
	}
	return quiet, loaded
}

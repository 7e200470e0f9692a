package localkube

import (
	"context"
	"crypto/tls"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/distcache/distcache/internal/buildinfo"
	"github.com/distcache/distcache/internal/testing/certtest"
	"github.com/distcache/distcache/internal/testing/poll"
	"github.com/distcache/distcache/operator/controller/cachecluster"
	"github.com/distcache/distcache/placement/partmap"
	"github.com/distcache/distcache/snapshot"
)

// The secured clusters: managed Redis with a password and TLS only.
const (
	securedPassword = "localkube-redis-s3cret"
	securedKeys     = 200
)

// securedCluster is a CacheCluster whose Redis requires the password of
// Secret <name>-login and serves TLS only with the certificate of Secret
// <name>-cert, with a backup CronJob into claim <name>-backups if backup,
// else with a gateway that reaches Redis itself (direct reads and writes)
// and keys placed by their hash tags.
func securedCluster(name, shards string, backup bool) string {
	y := fmt.Sprintf(`apiVersion: distcache.io/v1alpha1
kind: CacheCluster
metadata: {name: %[1]s}
spec:
  storage:
    mode: managed
    racks: 1
    shardsPerRack: %[2]s
    auth: {secretName: %[1]s-login}
    tls: {certSecretName: %[1]s-cert}
`, name, shards)
	if backup {
		y += fmt.Sprintf("    backup: {schedule: \"0 0 1 1 *\", volumeClaimName: %s-backups, keep: 2}\n", name)
		y += "  gateway: {replicas: 0}\n"
	} else {
		y += "    hashTags: true\n  dataPlane: {directReads: true, directWrites: true}\n"
	}
	return y + `  layers:
    - {name: spine, nodes: 1}
`
}

// restoreJob restores snapshot set %[2]s of claim sec-backups into cluster
// sec-restored with the distcache image %[1]s, as docs/durability.md's
// example does.
const restoreJob = `apiVersion: batch/v1
kind: Job
metadata: {name: sec-restore}
spec:
  backoffLimit: 0
  template:
    metadata:
      labels: {distcache.io/backup-of: sec-restored}
    spec:
      restartPolicy: Never
      automountServiceAccountToken: false
      securityContext: {runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532, fsGroup: 65532}
      containers:
        - name: restore
          image: %[1]s
          imagePullPolicy: Never
          args:
            - restore
            - --from=/backups/%[2]s
            - --map=/etc/distcache/map/map.json
            - --redis-address-template={shard}.{rack}.default.svc:6379
            - --redis-password-file=/etc/distcache/redis-auth/password
            - --redis-previous-password-file=/etc/distcache/redis-auth/previous
            - --redis-tls
            - --redis-tls-ca-file=/etc/distcache/redis-tls/ca.crt
          securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}
          volumeMounts:
            - {name: backups, mountPath: /backups, readOnly: true}
            - {name: map, mountPath: /etc/distcache/map, readOnly: true}
            - {name: redis-auth, mountPath: /etc/distcache/redis-auth, readOnly: true}
            - {name: redis-tls, mountPath: /etc/distcache/redis-tls, readOnly: true}
      volumes:
        - name: backups
          persistentVolumeClaim: {claimName: sec-backups}
        - name: map
          configMap: {name: sec-restored-partition-map, items: [{key: map.json, path: map.json}]}
        - name: redis-auth
          secret: {secretName: sec-restored-login, defaultMode: 0440}
        - name: redis-tls
          secret: {secretName: sec-restored-cert, items: [{key: ca.crt, path: ca.crt}], defaultMode: 0440}
`

// securedStorage runs managed Redis with storage.auth and storage.tls on
// the real kubelet and backs it up: the shims log in over TLS (the cluster
// becomes Ready), a client without the password or without TLS is
// refused, the backup CronJob's Job (the distcache image, logging in as
// the shims do) writes a verified snapshot set into a hostPath volume,
// and a restore Job of the same image loads that set into a second
// secured cluster of another shape: every key is back.
func securedStorage(ctx context.Context, t *testing.T, k *kube) {
	t.Helper()
	dir := t.TempDir()
	ca := certtest.NewCA(t, dir, "localkube-redis-ca")
	for _, name := range []string{"sec", "sec-restored"} {
		cert, key := ca.Server(t, name+"-redis", fmt.Sprintf("*.%s-rack-0.default.svc", name))
		k.do("", "create", "secret", "generic", name+"-login", "--from-literal=password="+securedPassword)
		k.do("", "create", "secret", "generic", name+"-cert", "--from-file=tls.crt="+cert, "--from-file=tls.key="+key, "--from-file=ca.crt="+ca.File)
	}
	k.do(`apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: sec-backups}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 100Mi}}
`, "apply", "-f", "-")
	k.do(securedCluster("sec", "2", true), "apply", "-f", "-")
	k.do(securedCluster("sec-restored", "3", false), "apply", "-f", "-")
	for _, name := range []string{"sec", "sec-restored"} {
		k.do("", "wait", "--for=condition=Ready", "cachecluster/"+name, "--timeout=240s")
	}

	options := func(pod corev1.Pod, rack string, tlsOn bool, password string) *redis.Options {
		o := &redis.Options{Addr: pod.Status.PodIP + ":6379", Password: password, MaxRetries: -1, DialTimeout: 5 * time.Second}
		if tlsOn {
			o.TLSConfig = &tls.Config{RootCAs: ca.Pool(), ServerName: fmt.Sprintf("%s.%s.default.svc", pod.Name, rack), MinVersion: tls.VersionTLS12}
		}
		return o
	}
	login := func(pod corev1.Pod, rack string, tlsOn bool, password string) *redis.Client {
		return redis.NewClient(options(pod, rack, tlsOn, password))
	}
	shards := func(cluster string) []corev1.Pod {
		var out []corev1.Pod
		for name, p := range k.dataPlanePods(cluster) {
			if strings.HasPrefix(name, cluster+"-rack-") {
				out = append(out, p)
			}
		}
		return out
	}
	src := shards("sec")
	if len(src) != 2 {
		t.Fatalf("cluster sec: %d Ready shard pods, want 2", len(src))
	}

	// The attacks: no password, the wrong one, plaintext.
	for _, tc := range []struct {
		what, password, want string
		tlsOn                bool
	}{
		{"no password", "", "NOAUTH", true},
		{"a wrong password", "guess", "WRONGPASS", true},
		{"plaintext", securedPassword, "", false},
	} {
		c := login(src[0], "sec-rack-0", tc.tlsOn, tc.password)
		err := c.Set(ctx, "attack", "x", 0).Err()
		c.Close()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s to Redis of %s: %v, want a refusal %q", tc.what, src[0].Name, err, tc.want)
		}
		t.Logf("%s to Redis of %s: %v", tc.what, src[0].Name, err)
	}

	// N keys straight into the source's Redis, each on its own shard.
	for i := range securedKeys {
		p := src[i%len(src)]
		c := login(p, "sec-rack-0", true, securedPassword)
		err := c.Set(ctx, fmt.Sprintf("sec:%d", i), fmt.Sprintf("v%d", i), 0).Err()
		c.Close()
		if err != nil {
			t.Fatalf("cannot write with the password over TLS: %v", err)
		}
	}

	// A backup now, from the CronJob's template, as `kubectl create job
	// --from` runs it.
	k.do("", "create", "job", "sec-backup-now", "--from=cronjob/"+cachecluster.BackupCronJobName("sec"))
	k.do("", "wait", "--for=condition=Complete", "job/sec-backup-now", "--timeout=180s")
	pv := k.do("", "get", "pvc", "sec-backups", "-o", "jsonpath={.spec.volumeName}")
	root := k.do("", "get", "pv", pv, "-o", "jsonpath={.spec.hostPath.path}")
	sets, err := snapshot.Sets(root, "sec")
	if err != nil || len(sets) != 1 {
		t.Fatalf("snapshot sets of sec in %s: %v (%v), want one", root, sets, err)
	}
	m, err := snapshot.VerifySet(sets[0])
	if err != nil || len(m.Shards) != 2 {
		t.Fatalf("snapshot set %s: %d shards (%v), want 2 verified", sets[0], len(m.Shards), err)
	}

	// Restored into the other cluster, of three shards, by a Job of the
	// distcache image as docs/durability.md writes it (no redis-server).
	k.do(fmt.Sprintf(restoreJob, buildinfo.Image, filepath.Base(sets[0])), "apply", "-f", "-")
	k.do("", "wait", "--for=condition=Complete", "job/sec-restore", "--timeout=180s")
	restored := k.do("", "logs", "job/sec-restore")
	if !strings.Contains(restored, fmt.Sprintf("restored %d keys", securedKeys)) {
		t.Fatalf("restore Job: %s", restored)
	}
	cm := &corev1.ConfigMap{}
	if err := k.c.Get(ctx, client.ObjectKey{Namespace: "default", Name: cachecluster.MapConfigMapName("sec-restored")}, cm); err != nil {
		t.Fatal(err)
	}
	dm, err := partmap.Decode([]byte(cm.Data[cachecluster.MapKey]))
	if err != nil {
		t.Fatal(err)
	}
	placement, err := partmap.Compile(dm)
	if err != nil {
		t.Fatal(err)
	}
	dst := map[string]corev1.Pod{}
	for _, p := range shards("sec-restored") {
		dst[p.Name] = p
	}
	if len(dst) != 3 {
		t.Fatalf("cluster sec-restored: %d Ready shard pods, want 3", len(dst))
	}
	target := func(r, s int) *redis.Options {
		name := fmt.Sprintf("sec-restored-rack-%d-%d", r, s)
		return options(dst[name], fmt.Sprintf("sec-restored-rack-%d", r), true, securedPassword)
	}
	for i := range securedKeys {
		key := fmt.Sprintf("sec:%d", i)
		r, s := placement.Shard(key)
		c := redis.NewClient(target(r, s))
		got, err := c.Get(ctx, key).Result()
		c.Close()
		if err != nil || got != fmt.Sprintf("v%d", i) {
			t.Fatalf("restored %s on shard %d/%d: %q (%v)", key, r, s, got, err)
		}
	}
	t.Logf("backup of sec by its CronJob's Job (%d shards, %s) restored into sec-restored by a Job: %s; every key read back", len(m.Shards), sets[0], restored)
	gatewayAtSecuredRedis(ctx, t, k, "sec-restored")
	for _, name := range []string{"sec", "sec-restored"} {
		k.do("", "delete", "cachecluster", name, "--wait=true", "--timeout=120s")
	}
	k.do("", "delete", "job/sec-backup-now", "job/sec-restore", "pvc/sec-backups", "--wait=false", "--ignore-not-found") // the backup Job went with its CronJob
}

// gatewayAtSecuredRedis runs, through the gateway Service of cluster, what
// the gateway runs at the shards' Redis itself, logged in with the
// cluster's password over TLS to each server's DNS name: a direct read of
// a restored key, a transaction of keys with one hash tag, a script, and
// DBSIZE over every shard.
func gatewayAtSecuredRedis(ctx context.Context, t *testing.T, k *kube, cluster string) {
	t.Helper()
	poll.Eventually(t, "the gateway Deployment", func() (bool, error) {
		_, err := k.run("", "get", "deployment", cachecluster.GatewayName(cluster))
		return err == nil, err
	})
	k.do("", "rollout", "status", "deployment/"+cachecluster.GatewayName(cluster), "--timeout=240s")
	ip := k.do("", "get", "service", cachecluster.GatewayName(cluster), "-o", "jsonpath={.spec.clusterIP}")
	gw := redis.NewClient(&redis.Options{Addr: ip + ":6379"})
	defer gw.Close()
	// kube-proxy's rules for the Service come soon after the pod is Ready.
	poll.Within(t, "a restored key through the gateway Service", 2*time.Minute, func() (bool, error) {
		got, err := gw.Get(ctx, "sec:7").Result()
		return err == nil && got == "v7", fmt.Errorf("GET sec:7 = %q (%v)", got, err)
	})
	// A read reaches one shard; the DNS names of the others may come a
	// little later. DBSIZE logs in to every shard's Redis.
	poll.Within(t, "DBSIZE through the gateway Service", 2*time.Minute, func() (bool, error) {
		n, err := gw.DBSize(ctx).Result()
		return err == nil && n >= securedKeys, fmt.Errorf("DBSIZE = %d (%v), want at least %d", n, err, securedKeys)
	})
	if _, err := gw.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, "{order}:state", "paid", 0)
		p.IncrBy(ctx, "{order}:items", 2)
		return nil
	}); err != nil {
		t.Fatalf("MULTI/EXEC through the gateway: %v", err)
	}
	if got, err := gw.Eval(ctx, "return redis.call('GET', KEYS[1])", []string{"{order}:state"}).Text(); err != nil || got != "paid" {
		t.Fatalf("EVAL through the gateway = %q (%v), want paid", got, err)
	}
	if n, err := gw.DBSize(ctx).Result(); err != nil || n < securedKeys+2 {
		t.Fatalf("DBSIZE through the gateway = %d (%v), want at least %d", n, err, securedKeys+2)
	}
	t.Logf("gateway of %s at Redis with a password over TLS: a direct read, MULTI/EXEC, EVAL and DBSIZE", cluster)
}

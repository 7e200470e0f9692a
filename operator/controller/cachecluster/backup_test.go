package cachecluster_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/operator/controller/cachecluster"
)

func withBackup(schedule, claim string, keep int32) clusterOption {
	return func(cc *v1alpha1.CacheCluster) {
		cc.Spec.Storage.Backup = &v1alpha1.BackupSpec{Schedule: schedule, VolumeClaimName: claim, Keep: keep}
	}
}

// TestBackupCronJob checks the CronJob the operator renders for
// spec.storage.backup, that the status reports its last runs, and that it
// is deleted with the spec's backup.
func TestBackupCronJob(t *testing.T) {
	startOperator(t, &clock{t: time.Now()}, func(r *cachecluster.Reconciler) { r.DataPlaneImage = "registry.example/distcache:v1" })
	cc := newCluster(t, "bk", withStorage(v1alpha1.StorageManaged, 2, 3), withLayer("spine", 1, false), withBackup("30 2 * * *", "bk-backups", 5))
	cj := &batchv1.CronJob{}
	eventually(t, "backup CronJob created", func() (bool, error) {
		err := get(t, cj, cc.Namespace, cachecluster.BackupCronJobName(cc.Name))
		return err == nil, client.IgnoreNotFound(err)
	})
	if cj.Spec.Schedule != "30 2 * * *" || cj.Spec.ConcurrencyPolicy != batchv1.ForbidConcurrent || cj.Spec.Suspend == nil || *cj.Spec.Suspend {
		t.Fatalf("CronJob schedule %q, concurrency %s, suspend %v; want 30 2 * * *, Forbid, false", cj.Spec.Schedule, cj.Spec.ConcurrencyPolicy, cj.Spec.Suspend)
	}
	if ref := metav1.GetControllerOf(cj); ref == nil || ref.Name != cc.Name {
		t.Fatalf("CronJob controller %+v, want the CacheCluster", ref)
	}
	pod := cj.Spec.JobTemplate.Spec.Template
	if pod.Labels[cachecluster.LabelBackupOf] != cc.Name || pod.Labels[cachecluster.LabelCluster] != "" {
		t.Fatalf("backup pod labels %v: want %s=%s and no %s (not a data-plane pod)", pod.Labels, cachecluster.LabelBackupOf, cc.Name, cachecluster.LabelCluster)
	}
	if pod.Spec.AutomountServiceAccountToken == nil || *pod.Spec.AutomountServiceAccountToken || pod.Spec.ServiceAccountName != "" {
		t.Fatalf("backup pod mounts a ServiceAccount token (%v, %q): it needs none", pod.Spec.AutomountServiceAccountToken, pod.Spec.ServiceAccountName)
	}
	if len(pod.Spec.Volumes) != 1 || pod.Spec.Volumes[0].PersistentVolumeClaim == nil || pod.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != "bk-backups" {
		t.Fatalf("backup pod volumes %+v, want the claim bk-backups", pod.Spec.Volumes)
	}
	c := pod.Spec.Containers[0]
	wantArgs := []string{
		"backup", "--cluster=bk", "--racks=2", "--shards-per-rack=3",
		"--redis-address-template={shard}.{rack}." + cc.Namespace + ".svc:6379",
		"--out=/backups", "--keep=5",
	}
	if c.Image != "registry.example/distcache:v1" || !slices.Equal(c.Args, wantArgs) || c.Command != nil {
		t.Fatalf("backup container %s %q (command %q), want %s %q", c.Image, c.Args, c.Command, "registry.example/distcache:v1", wantArgs)
	}
	if len(c.VolumeMounts) != 1 || c.VolumeMounts[0].MountPath != cachecluster.BackupMountPath || *c.SecurityContext.ReadOnlyRootFilesystem != true {
		t.Fatalf("backup container mounts %+v, security %+v", c.VolumeMounts, c.SecurityContext)
	}

	// No CronJob controller runs here: the test reports a successful run.
	done := metav1.NewTime(time.Date(2026, 7, 1, 2, 31, 7, 0, time.UTC))
	cj.Status.LastScheduleTime = &metav1.Time{Time: done.Add(-time.Minute)}
	cj.Status.LastSuccessfulTime = &done
	if err := env.Client.Status().Update(context.Background(), cj); err != nil {
		t.Fatal(err)
	}
	stored := &v1alpha1.CacheCluster{}
	eventually(t, "status reports the last successful backup", func() (bool, error) {
		if err := get(t, stored, cc.Namespace, cc.Name); err != nil {
			return false, err
		}
		b := stored.Status.Backup
		return b != nil && b.CronJob == cj.Name && b.LastSuccessfulTime != nil && b.LastSuccessfulTime.Equal(&done), nil
	})

	changed := stored.DeepCopy()
	changed.Spec.Storage.Backup = nil
	if err := env.Client.Patch(context.Background(), changed, client.MergeFrom(stored)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "CronJob deleted and status cleared", func() (bool, error) {
		err := get(t, &batchv1.CronJob{}, cc.Namespace, cj.Name)
		if client.IgnoreNotFound(err) != nil {
			return false, err
		}
		if err := get(t, stored, cc.Namespace, cc.Name); err != nil {
			return false, err
		}
		return apierrors.IsNotFound(err) && stored.Status.Backup == nil, nil
	})
}

// TestBackupRefusedOutsideManaged checks that the API server refuses a
// backup of external and redisOperator storage, with its reason.
func TestBackupRefusedOutsideManaged(t *testing.T) {
	for _, tc := range []struct {
		name string
		opt  clusterOption
	}{
		{"external", withStorage(v1alpha1.StorageExternal, 1, 1, "198.18.0.1:6379")},
		{"redisOperator", withStorage(v1alpha1.StorageRedisOperator, 1, 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "cc-"}}
			if err := env.Client.Create(context.Background(), ns); err != nil {
				t.Fatal(err)
			}
			cc := &v1alpha1.CacheCluster{ObjectMeta: metav1.ObjectMeta{Name: "bk", Namespace: ns.Name}}
			tc.opt(cc)
			withLayer("spine", 1, false)(cc)
			withBackup("@daily", "backups", 0)(cc)
			err := env.Client.Create(context.Background(), cc)
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "storage.backup is only for mode: managed") {
				t.Fatalf("Create: %v; want Invalid, saying backup is only for mode managed", err)
			}
		})
	}
}

// TestBackupCronJobLogsIn: with storage.auth and storage.tls the backup pod
// logs in as the shims do, checks each server's certificate against the
// name of the address it dials, and mounts only the CA bundle of the
// servers' own TLS Secret, not their key.
func TestBackupCronJobLogsIn(t *testing.T) {
	startOperator(t, &clock{t: time.Now()})
	cc := newCluster(t, "bkauth", withStorage(v1alpha1.StorageManaged, 1, 1), withLayer("spine", 1, false), withBackup("@daily", "bk", 3),
		withRedisSecurity(&v1alpha1.RedisAuthSpec{SecretName: "redis-login"}, &v1alpha1.RedisTLSSpec{CertSecretName: "redis-cert"}))
	cj := &batchv1.CronJob{}
	eventually(t, "backup CronJob created", func() (bool, error) {
		err := get(t, cj, cc.Namespace, cachecluster.BackupCronJobName(cc.Name))
		return err == nil, client.IgnoreNotFound(err)
	})
	pod := cj.Spec.JobTemplate.Spec.Template.Spec
	args := pod.Containers[0].Args
	for _, want := range []string{"--redis-password-file=/etc/distcache/redis-auth/password", "--redis-tls",
		"--redis-tls-ca-file=" + cachecluster.RedisServerTLSMountPath + "/ca.crt"} {
		if !slices.Contains(args, want) {
			t.Errorf("backup args %q lack %s", args, want)
		}
	}
	for _, a := range args {
		if strings.HasPrefix(a, "--redis-tls-server-name") {
			t.Errorf("backup args hold %s: each server's name is its address's host", a)
		}
	}
	for _, v := range pod.Volumes {
		if v.Name != cachecluster.RedisServerTLSVolume {
			continue
		}
		if v.Secret == nil || v.Secret.SecretName != "redis-cert" || len(v.Secret.Items) != 1 || v.Secret.Items[0].Key != "ca.crt" {
			t.Errorf("servers' TLS volume %+v: want only ca.crt of redis-cert", v.VolumeSource)
		}
		return
	}
	t.Errorf("backup pod volumes %+v lack the servers' CA bundle", pod.Volumes)
}

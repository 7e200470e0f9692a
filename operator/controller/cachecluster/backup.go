package cachecluster

import (
	"cmp"
	"context"
	"fmt"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/distcache/distcache/api/v1alpha1"
)

// The backup CronJob: batch cronjobs, owned and watched.
// +kubebuilder:rbac:groups=batch,resources=cronjobs,verbs=list;watch;create;update;delete;deletecollection

// LabelBackupOf marks the pods of a cluster's backup Jobs with the
// cluster's name. They do not carry LabelCluster: they are not data-plane
// pods, and the cluster's readiness does not count them.
const LabelBackupOf = "distcache.io/backup-of"

// ComponentBackup is the component of the backup CronJob.
const ComponentBackup = "backup"

// Where the backup pod mounts spec.storage.backup.volumeClaimName.
const (
	BackupVolume    = "backups"
	BackupMountPath = "/backups"
)

// BackupCronJobName names a cluster's backup CronJob.
func BackupCronJobName(cluster string) string { return cluster + "-backup" }

// defaultBackupKeep is the API's default of backup.keep, for specs the
// API server has not defaulted.
const defaultBackupKeep = 7

// reconcileBackup keeps the backup CronJob of spec.storage.backup (managed
// storage only: the API refuses it for the other modes), deletes it when
// the spec has none, and reports its last runs in the status.
func (r *Reconciler) reconcileBackup(ctx context.Context, s *state) (ctrl.Result, error) {
	cj := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: BackupCronJobName(s.cc.Name), Namespace: s.cc.Namespace}}
	b := s.cc.Spec.Storage.Backup
	if b == nil || (s.cc.Spec.Storage.Mode != "" && s.cc.Spec.Storage.Mode != v1alpha1.StorageManaged) {
		if err := r.Delete(ctx, cj); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, fmt.Errorf("cannot delete backup CronJob of %s: %w", s.cc.Name, err)
		}
		s.cc.Status.Backup = nil
		return ctrl.Result{}, nil
	}
	if err := r.apply(ctx, s.cc, cj, func() { r.mutateBackupCronJob(s, b, cj) }); err != nil {
		return ctrl.Result{}, err
	}
	s.cc.Status.Backup = &v1alpha1.BackupStatus{
		CronJob:            cj.Name,
		LastScheduleTime:   cj.Status.LastScheduleTime,
		LastSuccessfulTime: cj.Status.LastSuccessfulTime,
	}
	return ctrl.Result{}, nil
}

// backupArgs are the arguments of `distcache backup` for s's cluster: its
// shards' Redis by their pods' DNS names under each rack's headless
// Service, into the claim's mount.
func backupArgs(s *state, keep int32) []string {
	if keep < 1 {
		keep = defaultBackupKeep
	}
	return []string{
		"backup",
		"--cluster=" + s.cc.Name,
		"--racks=" + strconv.Itoa(s.topo.Racks()),
		"--shards-per-rack=" + strconv.Itoa(s.topo.ShardsPerRack()),
		fmt.Sprintf("--redis-address-template={shard}.{rack}.%s.svc:%d", s.cc.Namespace, RedisPort),
		"--out=" + BackupMountPath,
		"--keep=" + strconv.Itoa(int(keep)),
	}
}

// mutateBackupCronJob sets the CronJob: one Job at a time, each a pod of
// the distcache image with no ServiceAccount token (it talks to Redis
// only) that writes into the claim.
func (r *Reconciler) mutateBackupCronJob(s *state, b *v1alpha1.BackupSpec, cj *batchv1.CronJob) {
	image, _, pull := r.images(s.cc)
	cj.Labels = labels(s.cc, ComponentBackup)
	podLabels := map[string]string{
		"app.kubernetes.io/name":       "distcache",
		"app.kubernetes.io/instance":   s.cc.Name,
		"app.kubernetes.io/component":  ComponentBackup,
		"app.kubernetes.io/managed-by": "distcache-operator",
		LabelBackupOf:                  s.cc.Name,
	}
	cj.Spec.Schedule = b.Schedule
	cj.Spec.Suspend = ptr.To(b.Suspend)
	cj.Spec.ConcurrencyPolicy = batchv1.ForbidConcurrent
	cj.Spec.SuccessfulJobsHistoryLimit = ptr.To[int32](3)
	cj.Spec.FailedJobsHistoryLimit = ptr.To[int32](3)
	job := &cj.Spec.JobTemplate.Spec
	job.BackoffLimit = ptr.To[int32](2)
	job.Template.Labels = podLabels
	pod := &job.Template.Spec
	pod.RestartPolicy = corev1.RestartPolicyNever
	pod.AutomountServiceAccountToken = ptr.To(false)
	pod.SecurityContext = podSecurity()
	pod.Volumes = []corev1.Volume{{Name: BackupVolume, VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: b.VolumeClaimName},
	}}}
	access := remoteRedisAccess(&s.cc.Spec.Storage)
	pod.Volumes = append(pod.Volumes, access.volumes...)
	pod.Containers = []corev1.Container{{
		Name: ComponentBackup, Image: image, ImagePullPolicy: pull,
		Args:            append(backupArgs(s, b.Keep), access.args...),
		VolumeMounts:    append([]corev1.VolumeMount{{Name: BackupVolume, MountPath: BackupMountPath}}, access.mounts...),
		SecurityContext: containerSecurity(),
	}}
}

// remoteRedisAccess is how a pod other than a shard's reaches the Redis
// servers of storage.auth and storage.tls (the backup pod; gateways with
// spec.dataPlane.directReads): as the shims do, except that each server's
// name is the host of its address (a managed pod's DNS name, which the
// certificate carries), and that of the servers' own TLS Secret only the
// CA bundle is mounted, never their key.
func remoteRedisAccess(st *v1alpha1.StorageSpec) redisAccess {
	a := redisAccessOf(st, "")
	if tls := st.TLS; tls != nil && tls.CASecretName == "" && tls.CertSecretName != "" {
		key := cmp.Or(tls.CAKey, "ca.crt")
		a.volumes = append(a.volumes, corev1.Volume{Name: RedisServerTLSVolume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: tls.CertSecretName, Items: []corev1.KeyToPath{{Key: key, Path: key}}, DefaultMode: ptr.To(secretMode),
		}}})
		a.mounts = append(a.mounts, corev1.VolumeMount{Name: RedisServerTLSVolume, MountPath: RedisServerTLSMountPath, ReadOnly: true})
	}
	return a
}

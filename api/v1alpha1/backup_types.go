package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// BackupSpec is the scheduled backup of a cluster's managed Redis servers:
// a CronJob that runs `distcache backup` from the cluster's distcache
// image and writes a snapshot set (an RDB per shard and a manifest) into
// a volume claim, then deletes the oldest sets beyond Keep.
// docs/durability.md tells what a set holds and how to restore it.
//
// +kubebuilder:validation:XValidation:rule="self.schedule.matches('^(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|[^ ]+( +[^ ]+){4})$')",message="backup.schedule must be a cron schedule of five fields (minute hour day-of-month month day-of-week), e.g. '0 3 * * *', or @hourly, @daily, @weekly, @monthly or @yearly"
type BackupSpec struct {
	// Schedule is when backups run, in the CronJob's cron format, in the
	// time zone of the kube-controller-manager (usually UTC).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=100
	Schedule string `json:"schedule"`
	// VolumeClaimName names a PersistentVolumeClaim, in the cluster's
	// namespace, that the snapshot sets are written to (at its root, a
	// directory <cluster>-<UTC time> each). The claim is the user's: the
	// operator neither creates nor deletes it, so the backups outlive
	// the cluster. Its access mode must let the backup pod mount it
	// wherever it is scheduled (ReadWriteMany, or ReadWriteOnce on a
	// single-node cluster).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	VolumeClaimName string `json:"volumeClaimName"`
	// Keep is how many snapshot sets of the cluster the claim keeps: after
	// each successful backup the oldest beyond it are deleted.
	// +kubebuilder:default=7
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	// +optional
	Keep int32 `json:"keep,omitempty"`
	// Suspend stops new backups (the CronJob's suspend); the sets kept so
	// far stay.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// BackupStatus is the scheduled backup as last observed.
type BackupStatus struct {
	// CronJob names the CronJob that runs the backups.
	CronJob string `json:"cronJob"`
	// LastScheduleTime is when the last backup Job was started.
	// +optional
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`
	// LastSuccessfulTime is when the last backup Job completed: its
	// snapshot set was written and verified.
	// +optional
	LastSuccessfulTime *metav1.Time `json:"lastSuccessfulTime,omitempty"`
}

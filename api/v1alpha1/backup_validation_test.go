package v1alpha1_test

import (
	"testing"

	"github.com/distcache/distcache/api/v1alpha1"
)

// Messages of the backup rules (backup_types.go, StorageSpec).
const (
	msgBackupOnlyManaged = "storage.backup is only for mode: managed; back up the Redis servers of modes redisOperator and external where they run"
	msgBackupSchedule    = "backup.schedule must be a cron schedule of five fields (minute hour day-of-month month day-of-week)"
)

// withBackup sets spec.storage.backup to a daily backup into claim
// "backups", changed by edit.
func withBackup(edit func(*v1alpha1.BackupSpec)) clusterOption {
	return withStorage(func(s *v1alpha1.StorageSpec) {
		s.Backup = &v1alpha1.BackupSpec{Schedule: "0 3 * * *", VolumeClaimName: "backups"}
		edit(s.Backup)
	})
}

// backupRuleCases break each backup rule once.
func backupRuleCases() []ruleCase {
	return []ruleCase{
		{"backup in external mode", newCluster(withStorage(func(s *v1alpha1.StorageSpec) {
			s.Mode, s.External = v1alpha1.StorageExternal, external(1)
			s.Backup = &v1alpha1.BackupSpec{Schedule: "@daily", VolumeClaimName: "backups"}
		})), "spec.storage", msgBackupOnlyManaged},
		{"backup in redisOperator mode", newCluster(withStorage(func(s *v1alpha1.StorageSpec) {
			s.Mode = v1alpha1.StorageRedisOperator
			s.Backup = &v1alpha1.BackupSpec{Schedule: "@daily", VolumeClaimName: "backups"}
		})), "spec.storage", msgBackupOnlyManaged},
		{"backup schedule of four fields", newCluster(withBackup(func(b *v1alpha1.BackupSpec) { b.Schedule = "0 3 * *" })),
			"spec.storage.backup", msgBackupSchedule},
		{"backup schedule of an unknown macro", newCluster(withBackup(func(b *v1alpha1.BackupSpec) { b.Schedule = "@nightly" })),
			"spec.storage.backup", msgBackupSchedule},
	}
}

// backupValidCases are backups the API accepts.
func backupValidCases() []validCase {
	return []validCase{
		{"daily backup", newCluster(withBackup(func(*v1alpha1.BackupSpec) {}))},
		{"hourly backup keeping 1000, suspended", newCluster(withBackup(func(b *v1alpha1.BackupSpec) {
			b.Schedule, b.Keep, b.Suspend = "@hourly", 1000, true
		}))},
		{"backup every 15 minutes on weekdays", newCluster(withBackup(func(b *v1alpha1.BackupSpec) { b.Schedule = "*/15 * * * 1-5" }))},
	}
}

// backupSchemaCases break the backup's OpenAPI markers.
func backupSchemaCases(t *testing.T) []schemaCase {
	t.Helper()
	return []schemaCase{
		{"backup keep 0", withRawField(t, newCluster(withBackup(func(*v1alpha1.BackupSpec) {})), int64(0), "spec", "storage", "backup", "keep"),
			"spec.storage.backup.keep", []string{"spec.storage.backup.keep", "should be greater than or equal to 1"}},
		{"backup claim name with upper case", newCluster(withBackup(func(b *v1alpha1.BackupSpec) { b.VolumeClaimName = "Backups" })),
			"spec.storage.backup.volumeClaimName", []string{"spec.storage.backup.volumeClaimName", "should match"}},
		{"backup with an empty claim name", newCluster(withBackup(func(b *v1alpha1.BackupSpec) { b.VolumeClaimName = "" })),
			"spec.storage.backup.volumeClaimName", []string{"spec.storage.backup.volumeClaimName"}},
	}
}

// TestBackupKeepDefault checks that backup.keep defaults to 7.
func TestBackupKeepDefault(t *testing.T) {
	c := newCluster(withBackup(func(*v1alpha1.BackupSpec) {}))
	if err := create(t, c); err != nil {
		t.Fatal(err)
	}
	if c.Spec.Storage.Backup.Keep != 7 {
		t.Fatalf("backup.keep defaulted to %d, want 7", c.Spec.Storage.Backup.Keep)
	}
}

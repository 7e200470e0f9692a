package rbac_test

import (
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/operator/controller/cachecluster"
)

// backups: two clusters get a scheduled backup (its CronJob created), one
// changes its schedule (updated), the other drops it (deleted); deleting
// the clusters deletes the rest.
func (s *scenarios) backups(t *testing.T) {
	for _, name := range []string{"shop", "roll"} {
		s.patchCluster(t, name, func(spec *v1alpha1.CacheClusterSpec) {
			spec.Storage.Backup = &v1alpha1.BackupSpec{Schedule: "0 3 * * *", VolumeClaimName: "backups"}
		})
	}
	eventually(t, "backup CronJobs created", func() (bool, error) {
		for _, name := range []string{"shop", "roll"} {
			if err := s.get(&batchv1.CronJob{}, cachecluster.BackupCronJobName(name)); err != nil {
				return false, client.IgnoreNotFound(err)
			}
		}
		return true, nil
	})
	s.patchCluster(t, "shop", func(spec *v1alpha1.CacheClusterSpec) { spec.Storage.Backup.Schedule = "@hourly" })
	s.patchCluster(t, "roll", func(spec *v1alpha1.CacheClusterSpec) { spec.Storage.Backup = nil })
	eventually(t, "schedule updated, CronJob deleted", func() (bool, error) {
		cj := &batchv1.CronJob{}
		if err := s.get(cj, cachecluster.BackupCronJobName("shop")); err != nil {
			return false, err
		}
		err := s.get(&batchv1.CronJob{}, cachecluster.BackupCronJobName("roll"))
		return cj.Spec.Schedule == "@hourly" && apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
}

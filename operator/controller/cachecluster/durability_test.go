package cachecluster_test

import (
	"context"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/operator/controller/cachecluster"
)

func withAppendOnly(a v1alpha1.AppendOnly) clusterOption {
	return func(cc *v1alpha1.CacheCluster) { cc.Spec.Storage.AppendOnly = a }
}

func withPersistence(size, class string) clusterOption {
	return func(cc *v1alpha1.CacheCluster) {
		cc.Spec.Storage.Persistence = &v1alpha1.PersistenceSpec{Size: resource.MustParse(size), StorageClassName: ptr.To(class)}
	}
}

// redisDataVolume is where the rack StatefulSet's pods keep Redis's data:
// "pvc:<size>:<class>" for a claim template, "emptyDir" for a pod volume,
// "" when the Redis container mounts nothing at /data.
func redisDataVolume(sts *appsv1.StatefulSet) string {
	redis := sts.Spec.Template.Spec.Containers[0]
	if !slices.ContainsFunc(redis.VolumeMounts, func(m corev1.VolumeMount) bool {
		return m.Name == cachecluster.RedisDataVolume && m.MountPath == cachecluster.RedisDataPath
	}) {
		return ""
	}
	var where []string
	for _, c := range sts.Spec.VolumeClaimTemplates {
		if c.Name == cachecluster.RedisDataVolume {
			q := c.Spec.Resources.Requests[corev1.ResourceStorage]
			where = append(where, "pvc:"+q.String()+":"+ptr.Deref(c.Spec.StorageClassName, ""))
		}
	}
	for _, v := range sts.Spec.Template.Spec.Volumes {
		if v.Name == cachecluster.RedisDataVolume && v.EmptyDir != nil {
			where = append(where, "emptyDir")
		}
	}
	if len(where) != 1 {
		return ""
	}
	return where[0]
}

// TestStorageDurability checks, for each append-only setting and volume,
// the managed Redis's command line and data volume in the rack
// StatefulSet and the persistence the status reports.
func TestStorageDurability(t *testing.T) {
	startOperator(t, &clock{t: time.Now()})
	aof := func(fsync string) []string {
		return []string{"--dir", "/data", "--appendonly", "yes", "--appendfsync", fsync}
	}
	tests := []struct {
		name        string
		opts        []clusterOption
		redisArgs   []string // consecutive in the redis container's command (nil: no StatefulSet)
		volume      string   // redisDataVolume
		persistence string
	}{
		{"default: everysec on an emptyDir", nil, aof("everysec"), "emptyDir", "aof-everysec/emptyDir"},
		{"always on a volume", []clusterOption{withAppendOnly(v1alpha1.AppendOnlyAlways), withPersistence("2Gi", "fast")},
			aof("always"), "pvc:2Gi:fast", "aof-always/pvc"},
		{"everysec on a volume (appendOnly unset)", []clusterOption{withPersistence("1Gi", "standard")},
			aof("everysec"), "pvc:1Gi:standard", "aof-everysec/pvc"},
		{"disabled", []clusterOption{withAppendOnly(v1alpha1.AppendOnlyDisabled)},
			[]string{"--dir", "/data", "--appendonly", "no"}, "emptyDir", "none"},
		{"redisOperator", []clusterOption{withStorage(v1alpha1.StorageRedisOperator, 1, 1)}, nil, "", "unmanaged"},
		{"external", []clusterOption{withStorage(v1alpha1.StorageExternal, 1, 1, "198.18.0.1:6379")}, nil, "", "unmanaged"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := append([]clusterOption{withStorage(v1alpha1.StorageManaged, 1, 1), withLayer("spine", 1, false)}, tc.opts...)
			cc := newCluster(t, "dur"+string(rune('a'+i)), opts...)
			stored := &v1alpha1.CacheCluster{}
			eventually(t, "status.persistence", func() (bool, error) {
				err := get(t, stored, cc.Namespace, cc.Name)
				return err == nil && stored.Status.Persistence != "", err
			})
			if stored.Status.Persistence != tc.persistence {
				t.Fatalf("status.persistence %q, want %q", stored.Status.Persistence, tc.persistence)
			}
			if tc.redisArgs == nil {
				return
			}
			sts := &appsv1.StatefulSet{}
			if err := get(t, sts, cc.Namespace, cc.Name+"-rack-0"); err != nil {
				t.Fatal(err)
			}
			if cmd := sts.Spec.Template.Spec.Containers[0].Command; !containsRun(cmd, tc.redisArgs...) {
				t.Errorf("redis command %q, want %q in it", cmd, tc.redisArgs)
			}
			if got := redisDataVolume(sts); got != tc.volume {
				t.Errorf("data volume %q, want %q (claims %+v, volumes %+v)", got, tc.volume, sts.Spec.VolumeClaimTemplates, sts.Spec.Template.Spec.Volumes)
			}
		})
	}
}

// TestAppendOnlyChange changes appendOnly of a running cluster: the
// StatefulSet's Redis command and the status follow.
func TestAppendOnlyChange(t *testing.T) {
	startOperator(t, &clock{t: time.Now()})
	cc := newCluster(t, "aofchange", withStorage(v1alpha1.StorageManaged, 1, 1), withLayer("spine", 1, false))
	stored := &v1alpha1.CacheCluster{}
	eventually(t, "status.persistence aof-everysec/emptyDir", func() (bool, error) {
		err := get(t, stored, cc.Namespace, cc.Name)
		return err == nil && stored.Status.Persistence == "aof-everysec/emptyDir", err
	})
	base := stored.DeepCopy()
	stored.Spec.Storage.AppendOnly = v1alpha1.AppendOnlyAlways
	if err := env.Client.Patch(context.Background(), stored, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "StatefulSet with appendfsync always", func() (bool, error) {
		sts := &appsv1.StatefulSet{}
		err := get(t, sts, cc.Namespace, "aofchange-rack-0")
		return err == nil && containsRun(sts.Spec.Template.Spec.Containers[0].Command, "--appendfsync", "always"), err
	})
	eventually(t, "status.persistence aof-always/emptyDir", func() (bool, error) {
		err := get(t, stored, cc.Namespace, cc.Name)
		return err == nil && stored.Status.Persistence == "aof-always/emptyDir", err
	})
}

// containsRun says whether args hold run as consecutive elements.
func containsRun(args []string, run ...string) bool {
	for i := range len(args) - len(run) + 1 {
		if slices.Equal(args[i:i+len(run)], run) {
			return true
		}
	}
	return false
}

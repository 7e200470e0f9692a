package layout

import "github.com/distcache/distcache/api/v1alpha1"

// What the Redis servers of a cluster keep across crashes: the spec's
// storage.appendOnly, turned into redis-server arguments and into the
// persistence summary that the CacheCluster status and `distcache status`
// report. docs/durability.md tells what each setting loses in a Redis
// process crash and in a machine crash.

// Persistence summaries that do not name an append-only setting.
const (
	// PersistenceNone: the Redis servers keep their data in memory only.
	PersistenceNone = "none"
	// PersistenceUnmanaged: DistCache does not run the Redis servers
	// (external endpoints, or the redis-operator's Redis), so their own
	// configuration decides what they keep.
	PersistenceUnmanaged = "unmanaged"
)

// AppendOnly is the append-only setting of the Redis servers a cluster
// runs: the spec's storage.appendOnly, everysec when unset.
func AppendOnly(spec *v1alpha1.CacheClusterSpec) v1alpha1.AppendOnly {
	if a := spec.Storage.AppendOnly; a != "" {
		return a
	}
	return v1alpha1.AppendOnlyEverySec
}

// AppendOnlyArgs are the redis-server arguments of setting a: the
// append-only file and its fsync policy, or no append-only file.
func AppendOnlyArgs(a v1alpha1.AppendOnly) []string {
	switch a {
	case v1alpha1.AppendOnlyAlways, v1alpha1.AppendOnlyEverySec:
		return []string{"--appendonly", "yes", "--appendfsync", string(a)}
	default:
		return []string{"--appendonly", "no"}
	}
}

// Persistence is the summary of setting a: "aof-always", "aof-everysec" or
// "none". The operator adds where the file is ("/pvc", "/emptyDir").
func Persistence(a v1alpha1.AppendOnly) string {
	switch a {
	case v1alpha1.AppendOnlyAlways, v1alpha1.AppendOnlyEverySec:
		return "aof-" + string(a)
	default:
		return PersistenceNone
	}
}

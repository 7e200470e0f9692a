package cachecluster

import (
	"path"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/distcache/distcache/operator/api/v1alpha1"
)

// Where an external shard's shim finds its Redis login and CA bundle: the
// Secrets named by storage.auth and storage.tls, mounted read-only, so that
// nothing secret is in the pod's arguments and a rotated Secret reaches the
// shim (which reads the password at every new connection).
const (
	RedisAuthVolume    = "redis-auth"
	RedisAuthMountPath = "/etc/distcache/redis-auth"
	RedisTLSVolume     = "redis-tls"
	RedisTLSMountPath  = "/etc/distcache/redis-tls"
)

// redisAccess is what a shim needs to reach Redis with storage.auth and
// storage.tls: its flags, volume mounts and volumes.
type redisAccess struct {
	args    []string
	mounts  []corev1.VolumeMount
	volumes []corev1.Volume
}

// redisAccessOf returns the shims' Redis login and TLS settings of st.
func redisAccessOf(st *v1alpha1.StorageSpec) redisAccess {
	var a redisAccess
	if auth := st.Auth; auth != nil {
		key := auth.PasswordKey
		if key == "" {
			key = "password"
		}
		a.add(RedisAuthVolume, RedisAuthMountPath, auth.SecretName, key)
		a.args = append(a.args, "--redis-password-file="+path.Join(RedisAuthMountPath, key))
		if auth.Username != "" {
			a.args = append(a.args, "--redis-username="+auth.Username)
		}
	}
	if tls := st.TLS; tls != nil {
		a.args = append(a.args, "--redis-tls")
		if tls.CASecretName != "" {
			key := tls.CAKey
			if key == "" {
				key = "ca.crt"
			}
			a.add(RedisTLSVolume, RedisTLSMountPath, tls.CASecretName, key)
			a.args = append(a.args, "--redis-tls-ca-file="+path.Join(RedisTLSMountPath, key))
		}
		if tls.ServerName != "" {
			a.args = append(a.args, "--redis-tls-server-name="+tls.ServerName)
		}
	}
	return a
}

// add mounts key of Secret secret read-only at dir.
func (a *redisAccess) add(volume, dir, secret, key string) {
	a.volumes = append(a.volumes, corev1.Volume{Name: volume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName: secret, Items: []corev1.KeyToPath{{Key: key, Path: key}}, DefaultMode: ptr.To[int32](0o400),
	}}})
	a.mounts = append(a.mounts, corev1.VolumeMount{Name: volume, MountPath: dir, ReadOnly: true})
}

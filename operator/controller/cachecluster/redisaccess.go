package cachecluster

import (
	"cmp"
	"path"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/distcache/distcache/api/v1alpha1"
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
		a.mount(RedisAuthVolume, RedisAuthMountPath, auth.SecretName, cmp.Or(auth.PasswordKey, "password"), "--redis-password-file")
		if auth.Username != "" {
			a.args = append(a.args, "--redis-username="+auth.Username)
		}
	}
	if tls := st.TLS; tls != nil {
		a.args = append(a.args, "--redis-tls")
		if tls.CASecretName != "" {
			a.mount(RedisTLSVolume, RedisTLSMountPath, tls.CASecretName, cmp.Or(tls.CAKey, "ca.crt"), "--redis-tls-ca-file")
		}
		if tls.ServerName != "" {
			a.args = append(a.args, "--redis-tls-server-name="+tls.ServerName)
		}
	}
	return a
}

// mount mounts key of Secret secret read-only at dir, and points flag at
// the file.
func (a *redisAccess) mount(volume, dir, secret, key, flag string) {
	a.args = append(a.args, flag+"="+path.Join(dir, key))
	a.volumes = append(a.volumes, corev1.Volume{Name: volume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName: secret, Items: []corev1.KeyToPath{{Key: key, Path: key}}, DefaultMode: ptr.To(secretMode),
	}}})
	a.mounts = append(a.mounts, corev1.VolumeMount{Name: volume, MountPath: dir, ReadOnly: true})
}

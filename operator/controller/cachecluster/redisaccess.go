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
// serverName is the name the Redis servers' certificates carry unless
// storage.tls.serverName says otherwise ("": the host of the endpoint).
// Without a CA Secret the shims of the operator's modes verify with the
// caKey of the servers' own Secret, which they mount (RedisServerTLS).
func redisAccessOf(st *v1alpha1.StorageSpec, serverName string) redisAccess {
	var a redisAccess
	if auth := st.Auth; auth != nil {
		// The whole Secret: its previous password may come and go.
		a.volumes = append(a.volumes, secretVolume(RedisAuthVolume, auth.SecretName))
		a.mounts = append(a.mounts, corev1.VolumeMount{Name: RedisAuthVolume, MountPath: RedisAuthMountPath, ReadOnly: true})
		a.args = append(a.args, "--redis-password-file="+path.Join(RedisAuthMountPath, cmp.Or(auth.PasswordKey, "password")),
			"--redis-previous-password-file="+path.Join(RedisAuthMountPath, cmp.Or(auth.PreviousPasswordKey, "previous")))
		if auth.Username != "" {
			a.args = append(a.args, "--redis-username="+auth.Username)
		}
	}
	if tls := st.TLS; tls != nil {
		a.args = append(a.args, "--redis-tls")
		switch {
		case tls.CASecretName != "":
			a.mount(RedisTLSVolume, RedisTLSMountPath, tls.CASecretName, cmp.Or(tls.CAKey, "ca.crt"), "--redis-tls-ca-file")
		case tls.CertSecretName != "":
			a.args = append(a.args, "--redis-tls-ca-file="+path.Join(RedisServerTLSMountPath, cmp.Or(tls.CAKey, "ca.crt")))
		}
		if name := cmp.Or(tls.ServerName, serverName); name != "" {
			a.args = append(a.args, "--redis-tls-server-name="+name)
		}
	}
	return a
}

// secretVolume is Secret secret, every key a file readable by the pod's
// group.
func secretVolume(volume, secret string) corev1.Volume {
	return corev1.Volume{Name: volume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName: secret, DefaultMode: ptr.To(secretMode),
	}}}
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

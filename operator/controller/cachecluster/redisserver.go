package cachecluster

import (
	"cmp"
	"fmt"
	"path"

	corev1 "k8s.io/api/core/v1"

	"github.com/distcache/distcache/api/v1alpha1"
)

// Where a managed shard's pod keeps what its redis-server needs for
// storage.auth and storage.tls: the ACL file an init container renders
// from the auth Secret (the SHA-256 of each password, in an emptyDir that
// Redis's ACL SAVE keeps current), and the server's certificate Secret,
// mounted at the same path in the redis and shim containers so that the
// shim can make Redis load it again (CONFIG SET) when it changes.
const (
	RedisACLVolume          = "redis-acl"
	RedisACLMountPath       = "/run/distcache/redis-acl"
	RedisACLFile            = RedisACLMountPath + "/users.acl"
	RedisServerTLSVolume    = "redis-server-tls"
	RedisServerTLSMountPath = "/etc/distcache/redis-server-tls"
)

// managedServerName is the name the shim of a managed shard expects in its
// Redis's certificate: the pod's DNS name under its rack's headless
// Service. A certificate for *.<rack set>.<namespace>.svc covers a rack.
func managedServerName(cc *v1alpha1.CacheCluster, rackSet string) string {
	return fmt.Sprintf("$(POD_NAME).%s.%s.svc", rackSet, cc.Namespace)
}

// withManagedRedisSecurity adds storage.auth and storage.tls to a managed
// shard's pod: the shim's login (redisAccessOf) and sync flags, the
// redis-server's ACL file and TLS port, their volumes and the init
// container that renders the ACL file. Nothing secret is in an argument.
func withManagedRedisSecurity(cc *v1alpha1.CacheCluster, rackSet string, pod *corev1.PodSpec, redis, shim *corev1.Container, image string, pull corev1.PullPolicy) {
	st := &cc.Spec.Storage
	if st.Auth == nil && st.TLS == nil {
		return
	}
	access := redisAccessOf(st, managedServerName(cc, rackSet))
	shim.Args = append(shim.Args, access.args...)
	shim.VolumeMounts = append(shim.VolumeMounts, access.mounts...)
	pod.Volumes = append(pod.Volumes, access.volumes...)
	if st.Auth != nil {
		shim.Args = append(shim.Args, "--redis-acl-sync")
		pod.Volumes = append(pod.Volumes, corev1.Volume{Name: RedisACLVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		acl := corev1.VolumeMount{Name: RedisACLVolume, MountPath: RedisACLMountPath}
		redis.VolumeMounts = append(redis.VolumeMounts, acl)
		redis.Command = append(redis.Command, "--aclfile", RedisACLFile)
		args := []string{"redis-acl", "--out=" + RedisACLFile}
		for _, a := range access.args {
			if hasFlag(a, "--redis-password-file", "--redis-previous-password-file", "--redis-username") {
				args = append(args, a)
			}
		}
		pod.InitContainers = []corev1.Container{{
			Name: "redis-acl", Image: image, ImagePullPolicy: pull, Args: args,
			VolumeMounts:    append([]corev1.VolumeMount{acl}, access.mounts...),
			SecurityContext: containerSecurity(),
		}}
	}
	if tls := st.TLS; tls != nil {
		cert, key := path.Join(RedisServerTLSMountPath, "tls.crt"), path.Join(RedisServerTLSMountPath, "tls.key")
		pod.Volumes = append(pod.Volumes, secretVolume(RedisServerTLSVolume, tls.CertSecretName))
		m := corev1.VolumeMount{Name: RedisServerTLSVolume, MountPath: RedisServerTLSMountPath, ReadOnly: true}
		redis.VolumeMounts = append(redis.VolumeMounts, m)
		shim.VolumeMounts = append(shim.VolumeMounts, m)
		// TLS only, on the usual port: the later --port wins.
		redis.Command = append(redis.Command, "--port", "0", "--tls-port", fmt.Sprint(RedisPort),
			"--tls-cert-file", cert, "--tls-key-file", key, "--tls-auth-clients", "no")
		shim.Args = append(shim.Args, "--redis-server-cert-file="+cert, "--redis-server-key-file="+key)
	}
}

// hasFlag says whether arg is one of flags with a value.
func hasFlag(arg string, flags ...string) bool {
	for _, f := range flags {
		if len(arg) > len(f) && arg[:len(f)+1] == f+"=" {
			return true
		}
	}
	return false
}

// redisOperatorSecurity maps storage.auth and storage.tls onto shard
// name's Redis object (redis-operator v1beta2): kubernetesConfig.
// redisSecret, from which the redis-operator sets the default user's
// password, and TLS, the Secret the Redis serves; and adds the shim's
// login, with its Secrets as volumes of the object.
func redisOperatorSecurity(cc *v1alpha1.CacheCluster, name string, spec, kubernetesConfig, sidecar map[string]any) {
	st := &cc.Spec.Storage
	if st.Auth == nil && st.TLS == nil {
		return
	}
	access := redisAccessOf(st, fmt.Sprintf("%s.%s.svc", name, cc.Namespace))
	if a := st.Auth; a != nil {
		kubernetesConfig["redisSecret"] = map[string]any{"name": a.SecretName, "key": cmp.Or(a.PasswordKey, "password")}
	}
	volumes := access.volumes
	mounts := access.mounts
	if t := st.TLS; t != nil {
		spec["TLS"] = map[string]any{
			"ca": cmp.Or(t.CAKey, "ca.crt"), "cert": "tls.crt", "key": "tls.key",
			"secret": map[string]any{"secretName": t.CertSecretName},
		}
		if t.CASecretName == "" {
			volumes = append(volumes, secretVolume(RedisServerTLSVolume, t.CertSecretName))
			mounts = append(mounts, corev1.VolumeMount{Name: RedisServerTLSVolume, MountPath: RedisServerTLSMountPath, ReadOnly: true})
		}
	}
	sidecar["command"] = append(sidecar["command"].([]any), toAny(access.args)...)
	for _, m := range mounts {
		sidecar["mountPath"] = append(sidecar["mountPath"].([]any), map[string]any{"name": m.Name, "mountPath": m.MountPath, "readOnly": true})
	}
	storage := spec["storage"].(map[string]any)
	vm := storage["volumeMount"].(map[string]any)
	for _, v := range volumes {
		secret := map[string]any{"secretName": v.Secret.SecretName, "defaultMode": int64(secretMode)}
		if len(v.Secret.Items) > 0 {
			var items []any
			for _, it := range v.Secret.Items {
				items = append(items, map[string]any{"key": it.Key, "path": it.Path})
			}
			secret["items"] = items
		}
		vm["volume"] = append(vm["volume"].([]any), map[string]any{"name": v.Name, "secret": secret})
	}
}

package cachecluster

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// dataPlaneUID is the user and group the data-plane pods run as: the
// distcache image's non-root user (containerimage.User).
const dataPlaneUID = 65532

// podSecurity is every data-plane pod's security context, the restricted
// Pod Security Standard's: non-root, seccomp RuntimeDefault, and fsGroup so
// that the mounted Secrets (mode 0440) and Redis's data volume belong to
// the pod's group.
func podSecurity() *corev1.PodSecurityContext {
	return &corev1.PodSecurityContext{
		RunAsNonRoot:   ptr.To(true),
		RunAsUser:      ptr.To[int64](dataPlaneUID),
		RunAsGroup:     ptr.To[int64](dataPlaneUID),
		FSGroup:        ptr.To[int64](dataPlaneUID),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// containerSecurity is every data-plane container's security context: no
// privilege escalation, no capability, a read-only root filesystem (Redis
// writes only its data volume).
func containerSecurity() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}

// secretMode is the mode of mounted Secret files: read by the pod's
// fsGroup (podSecurity), not by others.
const secretMode int32 = 0o440

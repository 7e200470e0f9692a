package cachecluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/dataplane/wireauth"
	"github.com/distcache/distcache/operator/secretaccess"
)

// The data-plane key: a Secret per cluster whose keys "current" (signs)
// and optional "previous" (also accepted) every cache node and shim mounts
// read-only and reads with --data-plane-key-dir (package wireauth).
const (
	// DataPlaneKeyVolume is the pods' volume of the key Secret.
	DataPlaneKeyVolume = "data-plane-key"
	// DataPlaneKeyMountPath is where the key Secret is mounted.
	DataPlaneKeyMountPath = "/etc/distcache/data-plane-key"
	// ComponentDataPlaneKey labels the key Secret.
	ComponentDataPlaneKey = "data-plane-key"
)

// DataPlaneKeySecretName is the Secret holding a cluster's data-plane key.
func DataPlaneKeySecretName(cluster string) string { return cluster + "-data-plane-key" }

// secretsRetry is how soon a cluster whose namespace the operator may not
// create Secrets in is looked at again (RBAC changes are not watched).
const secretsRetry = 30 * time.Second

// reconcileDataPlaneKey creates the cluster's data-plane key Secret with a
// random current key unless it exists. The operator only ever creates it:
// it never reads, updates or deletes a Secret (the garbage collector
// deletes it with its CacheCluster, its owner), so a key rotated by hand
// is never overwritten, and the operator needs no permission to read any
// Secret. Each reconcile asks once; AlreadyExists is the usual answer.
//
// Its create permission is per namespace (package secretaccess). Refused
// in a namespace where the cluster's pods already run, the key exists (a
// pod does not start without its Secret volume) and the phases go on:
// narrowing the chart's secretNamespaces never stops a running cluster's
// failover. Refused before any pod ran, the cluster is blocked with
// SecretsForbidden.
func (r *Reconciler) reconcileDataPlaneKey(ctx context.Context, s *state) (ctrl.Result, error) {
	key, err := wireauth.NewKey()
	if err != nil {
		return ctrl.Result{}, err
	}
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: DataPlaneKeySecretName(s.cc.Name), Namespace: s.cc.Namespace,
			Labels: labels(s.cc, ComponentDataPlaneKey),
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{wireauth.CurrentFile: key},
	}
	if err := controllerutil.SetControllerReference(s.cc, sec, r.Scheme); err != nil {
		return ctrl.Result{}, fmt.Errorf("cannot own the data-plane key Secret of %s: %w", s.cc.Name, err)
	}
	err = r.Create(ctx, sec)
	if msg, ok := secretaccess.Forbidden(err, sec.Namespace, "create the data-plane key Secret "+sec.Name); ok {
		if anyPodStarted(s.pods) {
			return ctrl.Result{}, nil
		}
		res, _ := s.block(v1alpha1.ReasonSecretsForbidden, errors.New(msg))
		res.RequeueAfter = secretsRetry
		return res, nil
	}
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return ctrl.Result{}, fmt.Errorf("cannot create the data-plane key Secret %s: %w", sec.Name, err)
	}
	return ctrl.Result{}, nil
}

// anyPodStarted reports whether a container of any of pods has started:
// every data-plane pod mounts the key Secret, so the Secret existed then.
func anyPodStarted(pods map[string]*corev1.Pod) bool {
	for _, p := range pods {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.State.Running != nil || cs.State.Terminated != nil || cs.LastTerminationState.Terminated != nil {
				return true
			}
		}
	}
	return false
}

// dataPlaneKeyVolume mounts the cluster's data-plane key Secret (every key
// in it: "current" and, during a rotation, "previous"); the kubelet
// updates the files when the Secret changes and the processes re-read
// them.
func dataPlaneKeyVolume(cc *v1alpha1.CacheCluster) corev1.Volume {
	return corev1.Volume{Name: DataPlaneKeyVolume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName: DataPlaneKeySecretName(cc.Name), DefaultMode: ptr.To(secretMode),
	}}}
}

// withDataPlaneKey points a data-plane container at the mounted key.
func withDataPlaneKey(c corev1.Container) corev1.Container {
	c.Args = append(c.Args, "--data-plane-key-dir="+DataPlaneKeyMountPath)
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: DataPlaneKeyVolume, MountPath: DataPlaneKeyMountPath, ReadOnly: true})
	return c
}

package cachecluster_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/operator/controller/cachecluster"
)

// TestDataPlaneKeySecret: the operator gives a cluster a random data-plane
// key in a Secret it owns, mounts it read-only into every cache node and
// shim with --data-plane-key-dir pointing at it, and keeps it out of the
// partition map.
func TestDataPlaneKeySecret(t *testing.T) {
	startOperator(t, &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)})
	cc := newCluster(t, "keyed", withStorage(v1alpha1.StorageManaged, 1, 1), withLayer("spine", 2, false))
	sec := &corev1.Secret{}
	eventually(t, "data-plane key Secret created", func() (bool, error) {
		return get(t, sec, cc.Namespace, cachecluster.DataPlaneKeySecretName(cc.Name)) == nil, nil
	})
	key := sec.Data["current"]
	if _, err := hex.DecodeString(string(key)); err != nil || len(key) != 64 || len(sec.Data) != 1 {
		t.Fatalf("Secret data %d keys, current of %d bytes (%v); want one 64-character hex key", len(sec.Data), len(key), err)
	}
	if ref := metav1.GetControllerOf(sec); ref == nil || ref.Kind != "CacheCluster" || ref.Name != cc.Name {
		t.Fatalf("Secret controller %+v, want the CacheCluster", ref)
	}
	eventually(t, "partition map published", func() (bool, error) {
		_, err := publishedMap(t, cc)
		return err == nil, nil
	})
	cm := &corev1.ConfigMap{}
	if err := get(t, cm, cc.Namespace, cachecluster.MapConfigMapName(cc.Name)); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(cm.Data[cachecluster.MapKey], string(key)) {
		t.Fatal("the data-plane key is in the partition map")
	}
	for _, name := range []string{"keyed-spine", "keyed-rack-0"} {
		sts := &appsv1.StatefulSet{}
		if err := get(t, sts, cc.Namespace, name); err != nil {
			t.Fatalf("StatefulSet %s: %v", name, err)
		}
		checkKeyMounted(t, name, sts.Spec.Template.Spec, cc.Name)
	}
}

// checkKeyMounted checks that every distcache container of spec reads the
// key Secret, mounted read-only, and that nothing else mentions the key.
func checkKeyMounted(t *testing.T, what string, spec corev1.PodSpec, cluster string) {
	t.Helper()
	i := slices.IndexFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == cachecluster.DataPlaneKeyVolume })
	if i < 0 || spec.Volumes[i].Secret == nil || spec.Volumes[i].Secret.SecretName != cachecluster.DataPlaneKeySecretName(cluster) {
		t.Fatalf("%s: no volume of the key Secret in %+v", what, spec.Volumes)
	}
	found := 0
	for _, c := range spec.Containers {
		if c.Name == "redis" {
			continue
		}
		found++
		if !slices.Contains(c.Args, "--data-plane-key-dir="+cachecluster.DataPlaneKeyMountPath) {
			t.Errorf("%s/%s: args %v lack --data-plane-key-dir", what, c.Name, c.Args)
		}
		j := slices.IndexFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == cachecluster.DataPlaneKeyVolume })
		if j < 0 || !c.VolumeMounts[j].ReadOnly || c.VolumeMounts[j].MountPath != cachecluster.DataPlaneKeyMountPath {
			t.Errorf("%s/%s: key not mounted read-only at %s: %+v", what, c.Name, cachecluster.DataPlaneKeyMountPath, c.VolumeMounts)
		}
	}
	if found == 0 {
		t.Fatalf("%s: no data-plane container", what)
	}
}

// TestDataPlaneKeySecretKept: a Secret that exists — a key being rotated
// by hand, or one restored from a backup — is never overwritten.
func TestDataPlaneKeySecretKept(t *testing.T) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "cc-"}}
	ctx := context.Background()
	if err := env.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	data := map[string][]byte{"current": []byte("rotated-current-key-0123456789"), "previous": []byte("rotated-previous-key-012345678")}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: cachecluster.DataPlaneKeySecretName("kept"), Namespace: ns.Name}, Data: data}
	if err := env.Client.Create(ctx, sec); err != nil {
		t.Fatal(err)
	}
	startOperator(t, &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)})
	cc := &v1alpha1.CacheCluster{ObjectMeta: metav1.ObjectMeta{Name: "kept", Namespace: ns.Name}}
	withStorage(v1alpha1.StorageManaged, 1, 1)(cc)
	withLayer("spine", 1, false)(cc)
	if err := env.Client.Create(ctx, cc); err != nil {
		t.Fatal(err)
	}
	// The StatefulSets are applied after the key, in the same reconcile.
	eventually(t, "cache nodes applied", func() (bool, error) {
		return get(t, &appsv1.StatefulSet{}, cc.Namespace, "kept-spine") == nil, nil
	})
	got := &corev1.Secret{}
	if err := get(t, got, ns.Name, sec.Name); err != nil {
		t.Fatal(err)
	}
	if len(got.Data) != 2 || !bytes.Equal(got.Data["current"], data["current"]) || !bytes.Equal(got.Data["previous"], data["previous"]) {
		t.Fatalf("the existing key Secret was changed: %d keys", len(got.Data))
	}
}

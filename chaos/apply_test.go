package chaos_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// fieldOwner is the field manager of the test's server-side applies.
const fieldOwner = "distcache-chaos-test"

// ensureNamespaces creates the namespaces the manifests live in.
func ensureNamespaces(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}
		if err := env.Client.Create(context.Background(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("cannot create namespace %s: %v", n, err)
		}
	}
}

// apply applies u server-side, as `kubectl apply --server-side` does.
func apply(ctx context.Context, u *unstructured.Unstructured) error {
	return env.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(fieldOwner), client.ForceOwnership)
}

// TestManifestsApplyServerSide applies every document of chaos/*.yaml to the
// API server, which validates it against the Chaos Mesh (or Kubernetes)
// schema and stores it; a refusal names the file and the server's message.
func TestManifestsApplyServerSide(t *testing.T) {
	ensureNamespaces(t, clusterNamespace, operatorNamespace)
	ctx := context.Background()
	for _, file := range manifestFiles(t) {
		for _, d := range readDocuments(t, file) {
			if err := apply(ctx, d.obj.DeepCopy()); err != nil {
				t.Errorf("%s: the API server refused it: %v", d, err)
				continue
			}
			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(d.obj.GroupVersionKind())
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(d.obj), got); err != nil {
				t.Errorf("%s: applied but not stored: %v", d, err)
			}
		}
	}
}

// TestAPIServerRefusesBrokenExperiments shows that the apply test can fail:
// the API server, with the generated CRDs, refuses an experiment with a
// misspelt field, an unknown action or a wrongly typed value.
func TestAPIServerRefusesBrokenExperiments(t *testing.T) {
	ensureNamespaces(t, clusterNamespace)
	b, err := os.ReadFile(filepath.Join(chaosDir(), "pod-kill-cache-node.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, old, new, wantInError string
	}{
		{"misspelt field", "  action: pod-kill", "  acton: pod-kill", "acton"},
		{"unknown action", "action: pod-kill", "action: pod-kil", "pod-kil"},
		{"misspelt selector field", "    labelSelectors:", "    labelSelector:", "labelSelector"},
		{"wrongly typed value", "  mode: one", "  mode: [one]", "mode"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(string(b), tc.old) {
				t.Fatalf("pod-kill-cache-node.yaml no longer contains %q", tc.old)
			}
			docs, err := decodeDocuments("broken.yaml", []byte(strings.Replace(string(b), tc.old, tc.new, 1)))
			if err != nil {
				t.Fatal(err)
			}
			u := docs[0].obj
			u.SetName("broken-" + strings.ReplaceAll(tc.name, " ", "-"))
			err = apply(context.Background(), u)
			if err == nil {
				t.Fatalf("the API server accepted an experiment with a %s", tc.name)
			}
			if !strings.Contains(err.Error(), tc.wantInError) {
				t.Fatalf("refused with %q, want a message naming %q", err, tc.wantInError)
			}
		})
	}
}

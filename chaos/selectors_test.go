package chaos_test

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/internal/testing/poll"
	"github.com/distcache/distcache/operator/controller/cachecluster"
)

// The CacheCluster the experiments target, and where the operator runs.
const (
	clusterName       = "demo"
	clusterNamespace  = "distcache"
	operatorNamespace = "distcache-system"
	spineLayer        = "spine"
)

// operatorPodLabels are the labels the operator's Helm chart must set on the
// operator's pods: pod-kill-operator.yaml selects them.
var operatorPodLabels = map[string]string{
	"app.kubernetes.io/name":      "distcache",
	"app.kubernetes.io/component": "operator",
}

// target is what one Chaos Mesh selector must select.
type target struct {
	name       string
	namespace  string
	labels     map[string]string // the selector's labelSelectors, exactly
	containers []string          // its containerNames, exactly
	// operator: selects the operator, whose pods this repository does not
	// create; matched against operatorPodLabels instead of the operator's
	// objects.
	operator bool
}

// with is t selecting containers.
func (t target) with(name string, containers ...string) target {
	t.name, t.containers = name, containers
	return t
}

func clusterTarget(name, component string, extra map[string]string) target {
	lbl := map[string]string{cachecluster.LabelCluster: clusterName, cachecluster.LabelComponent: component}
	maps.Copy(lbl, extra)
	return target{name: name, namespace: clusterNamespace, labels: lbl}
}

var (
	cacheNodes     = clusterTarget("cache-node pods", cachecluster.ComponentCacheNode, nil)
	spineNodes     = clusterTarget("spine cache-node pods", cachecluster.ComponentCacheNode, map[string]string{cachecluster.LabelLayer: spineLayer})
	storagePods    = clusterTarget("storage pods", cachecluster.ComponentStorage, nil)
	nodeContainers = cacheNodes.with("cache-node containers", "node")
	shimSidecars   = storagePods.with("shim sidecars", cachecluster.ComponentShim)
	redisContainer = storagePods.with("redis containers", "redis")
	operatorPods   = target{name: "operator pods", namespace: operatorNamespace, labels: operatorPodLabels, operator: true}
)

// experiments lists every file of chaos/ with the kind of each document and
// the targets of its selectors, in document order (a NetworkChaos's
// selector, then its target).
var experiments = []struct {
	file    string
	kinds   []string
	targets []target
}{
	{"pod-kill-cache-node.yaml", []string{"PodChaos"}, []target{cacheNodes}},
	{"pod-failure-cache-node.yaml", []string{"PodChaos"}, []target{cacheNodes}},
	{"container-kill-cache-node.yaml", []string{"PodChaos"}, []target{nodeContainers}},
	{"pod-kill-storage.yaml", []string{"PodChaos"}, []target{storagePods}},
	{"pod-failure-storage.yaml", []string{"PodChaos"}, []target{storagePods}},
	{"container-kill-shim.yaml", []string{"PodChaos"}, []target{shimSidecars}},
	{"container-kill-redis.yaml", []string{"PodChaos"}, []target{redisContainer}},
	{"pod-kill-operator.yaml", []string{"PodChaos"}, []target{operatorPods}},
	{"network-partition-spine-storage.yaml", []string{"NetworkChaos"}, []target{spineNodes, storagePods}},
	{"network-delay-shims.yaml", []string{"NetworkChaos"}, []target{cacheNodes, storagePods}},
	{"network-loss-shims.yaml", []string{"NetworkChaos"}, []target{cacheNodes, storagePods}},
	{"stress-cache-node.yaml", []string{"StressChaos"}, []target{nodeContainers}},
	{"schedule-pod-kill-cache-node.yaml", []string{"Schedule"}, []target{cacheNodes}},
	{"workflow-faults.yaml", []string{"Workflow"}, []target{
		cacheNodes, shimSidecars, spineNodes, storagePods, cacheNodes, storagePods,
		cacheNodes, storagePods, nodeContainers, operatorPods,
	}},
	{"check-job.yaml", []string{"Job"}, nil},
	{"rbac.yaml", []string{"Role", "Role"}, nil},
}

// selector is one Chaos Mesh pod selector found in a manifest.
type selector struct {
	path       string
	namespaces []string
	labels     map[string]string
	containers []string
	other      []string // selector fields besides namespaces and labelSelectors
}

// selectors walks v depth-first, in document order, and returns every pod
// selector: an object with a "selector" object and a "mode" (Chaos Mesh's
// PodSelector, inlined in the chaos specs and in NetworkChaos's target).
func selectors(path string, v any) []selector {
	var out []selector
	switch v := v.(type) {
	case map[string]any:
		if sel, ok := v["selector"].(map[string]any); ok {
			if _, ok := v["mode"].(string); ok {
				s := selector{path: path, namespaces: stringList(sel["namespaces"]), containers: stringList(v["containerNames"]), labels: map[string]string{}}
				if l, ok := sel["labelSelectors"].(map[string]any); ok {
					for k, val := range l {
						s.labels[k] = fmt.Sprint(val)
					}
				}
				for k := range sel {
					if k != "namespaces" && k != "labelSelectors" {
						s.other = append(s.other, k)
					}
				}
				out = append(out, s)
			}
		}
		keys := slices.Sorted(maps.Keys(v))
		slices.SortStableFunc(keys, func(a, b string) int { return cmp.Compare(fieldOrder(a), fieldOrder(b)) })
		for _, k := range keys {
			out = append(out, selectors(path+"."+k, v[k])...)
		}
	case []any:
		for i, e := range v {
			out = append(out, selectors(fmt.Sprintf("%s[%d]", path, i), e)...)
		}
	}
	return out
}

// fieldOrder puts a NetworkChaos's target after its own selector; other
// fields keep their alphabetical order.
func fieldOrder(key string) int {
	if key == "target" {
		return 1
	}
	return 0
}

func stringList(v any) []string {
	l, _ := v.([]any)
	out := make([]string, len(l))
	for i, e := range l {
		out[i] = fmt.Sprint(e)
	}
	return out
}

// TestSelectorsTargetOperatorLabels checks, file by file, that each
// selector selects exactly the intended pods by the labels the operator
// sets (its exported constants, so a renamed label fails here) in an
// explicit namespace, and that no file is left unchecked.
func TestSelectorsTargetOperatorLabels(t *testing.T) {
	listed := make([]string, len(experiments))
	for i, e := range experiments {
		listed[i] = e.file
	}
	slices.Sort(listed)
	if got := manifestFiles(t); !slices.Equal(got, listed) {
		t.Fatalf("chaos/ holds %q, the test lists %q: add new files to experiments", got, listed)
	}
	for _, e := range experiments {
		t.Run(e.file, func(t *testing.T) {
			docs := readDocuments(t, e.file)
			var kinds []string
			var found []selector
			for _, d := range docs {
				kinds = append(kinds, d.obj.GetKind())
				if d.obj.GroupVersionKind().Group == chaosMeshGroup {
					if d.obj.GetNamespace() != clusterNamespace {
						t.Errorf("%s lives in namespace %q, want %q", d, d.obj.GetNamespace(), clusterNamespace)
					}
					found = append(found, selectors("", d.obj.Object["spec"])...)
				}
			}
			if !slices.Equal(kinds, e.kinds) {
				t.Errorf("kinds %q, want %q", kinds, e.kinds)
			}
			if len(found) != len(e.targets) {
				t.Fatalf("%d selectors, want %d (%v)", len(found), len(e.targets), e.targets)
			}
			for i, s := range found {
				want := e.targets[i]
				if !slices.Equal(s.namespaces, []string{want.namespace}) {
					t.Errorf("spec%s: namespaces %q, want [%s] (%s)", s.path, s.namespaces, want.namespace, want.name)
				}
				if !maps.Equal(s.labels, want.labels) {
					t.Errorf("spec%s: labelSelectors %v, want %v (%s)", s.path, s.labels, want.labels, want.name)
				}
				if !slices.Equal(s.containers, want.containers) {
					t.Errorf("spec%s: containerNames %q, want %q (%s)", s.path, s.containers, want.containers, want.name)
				}
				if len(s.other) > 0 {
					t.Errorf("spec%s: selects also by %q; select only by namespace and the operator's labels", s.path, s.other)
				}
			}
		})
	}
}

// discardEvents drops the reconciler's events.
type discardEvents struct{}

func (discardEvents) Eventf(runtime.Object, runtime.Object, string, string, string, string, ...any) {}

// operatorTemplates runs the CacheCluster reconciler for a managed-mode
// cluster named as the experiments expect and returns the pod templates of
// the StatefulSets and Deployments it creates, by object name.
func operatorTemplates(t *testing.T) map[string]corev1.PodTemplateSpec {
	t.Helper()
	ensureNamespaces(t, clusterNamespace)
	ctx := context.Background()
	cc := &v1alpha1.CacheCluster{
		ObjectMeta: metav1.ObjectMeta{Name: clusterName, Namespace: clusterNamespace},
		Spec: v1alpha1.CacheClusterSpec{
			Storage: v1alpha1.StorageSpec{Mode: v1alpha1.StorageManaged, Racks: 2, ShardsPerRack: 1},
			Layers: []v1alpha1.NamedLayer{
				{Name: spineLayer, CacheLayerSpec: v1alpha1.CacheLayerSpec{Nodes: ptr.To[int32](2)}},
				{Name: "leaf", CacheLayerSpec: v1alpha1.CacheLayerSpec{BoundToRacks: true}},
			},
		},
	}
	if err := env.Client.Create(ctx, cc); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("cannot create the CacheCluster: %v", err)
	}
	r := &cachecluster.Reconciler{Client: env.Client, Scheme: env.Scheme, Recorder: discardEvents{}}
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(cc)}
	inCluster := []client.ListOption{client.InNamespace(clusterNamespace), client.MatchingLabels{cachecluster.LabelCluster: clusterName}}
	templates := map[string]corev1.PodTemplateSpec{}
	poll.Eventually(t, "the operator's StatefulSets for layers spine and leaf and racks 0 and 1", func() (bool, error) {
		if _, err := r.Reconcile(ctx, req); err != nil {
			return false, err
		}
		var sets appsv1.StatefulSetList
		if err := env.Client.List(ctx, &sets, inCluster...); err != nil {
			return false, err
		}
		var deps appsv1.DeploymentList
		if err := env.Client.List(ctx, &deps, inCluster...); err != nil {
			return false, err
		}
		clear(templates)
		for _, s := range sets.Items {
			templates["StatefulSet "+s.Name] = s.Spec.Template
		}
		for _, d := range deps.Items {
			templates["Deployment "+d.Name] = d.Spec.Template
		}
		return len(sets.Items) == 4, nil
	})
	return templates
}

func containerNames(p corev1.PodTemplateSpec) []string {
	var out []string
	for _, c := range p.Spec.Containers {
		out = append(out, c.Name)
	}
	return out
}

// TestSelectorsMatchOperatorPods runs the real reconciler and checks that
// every target the experiments use selects some of the pods the operator
// creates, and that each container an experiment names is in every pod it
// selects; a label or container renamed in the operator fails here.
func TestSelectorsMatchOperatorPods(t *testing.T) {
	templates := operatorTemplates(t)
	seen := map[string]bool{}
	for _, e := range experiments {
		for _, want := range e.targets {
			if want.operator || seen[want.name] {
				continue
			}
			seen[want.name] = true
			var matched []string
			for name, p := range templates {
				if !labelsMatch(want.labels, p.Labels) {
					continue
				}
				matched = append(matched, name)
				for _, c := range want.containers {
					if !slices.Contains(containerNames(p), c) {
						t.Errorf("%s select %s, whose pods have containers %q, not %q", want.name, name, containerNames(p), c)
					}
				}
			}
			if len(matched) == 0 {
				t.Errorf("%s (labels %v) select none of the operator's pods: %v", want.name, want.labels, templateLabels(templates))
			}
		}
	}
	if !labelsMatch(spineNodes.labels, templates["StatefulSet "+clusterName+"-"+spineLayer].Labels) ||
		labelsMatch(spineNodes.labels, templates["StatefulSet "+clusterName+"-leaf"].Labels) {
		t.Errorf("%s must select the pods of layer %s and not those of layer leaf", spineNodes.name, spineLayer)
	}
}

// TestCheckJobFollowsThePartitionMap checks the `distcache check` Job
// against the operator: the map ConfigMap read with the data-plane pods'
// ServiceAccount, the client label, the data-plane key Secret at the
// data-plane pods' mount path, and the image the operator runs.
func TestCheckJobFollowsThePartitionMap(t *testing.T) {
	templates := operatorTemplates(t)
	docs := readDocuments(t, "check-job.yaml")
	job := &struct {
		Spec struct {
			Template corev1.PodTemplateSpec `json:"template"`
		} `json:"spec"`
	}{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(docs[0].obj.Object, job); err != nil {
		t.Fatal(err)
	}
	pod := job.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	wantMap := "--map-configmap=" + docs[0].obj.GetNamespace() + "/" + cachecluster.MapConfigMapName(clusterName)
	if len(c.Args) == 0 || c.Args[0] != "check" || !slices.Contains(c.Args, wantMap) {
		t.Errorf("args %q, want check ... %s", c.Args, wantMap)
	}
	if pod.ServiceAccountName != cachecluster.DataPlaneName(clusterName) || job.Spec.Template.Labels[cachecluster.LabelClient] != clusterName {
		t.Errorf("ServiceAccount %q, labels %v: want %s and the client label of %s",
			pod.ServiceAccountName, job.Spec.Template.Labels, cachecluster.DataPlaneName(clusterName), clusterName)
	}
	// The cluster's data-plane key, where the data-plane pods have it.
	wantKey := "--data-plane-key-dir=" + cachecluster.DataPlaneKeyMountPath
	keyVol := ""
	for _, m := range c.VolumeMounts {
		if m.MountPath == cachecluster.DataPlaneKeyMountPath && m.ReadOnly {
			keyVol = m.Name
		}
	}
	j := slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == keyVol })
	if !slices.Contains(c.Args, wantKey) || keyVol == "" || j < 0 || pod.Volumes[j].Secret == nil ||
		pod.Volumes[j].Secret.SecretName != cachecluster.DataPlaneKeySecretName(clusterName) {
		t.Errorf("args %q: want %s and the Secret %s mounted read-only at %s", c.Args, wantKey,
			cachecluster.DataPlaneKeySecretName(clusterName), cachecluster.DataPlaneKeyMountPath)
	}
	node := templates["StatefulSet "+clusterName+"-"+spineLayer]
	if len(node.Spec.Containers) == 0 || node.Spec.Containers[0].Image != c.Image {
		t.Errorf("image %q, the operator runs %q", c.Image, containerImages(node))
	}
}

func containerImages(p corev1.PodTemplateSpec) []string {
	var out []string
	for _, c := range p.Spec.Containers {
		out = append(out, c.Image)
	}
	return out
}

func labelsMatch(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func templateLabels(templates map[string]corev1.PodTemplateSpec) map[string]map[string]string {
	out := map[string]map[string]string{}
	for name, p := range templates {
		out[name] = p.Labels
	}
	return out
}

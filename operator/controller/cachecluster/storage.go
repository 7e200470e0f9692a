package cachecluster

import (
	"context"
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/layout"
)

// RedisGVK is the OT-Container-Kit redis-operator's standalone Redis kind.
var RedisGVK = schema.GroupVersionKind{Group: "redis.redis.opstreelabs.in", Version: "v1beta2", Kind: "Redis"}

// reconcileStorage runs the Redis backend of the cluster's storage mode.
func (r *Reconciler) reconcileStorage(ctx context.Context, s *state) (ctrl.Result, error) {
	var err error
	switch s.cc.Spec.Storage.Mode {
	case v1alpha1.StorageRedisOperator:
		err = r.reconcileRedisOperator(ctx, s)
	case v1alpha1.StorageExternal:
		err = r.reconcileExternal(ctx, s)
	default:
		err = r.reconcileManaged(ctx, s)
	}
	return ctrl.Result{}, err
}

// reconcileManaged runs one StatefulSet per rack: each pod a shard, with
// redis-server and the shim in front of it.
func (r *Reconciler) reconcileManaged(ctx context.Context, s *state) error {
	for rack := range s.topo.Racks() {
		lbl := labels(s.cc, ComponentStorage)
		lbl[LabelRack] = strconv.Itoa(rack)
		name := s.topo.RackName(rack)
		svc := headlessService(s.cc, name, lbl, ShimPort)
		if err := r.apply(ctx, s.cc, svc, func() { svc.Spec = headlessService(s.cc, name, lbl, ShimPort).Spec }); err != nil {
			return err
		}
		sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.cc.Namespace}}
		if err := r.apply(ctx, s.cc, sts, func() { r.mutateRackSet(s.cc, s.topo.ShardsPerRack(), lbl, sts) }); err != nil {
			return err
		}
		s.sets = append(s.sets, sts)
	}
	s.readyShims = map[string]*corev1.Pod{}
	for rack := range s.topo.Racks() {
		for shard := range s.topo.ShardsPerRack() {
			name := s.topo.ShardName(rack, shard)
			s.shimReady(name, s.pods[name])
		}
	}
	return nil
}

// shimReady records p as shard name's shim pod if it is Ready.
func (s *state) shimReady(name string, p *corev1.Pod) {
	if podReady(p) {
		s.readyShims[name] = p
	}
}

func (r *Reconciler) mutateRackSet(cc *v1alpha1.CacheCluster, shards int, lbl map[string]string, sts *appsv1.StatefulSet) {
	image, redisImage, pull := r.images(cc)
	redisArgs := layout.RedisArgs(&cc.Spec, RedisPort, RedisDataPath)
	redis := corev1.Container{
		Name: "redis", Image: redisImage, ImagePullPolicy: pull,
		Command:      append([]string{"redis-server"}, redisArgs...),
		Ports:        []corev1.ContainerPort{{Name: "redis", ContainerPort: RedisPort}},
		Resources:    cc.Spec.Storage.Resources,
		VolumeMounts: []corev1.VolumeMount{{Name: RedisDataVolume, MountPath: RedisDataPath}},
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
			TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(RedisPort)},
		}},
		SecurityContext: containerSecurity(),
	}
	shim := withDataPlaneKey(dataPlaneContainer(ComponentShim, image, pull,
		shimArgs(cc, "$(POD_NAME)", fmt.Sprintf("127.0.0.1:%d", RedisPort)), ShimPort))
	shim.Resources = cc.Spec.ShimResources
	sts.Labels = lbl
	sts.Spec.Replicas = ptr.To(int32(shards))
	sts.Spec.ServiceName = sts.Name
	sts.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
	sts.Spec.Selector = &metav1.LabelSelector{MatchLabels: lbl}
	sts.Spec.Template.Labels = lbl
	sts.Spec.Template.Spec.ServiceAccountName = DataPlaneName(cc.Name)
	sts.Spec.Template.Spec.SecurityContext = podSecurity()
	sts.Spec.Template.Spec.Volumes = []corev1.Volume{dataPlaneKeyVolume(cc)}
	sts.Spec.Template.Spec.InitContainers = nil
	withManagedRedisSecurity(cc, sts.Name, &sts.Spec.Template.Spec, &redis, &shim, image, pull)
	sts.Spec.Template.Spec.Containers = []corev1.Container{redis, shim}
	setScheduling(&sts.Spec.Template.Spec, cc.Spec.Storage.Scheduling, lbl, true)
	// The data volume: a claim per pod with storage.persistence (a
	// StatefulSet's claims cannot change once it exists, and the API does
	// not let persistence come or go), else an emptyDir that lives as long
	// as the pod.
	if p := cc.Spec.Storage.Persistence; p != nil && len(sts.Spec.VolumeClaimTemplates) == 0 {
		sts.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{
			ObjectMeta: metav1.ObjectMeta{Name: RedisDataVolume},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				StorageClassName: p.StorageClassName,
				Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: p.Size}},
			},
		}}
	}
	if len(sts.Spec.VolumeClaimTemplates) == 0 {
		sts.Spec.Template.Spec.Volumes = append(sts.Spec.Template.Spec.Volumes, corev1.Volume{
			Name: RedisDataVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}},
		})
	}
	withRollout(sts)
}

// persistence is the status summary of what the cluster's storage keeps
// across crashes: the append-only setting and where its file is ("/pvc",
// "/emptyDir"), "none", or "unmanaged" when the operator does not run the
// Redis servers.
func persistence(cc *v1alpha1.CacheCluster) string {
	switch cc.Spec.Storage.Mode {
	case v1alpha1.StorageExternal:
		return layout.PersistenceUnmanaged
	case v1alpha1.StorageRedisOperator:
		if cc.Spec.Storage.Persistence != nil {
			return layout.PersistenceUnmanaged + "/pvc"
		}
		return layout.PersistenceUnmanaged
	}
	a := layout.AppendOnly(&cc.Spec)
	if a == v1alpha1.AppendOnlyDisabled {
		return layout.PersistenceNone
	}
	if cc.Spec.Storage.Persistence != nil {
		return layout.Persistence(a) + "/pvc"
	}
	return layout.Persistence(a) + "/emptyDir"
}

// reconcileExternal fronts each given Redis endpoint with a shim
// Deployment and a Service that names it.
func (r *Reconciler) reconcileExternal(ctx context.Context, s *state) error {
	image, _, pull := r.images(s.cc)
	per := s.topo.ShardsPerRack()
	access := redisAccessOf(&s.cc.Spec.Storage, "")
	ready := map[string]*corev1.Pod{} // a Ready pod of each shard's shim (its Deployment's pods carry the shard's label)
	for _, p := range s.pods {
		if p.Labels[LabelComponent] == ComponentShim && podReady(p) {
			ready[p.Labels[LabelShard]] = p
		}
	}
	s.readyShims = map[string]*corev1.Pod{}
	for i, endpoint := range s.cc.Spec.Storage.External {
		rack, shard := i/per, i%per
		name := s.topo.ShardName(rack, shard)
		lbl := labels(s.cc, ComponentShim)
		lbl[LabelRack] = strconv.Itoa(rack)
		lbl[LabelShard] = name
		s.shimReady(name, ready[name])
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.cc.Namespace}}
		if err := r.apply(ctx, s.cc, svc, func() {
			svc.Labels = lbl
			svc.Spec.Selector = lbl
			svc.Spec.Ports = []corev1.ServicePort{{Name: "data", Protocol: corev1.ProtocolUDP, Port: ShimPort, TargetPort: intstr.FromInt32(ShimPort)}}
		}); err != nil {
			return err
		}
		dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.cc.Namespace}}
		if err := r.apply(ctx, s.cc, dep, func() {
			c := withDataPlaneKey(dataPlaneContainer(ComponentShim, image, pull, append(shimArgs(s.cc, name, endpoint), access.args...), ShimPort))
			c.Resources = s.cc.Spec.ShimResources
			c.VolumeMounts = append(c.VolumeMounts, access.mounts...)
			dep.Labels = lbl
			dep.Spec.Replicas = ptr.To(int32(1))
			dep.Spec.Selector = &metav1.LabelSelector{MatchLabels: lbl}
			dep.Spec.Template.Labels = lbl
			dep.Spec.Template.Spec.Containers = []corev1.Container{c}
			dep.Spec.Template.Spec.ServiceAccountName = DataPlaneName(s.cc.Name)
			dep.Spec.Template.Spec.SecurityContext = podSecurity()
			dep.Spec.Template.Spec.Volumes = append([]corev1.Volume{dataPlaneKeyVolume(s.cc)}, access.volumes...)
			// Spread among the cluster's shims: each Deployment runs one.
			setScheduling(&dep.Spec.Template.Spec, s.cc.Spec.Storage.Scheduling, labels(s.cc, ComponentShim), true)
		}); err != nil {
			return err
		}
	}
	return nil
}

// reconcileRedisOperator asks the redis-operator for one standalone Redis
// per shard, with the shim as its sidecar and, with storage.persistence, a
// volume claim for its data. The redis-operator runs each as a StatefulSet
// of one pod, <shard>-0, labelled like the Redis object (so with the
// cluster's label): a shard is Ready when that pod is, Redis and shim.
func (r *Reconciler) reconcileRedisOperator(ctx context.Context, s *state) error {
	s.readyShims = map[string]*corev1.Pod{}
	for rack := range s.topo.Racks() {
		for shard := range s.topo.ShardsPerRack() {
			name := s.topo.ShardName(rack, shard)
			spec, err := r.redisSpec(s.cc, name)
			if err != nil {
				return err
			}
			obj := &unstructured.Unstructured{}
			obj.SetGroupVersionKind(RedisGVK)
			obj.SetName(name)
			obj.SetNamespace(s.cc.Namespace)
			if err := r.apply(ctx, s.cc, obj, func() {
				obj.SetLabels(labels(s.cc, ComponentStorage))
				obj.Object["spec"] = spec
			}); err != nil {
				return err
			}
			s.shimReady(name, s.pods[name+"-0"])
		}
	}
	return nil
}

// redisSpec is the spec of shard name's Redis object (redis-operator
// v1beta2): image and resources, the shim sidecar, the partition map
// volume, and the data volume claim with storage.persistence.
func (r *Reconciler) redisSpec(cc *v1alpha1.CacheCluster, name string) (map[string]any, error) {
	image, redisImage, pull := r.images(cc)
	shim := withDataPlaneKey(dataPlaneContainer(ComponentShim, image, pull, shimArgs(cc, name, fmt.Sprintf("127.0.0.1:%d", RedisPort)), ShimPort))
	kubernetesConfig := map[string]any{"image": redisImage, "imagePullPolicy": string(pull)}
	sidecar := map[string]any{
		"name": shim.Name, "image": shim.Image, "imagePullPolicy": string(pull),
		"command": toAny(append([]string{"distcache"}, shim.Args...)),
		"env":     []any{map[string]any{"name": "POD_NAME", "value": name}},
		"mountPath": []any{
			map[string]any{"name": DataPlaneKeyVolume, "mountPath": DataPlaneKeyMountPath, "readOnly": true},
		},
	}
	if err := setResources(kubernetesConfig, cc.Spec.Storage.Resources); err != nil {
		return nil, err
	}
	if err := setResources(sidecar, cc.Spec.ShimResources); err != nil {
		return nil, err
	}
	storage := map[string]any{"volumeMount": map[string]any{
		"volume": []any{
			map[string]any{"name": DataPlaneKeyVolume, "secret": map[string]any{"secretName": DataPlaneKeySecretName(cc.Name), "defaultMode": int64(secretMode)}},
		},
	}}
	if p := cc.Spec.Storage.Persistence; p != nil {
		claim := map[string]any{
			"accessModes": []any{string(corev1.ReadWriteOnce)},
			"resources":   map[string]any{"requests": map[string]any{string(corev1.ResourceStorage): p.Size.String()}},
		}
		if p.StorageClassName != nil {
			claim["storageClassName"] = *p.StorageClassName
		}
		storage["volumeClaimTemplate"] = map[string]any{"spec": claim}
	}
	spec := map[string]any{
		"kubernetesConfig": kubernetesConfig,
		"sidecars":         []any{sidecar},
		"storage":          storage,
		// The pod's ServiceAccount, whose token the shim reads its map with.
		"serviceAccountName": DataPlaneName(cc.Name),
	}
	redisOperatorSecurity(cc, name, spec, kubernetesConfig, sidecar)
	// Spread among the cluster's shards: each Redis runs one pod.
	if err := setRedisScheduling(spec, cc.Spec.Storage.Scheduling, labels(cc, ComponentStorage)); err != nil {
		return nil, err
	}
	return spec, nil
}

// setResources sets obj's "resources" to res, unless res is empty.
func setResources(obj map[string]any, res corev1.ResourceRequirements) error {
	if len(res.Limits) == 0 && len(res.Requests) == 0 {
		return nil
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&res)
	if err != nil {
		return fmt.Errorf("cannot convert resources: %w", err)
	}
	obj["resources"] = u
	return nil
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// live says whether p exists and is not being deleted.
func live(p *corev1.Pod) bool { return p != nil && p.DeletionTimestamp.IsZero() }

// readyCondition is p's Ready condition, or nil before the kubelet set one.
func readyCondition(p *corev1.Pod) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodReady {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func podReady(p *corev1.Pod) bool {
	if !live(p) {
		return false
	}
	c := readyCondition(p)
	return c != nil && c.Status == corev1.ConditionTrue
}

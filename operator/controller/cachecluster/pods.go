package cachecluster

import (
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/internal/buildinfo"
	"github.com/distcache/distcache/layout"
)

// defaultRedisImage is the API's default, for specs the API server has not
// defaulted.
const defaultRedisImage = "redis:7.4"

// images are the cluster's images and pull policy: the distcache image its
// spec names, else the operator's data-plane image (Reconciler.
// DataPlaneImage, else the image this tree releases).
func (r *Reconciler) images(cc *v1alpha1.CacheCluster) (distcache, redis string, pull corev1.PullPolicy) {
	i := cc.Spec.Images
	distcache, redis, pull = i.DistCache, i.Redis, i.PullPolicy
	if distcache == "" {
		distcache = r.releaseImage()
	}
	if redis == "" {
		redis = defaultRedisImage
	}
	if pull == "" {
		pull = corev1.PullIfNotPresent
	}
	return distcache, redis, pull
}

// releaseImage is the operator's own data-plane image: DataPlaneImage,
// else the image this tree releases.
func (r *Reconciler) releaseImage() string {
	if r.DataPlaneImage != "" {
		return r.DataPlaneImage
	}
	return buildinfo.Image
}

// headlessService gives each pod of a set a stable DNS name.
func headlessService(cc *v1alpha1.CacheCluster, name string, lbl map[string]string, port int32) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: cc.Namespace, Labels: lbl},
		Spec: corev1.ServiceSpec{
			ClusterIP:                corev1.ClusterIPNone,
			Selector:                 lbl,
			PublishNotReadyAddresses: true, // peers must reach a member before it is Ready
			Ports: []corev1.ServicePort{
				{Name: "data", Protocol: corev1.ProtocolUDP, Port: port, TargetPort: intstr.FromInt32(port)},
				{Name: "metrics", Protocol: corev1.ProtocolTCP, Port: MetricsPort, TargetPort: intstr.FromInt32(MetricsPort)},
			},
		},
	}
}

func (r *Reconciler) layerService(s *state, l layout.Layer) *corev1.Service {
	lbl := labels(s.cc, ComponentCacheNode)
	lbl[LabelLayer] = l.Name
	return headlessService(s.cc, s.topo.LayerSetName(l.Name), lbl, NodePort)
}

// mutateLayerSet sets a layer's StatefulSet: one cache-node pod per member,
// named as the member.
func (r *Reconciler) mutateLayerSet(s *state, l layout.Layer, sts *appsv1.StatefulSet) {
	lbl := labels(s.cc, ComponentCacheNode)
	lbl[LabelLayer] = l.Name
	image, _, pull := r.images(s.cc)
	// The node serves under the shims' leases (--shim-leases), not by
	// reading its map: a watch and a backstop read, as every data-plane pod.
	args := append(s.topo.NodeArgs(l, "$(POD_NAME)", "0.0.0.0:"+strconv.Itoa(NodePort)), mapConfigMapArgs(s.cc, layout.BackstopMapPoll)...)
	// A node stopped with its pod (deleted, or restarted by an upgrade)
	// drains: readers go elsewhere at once, writes of its keys do not wait.
	args = append(args, "--drain-timeout="+layout.NodeDrainTimeout(&s.cc.Spec).String())
	c := withDataPlaneKey(dataPlaneContainer("node", image, pull, args, NodePort))
	c.Resources = l.Spec.Resources
	sts.Labels = lbl
	sts.Spec.Replicas = ptr.To(int32(s.topo.Nodes(l)))
	sts.Spec.ServiceName = sts.Name
	sts.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
	sts.Spec.Selector = &metav1.LabelSelector{MatchLabels: lbl}
	sts.Spec.Template.Labels = lbl
	sts.Spec.Template.Spec.Containers = []corev1.Container{c}
	sts.Spec.Template.Spec.Volumes = []corev1.Volume{dataPlaneKeyVolume(s.cc)}
	sts.Spec.Template.Spec.ServiceAccountName = DataPlaneName(s.cc.Name)
	sts.Spec.Template.Spec.SecurityContext = podSecurity()
	setScheduling(&sts.Spec.Template.Spec, l.Spec.Scheduling, lbl, true)
	withRollout(sts)
}

// dataPlaneContainer runs a distcache role with its pod name in POD_NAME
// and readiness from /healthz; args include where it reads its map
// (mapConfigMapArgs).
func dataPlaneContainer(role, image string, pull corev1.PullPolicy, args []string, port int32) corev1.Container {
	args = append(args,
		fmt.Sprintf("--metrics-addr=0.0.0.0:%d", MetricsPort),
	)
	return corev1.Container{
		Name:            role,
		Image:           image,
		ImagePullPolicy: pull,
		Args:            args,
		Env: []corev1.EnvVar{{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"},
		}}},
		Ports: []corev1.ContainerPort{
			{Name: "data", ContainerPort: port, Protocol: corev1.ProtocolUDP},
			{Name: "metrics", ContainerPort: MetricsPort, Protocol: corev1.ProtocolTCP},
		},
		ReadinessProbe: &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(MetricsPort)}},
			PeriodSeconds: 2, FailureThreshold: 2,
		},
		SecurityContext: containerSecurity(),
	}
}

// shimArgs are the storage shim's flags for a Redis at redisAddr.
func shimArgs(cc *v1alpha1.CacheCluster, shard, redisAddr string) []string {
	args := layout.ShimArgs(&cc.Spec, shard, redisAddr, "0.0.0.0:"+strconv.Itoa(ShimPort), layout.APIMapDeliveryLag)
	return append(args, mapConfigMapArgs(cc, layout.BackstopMapPoll)...)
}

package switchfabric

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/fabric/pipeline"
	"github.com/distcache/distcache/operator/secretaccess"
)

// DefaultImageRecheck is how often a fabric's image tag is resolved
// again (Reconciler.ImageRecheck).
const DefaultImageRecheck = time.Minute

// sourceRetry is how soon an unreadable source that is not watched (a
// Secret, an image) is read again.
const sourceRetry = 30 * time.Second

// loaded is a build read from a fabric's pipelineSource, or the
// project's own.
type loaded struct {
	p      *pipeline.Pipeline
	source string // builtin, configMap/NAME, secret/NAME or the image reference
	digest string // the image's manifest digest
	since  time.Time
}

// sourceProblem is why a fabric's pipelineSource gives no build to push.
type sourceProblem struct {
	reason, msg string
	retry       time.Duration // how soon to read again; 0: a watch says when
}

func (p *sourceProblem) Error() string { return p.msg }

// loadPipeline reads and checks the build the fabric's switches get. A
// source that gives none blocks a fabric without a fleet; a running
// fleet keeps the build it has, and the status says why the new one is
// not taken.
func (r *Reconciler) loadPipeline(ctx context.Context, s *state) (ctrl.Result, error) {
	fabric := client.ObjectKeyFromObject(s.f)
	src := s.f.Spec.PipelineSource
	if src == nil || src.ConfigMapRef == nil {
		r.configMaps.stop(fabric)
	}
	l, err := r.readSource(ctx, s)
	var problem *sourceProblem
	switch {
	case errors.As(err, &problem):
	case err != nil:
		return ctrl.Result{}, err
	default:
		s.binding.build = l
		return ctrl.Result{}, nil
	}
	run := r.fleets.current(fabric)
	if run == nil {
		res, _ := s.block(problem.reason, problem.msg+"; no switch is programmed")
		res.RequeueAfter = problem.retry
		return res, nil
	}
	s.binding.build = run.build
	s.pipelineIssue = &metav1.Condition{Reason: problem.reason,
		Message: fmt.Sprintf("%s; the switches keep build %s (%s)", problem.msg, run.build.p.CookieHex(), run.build.source)}
	return ctrl.Result{}, nil
}

// readSource is the build of the fabric's pipelineSource, the project's
// own without one; a *sourceProblem when the source gives none.
func (r *Reconciler) readSource(ctx context.Context, s *state) (*loaded, error) {
	name, src := s.f.Spec.Pipeline, s.f.Spec.PipelineSource
	switch {
	case src == nil:
		p, err := pipeline.Builtin(name)
		if err != nil {
			return nil, &sourceProblem{reason: v1alpha1.ReasonPipelineMismatch, msg: err.Error()}
		}
		return &loaded{p: p, source: "builtin"}, nil
	case src.ConfigMapRef != nil:
		return r.readConfigMap(ctx, s, src.ConfigMapRef)
	case src.SecretRef != nil:
		return r.readSecret(ctx, s, src.SecretRef)
	default:
		return r.readImage(ctx, s, src.Image)
	}
}

func (r *Reconciler) readConfigMap(ctx context.Context, s *state, ref *v1alpha1.PipelineObjectRef) (*loaded, error) {
	fabric := client.ObjectKeyFromObject(s.f)
	key := types.NamespacedName{Namespace: s.f.Namespace, Name: ref.Name}
	cm, err := r.configMaps.get(ctx, r.clientset, fabric, key, func() { r.notifyAll(fabric.Namespace, fabric.Name) })
	if errors.Is(err, errNoConfigMap) {
		return nil, &sourceProblem{reason: v1alpha1.ReasonPipelineSourceInvalid, msg: fmt.Sprintf("ConfigMap %s does not exist", ref.Name)}
	}
	if err != nil {
		return nil, err
	}
	files := func(k string) ([]byte, bool) {
		if b, ok := cm.BinaryData[k]; ok {
			return b, true
		}
		v, ok := cm.Data[k]
		return []byte(v), ok
	}
	keys := slices.Sorted(maps.Keys(cm.Data))
	keys = append(keys, slices.Sorted(maps.Keys(cm.BinaryData))...)
	return compiled(s.f.Spec.Pipeline, "configMap/"+ref.Name, "ConfigMap "+ref.Name, ref.PipelineFiles, files, keys)
}

func (r *Reconciler) readSecret(ctx context.Context, s *state, ref *v1alpha1.PipelineObjectRef) (*loaded, error) {
	sec, err := r.getSecret(ctx, s.f.Namespace, ref.Name, "the pipeline Secret")
	if err != nil {
		return nil, err
	}
	files := func(k string) ([]byte, bool) { b, ok := sec.Data[k]; return b, ok }
	return compiled(s.f.Spec.Pipeline, "secret/"+ref.Name, "Secret "+ref.Name, ref.PipelineFiles, files, slices.Sorted(maps.Keys(sec.Data)))
}

// getSecret reads a Secret of the fabric's namespace without a cache; a
// missing or forbidden one is a *sourceProblem.
func (r *Reconciler) getSecret(ctx context.Context, ns, name, what string) (*corev1.Secret, error) {
	sec := &corev1.Secret{}
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, sec)
	if apierrors.IsNotFound(err) {
		return nil, &sourceProblem{reason: v1alpha1.ReasonPipelineSourceInvalid, msg: fmt.Sprintf("%s %s does not exist", what, name), retry: sourceRetry}
	}
	if msg, ok := secretaccess.Forbidden(err, ns, "read "+what+" "+name); ok {
		return nil, &sourceProblem{reason: v1alpha1.ReasonSecretsForbidden, msg: msg, retry: sourceRetry}
	}
	if err != nil {
		return nil, fmt.Errorf("cannot get Secret %s: %w", name, err)
	}
	return sec, nil
}

// compiled checks the build whose files file reads; what names the
// source in messages, keys lists what it holds.
func compiled(name, source, what string, pf v1alpha1.PipelineFiles, file func(string) ([]byte, bool), keys []string) (*loaded, error) {
	p4infoKey, dcKey := filesOf(pf)
	p4info, ok := file(p4infoKey)
	dc, ok2 := file(dcKey)
	if !ok || !ok2 {
		missing := p4infoKey
		if ok {
			missing = dcKey
		}
		return nil, &sourceProblem{reason: v1alpha1.ReasonPipelineSourceInvalid, retry: retryOf(source),
			msg: fmt.Sprintf("%s has no key %s (it has %s)", what, missing, strings.Join(keys, ", "))}
	}
	p, err := pipeline.Compiled(name, p4info, dc)
	var mismatch *pipeline.MismatchError
	switch {
	case errors.As(err, &mismatch):
		return nil, &sourceProblem{reason: v1alpha1.ReasonP4InfoMismatch, retry: retryOf(source),
			msg: fmt.Sprintf("%s: %s: nothing is pushed", what, err)}
	case err != nil:
		return nil, &sourceProblem{reason: v1alpha1.ReasonPipelineSourceInvalid, retry: retryOf(source), msg: fmt.Sprintf("%s: %s", what, err)}
	}
	return &loaded{p: p, source: source}, nil
}

// retryOf is how soon a source is read again after a problem: a watched
// ConfigMap's change brings the fabric back by itself.
func retryOf(source string) time.Duration {
	if strings.HasPrefix(source, "configMap/") {
		return 0
	}
	return sourceRetry
}

func filesOf(pf v1alpha1.PipelineFiles) (p4info, deviceConfig string) {
	p4info, deviceConfig = pf.P4InfoKey, pf.DeviceConfigKey
	if p4info == "" {
		p4info = pipeline.DefaultP4InfoKey
	}
	if deviceConfig == "" {
		deviceConfig = pipeline.DefaultDeviceConfigKey
	}
	return p4info, deviceConfig
}

// images are the artefacts last pulled, by fabric: a tag is resolved
// again every ImageRecheck, and pulled again when it moved.
type images struct {
	mu       sync.Mutex // guards byFabric
	byFabric map[types.NamespacedName]*pulled
}

type pulled struct {
	spec     string // what was asked: reference, files, pull Secret
	checked  time.Time
	artefact *pipeline.Artefact
}

func (r *Reconciler) readImage(ctx context.Context, s *state, img *v1alpha1.PipelineImage) (*loaded, error) {
	fabric := client.ObjectKeyFromObject(s.f)
	p4infoKey, dcKey := filesOf(img.PipelineFiles)
	spec := strings.Join([]string{img.Reference, p4infoKey, dcKey}, "\x00")
	var keys authn.Keychain
	if ref := img.PullSecretRef; ref != nil {
		sec, err := r.getSecret(ctx, s.f.Namespace, ref.Name, "the image pull Secret")
		if err != nil {
			return nil, err
		}
		if keys, err = pipeline.DockerConfigKeychain(sec.Data[corev1.DockerConfigJsonKey]); err != nil {
			return nil, &sourceProblem{reason: v1alpha1.ReasonPipelineSourceInvalid, retry: sourceRetry,
				msg: fmt.Sprintf("image pull Secret %s (%s): %s", ref.Name, corev1.DockerConfigJsonKey, err)}
		}
		spec += "\x00" + ref.Name + "\x00" + sec.ResourceVersion
	}
	r.images.mu.Lock()
	defer r.images.mu.Unlock()
	last := r.images.byFabric[fabric]
	if last == nil || last.spec != spec || time.Since(last.checked) >= r.imageRecheck() {
		a, err := r.pullIfMoved(ctx, img.Reference, p4infoKey, dcKey, keys, last, spec)
		if err != nil {
			return nil, &sourceProblem{reason: v1alpha1.ReasonPipelineSourceInvalid, retry: sourceRetry, msg: err.Error()}
		}
		if r.images.byFabric == nil {
			r.images.byFabric = map[types.NamespacedName]*pulled{}
		}
		last = &pulled{spec: spec, checked: time.Now(), artefact: a}
		r.images.byFabric[fabric] = last
	}
	files := map[string][]byte{p4infoKey: last.artefact.P4Info, dcKey: last.artefact.DeviceConfig}
	l, err := compiled(s.f.Spec.Pipeline, img.Reference, "image "+img.Reference, img.PipelineFiles,
		func(k string) ([]byte, bool) { b, ok := files[k]; return b, ok }, []string{p4infoKey, dcKey})
	if err != nil {
		return nil, err
	}
	l.digest = last.artefact.Digest
	return l, nil
}

// pullIfMoved pulls the artefact ref names, unless last, asked alike,
// holds the one its digest still names.
func (r *Reconciler) pullIfMoved(ctx context.Context, ref, p4infoKey, dcKey string, keys authn.Keychain, last *pulled, spec string) (*pipeline.Artefact, error) {
	if last != nil && last.spec == spec {
		d, err := pipeline.Resolve(ctx, ref, keys)
		if err != nil {
			return nil, err
		}
		if d == last.artefact.Digest {
			return last.artefact, nil
		}
	}
	return pipeline.Pull(ctx, ref, p4infoKey, dcKey, keys)
}

func (r *Reconciler) imageRecheck() time.Duration {
	if r.ImageRecheck > 0 {
		return r.ImageRecheck
	}
	return DefaultImageRecheck
}

// forget drops fabric's last pull.
func (is *images) forget(fabric types.NamespacedName) {
	is.mu.Lock()
	defer is.mu.Unlock()
	delete(is.byFabric, fabric)
}

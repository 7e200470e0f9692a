package switchfabric

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// errNoConfigMap says the watched ConfigMap does not exist.
var errNoConfigMap = errors.New("no such ConfigMap")

// syncTimeout bounds the wait for a new watch's first list.
const syncTimeout = 30 * time.Second

// configMapWatches keeps, per fabric whose pipelineSource is a ConfigMap,
// an informer on that one ConfigMap (fieldSelector metadata.name), which
// has the fabric reconciled when it changes and holds its latest
// version. The manager's cache holds only the operator's own ConfigMaps
// (labelled with a cluster), not the users'.
type configMapWatches struct {
	mu       sync.Mutex // guards byFabric
	byFabric map[types.NamespacedName]*configMapWatch
}

// configMapWatch is one ConfigMap's informer.
type configMapWatch struct {
	key      types.NamespacedName // the ConfigMap
	informer cache.SharedIndexInformer
	stop     context.CancelFunc
}

// get returns fabric's ConfigMap key, from a watch it starts on first use
// (and after key changed); notify is called on every change of it.
func (ws *configMapWatches) get(ctx context.Context, cs kubernetes.Interface, fabric, key types.NamespacedName, notify func()) (*corev1.ConfigMap, error) {
	ws.mu.Lock()
	w := ws.byFabric[fabric]
	if w != nil && w.key != key {
		w.stop()
		w = nil
	}
	if w == nil {
		w = startConfigMapWatch(cs, key, notify)
		if ws.byFabric == nil {
			ws.byFabric = map[types.NamespacedName]*configMapWatch{}
		}
		ws.byFabric[fabric] = w
	}
	ws.mu.Unlock()
	sctx, cancel := context.WithTimeout(ctx, syncTimeout)
	defer cancel()
	if !cache.WaitForCacheSync(sctx.Done(), w.informer.HasSynced) {
		return nil, fmt.Errorf("cannot watch ConfigMap %s: no list within %s", key, syncTimeout)
	}
	obj, ok, err := w.informer.GetStore().GetByKey(key.String())
	if err != nil {
		return nil, fmt.Errorf("cannot read ConfigMap %s: %w", key, err)
	}
	if !ok {
		return nil, errNoConfigMap
	}
	return obj.(*corev1.ConfigMap), nil
}

func startConfigMapWatch(cs kubernetes.Interface, key types.NamespacedName, notify func()) *configMapWatch {
	lw := cache.NewFilteredListWatchFromClient(cs.CoreV1().RESTClient(), "configmaps", key.Namespace, func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", key.Name).String()
	})
	inf := cache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, cache.Indexers{})
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { notify() },
		UpdateFunc: func(any, any) { notify() },
		DeleteFunc: func(any) { notify() },
	})
	ctx, cancel := context.WithCancel(context.Background())
	go inf.RunWithContext(ctx)
	return &configMapWatch{key: key, informer: inf, stop: cancel}
}

// stop ends fabric's watch, if one runs.
func (ws *configMapWatches) stop(fabric types.NamespacedName) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if w := ws.byFabric[fabric]; w != nil {
		w.stop()
		delete(ws.byFabric, fabric)
	}
}

// stopAll ends every watch.
func (ws *configMapWatches) stopAll() {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for k, w := range ws.byFabric {
		w.stop()
		delete(ws.byFabric, k)
	}
}

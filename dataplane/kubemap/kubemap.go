// Package kubemap reads the partition map from the ConfigMap the operator
// publishes, through the Kubernetes API: a mapwatch.Source for data-plane
// pods and in-cluster clients.
//
// Every Read is a GET of the one ConfigMap without a resourceVersion, which
// the API server answers from etcd with a quorum read: the object committed
// when the read started, or a newer one. That is what lets a cache node
// renew its serving lease from the read's start time with no delivery lag
// (docs/dataplane.md, Fencing). A watch on the same ConfigMap
// (fieldSelector metadata.name=NAME, resumed from the last resourceVersion
// seen) only tells the mapwatch.Watcher to read again, so a new version is
// installed within milliseconds of publication; the watch reconnects with
// a bounded backoff when it ends or fails, from the last resourceVersion
// its events and bookmarks carried. When that is too old (410 Gone: after
// the API server restarted, or the ConfigMap was deleted and created
// again), it starts over without one: the API server sends the current
// object first. It never resumes from the resourceVersion of a GET's
// object, which is as old as the map's last publication: a restarted API
// server keeps no history that old, and would end every such watch at
// once.
//
// The permissions it needs are get and watch on that ConfigMap, by name
// (the operator's Role <cluster>-data-plane): no list, no update.
package kubemap

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// Key is the ConfigMap's data key that holds the encoded map.
const Key = "map.json"

// Client-side rate limit of the source's API client. client-go's default
// (5 requests/s, burst 10) would throttle the periodic GETs of a 200 ms
// poll plus the watch's triggered reads, and a throttled GET starts late:
// the lease it renews is shorter. These leave room for a poll every 20 ms.
const (
	QPS   = 50
	Burst = 100
)

// Backoff bounds of the watch's reconnects.
const (
	minBackoff = 50 * time.Millisecond
	maxBackoff = 2 * time.Second
)

// Source is one ConfigMap's map, read through the API.
type Source struct {
	cms       corev1client.ConfigMapInterface
	namespace string
	name      string
	logger    *slog.Logger
	// watchTimeout asks the API server to end each watch after it (0: the
	// server's own, randomized, minutes long).
	watchTimeout time.Duration

	mu sync.Mutex // guards rv
	rv string     // resourceVersion of the watch's last event or bookmark; "" to start from the current object
}

// Option changes a Source.
type Option func(*Source)

// WithLogger logs the watch's reconnects to l.
func WithLogger(l *slog.Logger) Option { return func(s *Source) { s.logger = l } }

// WithWatchTimeout asks the API server to end every watch after d (whole
// seconds, at least one); the source then watches again.
func WithWatchTimeout(d time.Duration) Option {
	return func(s *Source) { s.watchTimeout = max(d, time.Second) }
}

// ParseRef splits "NAMESPACE/NAME".
func ParseRef(ref string) (namespace, name string, err error) {
	namespace, name, ok := strings.Cut(ref, "/")
	if !ok || namespace == "" || name == "" || strings.Contains(name, "/") {
		return "", "", fmt.Errorf("cannot parse ConfigMap reference %q: want NAMESPACE/NAME", ref)
	}
	return namespace, name, nil
}

// New is the source of ConfigMap namespace/name on the API server cfg
// points at. cfg is copied; its rate limit is set to QPS and Burst.
func New(cfg *rest.Config, namespace, name string, opts ...Option) (*Source, error) {
	c := rest.CopyConfig(cfg)
	c.QPS, c.Burst = QPS, Burst
	if c.UserAgent == "" {
		c.UserAgent = "distcache-mapwatch"
	}
	client, err := corev1client.NewForConfig(c)
	if err != nil {
		return nil, fmt.Errorf("cannot create a Kubernetes client: %w", err)
	}
	s := &Source{cms: client.ConfigMaps(namespace), namespace: namespace, name: name, logger: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(s)
	}
	return s, nil
}

func (s *Source) String() string { return "configmap/" + s.namespace + "/" + s.name }

// Read GETs the ConfigMap (a quorum read) and returns its map.
func (s *Source) Read(ctx context.Context) ([]byte, error) {
	cm, err := s.cms.Get(ctx, s.name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("cannot read partition map %s: %w", s, err)
	}
	data, ok := cm.Data[Key]
	if !ok {
		return nil, fmt.Errorf("cannot read partition map %s: no key %s", s, Key)
	}
	return []byte(data), nil
}

func (s *Source) seen(rv string) {
	s.mu.Lock()
	s.rv = rv
	s.mu.Unlock()
}

func (s *Source) resourceVersion() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rv
}

// Notify watches the ConfigMap until ctx ends and calls changed on every
// event, with the map an added or modified ConfigMap holds, and whenever
// the watch had to start over (it may have missed one), with none. It
// implements mapwatch.Notifier.
func (s *Source) Notify(ctx context.Context, changed func(offered []byte)) {
	backoff := minBackoff
	for ctx.Err() == nil {
		healthy, err := s.watchOnce(ctx, changed)
		if ctx.Err() != nil {
			return
		}
		if healthy {
			backoff = minBackoff
		}
		if err != nil {
			s.logger.Warn("partition map watch ended", "configmap", s.String(), "err", err, "retry_in", backoff)
		}
		// The watch may have missed events while it was down.
		changed(nil)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// watchOnce runs one watch until it ends. healthy says whether it
// delivered anything (a reconnect right after may start from the minimum
// backoff again).
func (s *Source) watchOnce(ctx context.Context, changed func(offered []byte)) (healthy bool, err error) {
	// Without a resourceVersion the watch starts at the most recent one
	// and its first event is the current object, if there is one.
	rv := s.resourceVersion()
	opts := metav1.ListOptions{
		FieldSelector:       fields.OneTermEqualSelector("metadata.name", s.name).String(),
		ResourceVersion:     rv,
		AllowWatchBookmarks: true,
	}
	if s.watchTimeout > 0 {
		opts.TimeoutSeconds = ptr.To(int64(s.watchTimeout / time.Second))
	}
	w, err := s.cms.Watch(ctx, opts)
	if err != nil {
		if apierrors.IsGone(err) || apierrors.IsResourceExpired(err) {
			s.seen("")
		}
		return false, fmt.Errorf("cannot watch %s: %w", s, err)
	}
	defer w.Stop()
	s.logger.Debug("partition map watch started", "configmap", s.String(), "resource_version", rv)
	for {
		select {
		case <-ctx.Done():
			return healthy, nil
		case ev, ok := <-w.ResultChan():
			if !ok {
				return healthy, nil
			}
			switch ev.Type {
			case watch.Error:
				st := apierrors.FromObject(ev.Object)
				if apierrors.IsGone(st) || apierrors.IsResourceExpired(st) {
					s.seen("")
				}
				return healthy, fmt.Errorf("cannot watch %s: %w", s, st)
			case watch.Bookmark:
				if cm, ok := ev.Object.(*corev1.ConfigMap); ok {
					s.seen(cm.ResourceVersion)
				}
				healthy = true
			default: // Added, Modified, Deleted
				var offered []byte
				if cm, ok := ev.Object.(*corev1.ConfigMap); ok {
					s.seen(cm.ResourceVersion)
					if data, ok := cm.Data[Key]; ok && ev.Type != watch.Deleted {
						offered = []byte(data)
					}
				}
				healthy = true
				changed(offered)
			}
		}
	}
}

// Rules are the only permissions a Source of ConfigMap name needs: get and
// watch of that ConfigMap, by name. The operator grants them to data-plane
// pods in a Role.
func Rules(name string) []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{{
		APIGroups:     []string{""},
		Resources:     []string{"configmaps"},
		ResourceNames: []string{name},
		Verbs:         []string{"get", "watch"},
	}}
}

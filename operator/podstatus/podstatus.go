// Package podstatus asks data-plane pods which partition map version their
// process has applied: GET /status on the metrics port (dataplane/metrics),
// the way CloudNativePG's operator asks its instance managers. The
// CacheCluster controller counts the pods that have the published version
// (status.mapApplied) and reports Ready only when every Ready pod has it:
// a published map that some process has not installed is a remap still
// under way.
//
// The prober remembers what each pod answered, keyed by pod UID and restart
// count, and asks again only pods that have not reported the version asked
// about: once a version has reached every pod, reconciles cost no requests.
//
// HotKeys reads the pods' hot-key reports on the same port (GET /hotkeys,
// and the shims' GET /work), from which the controller decides the copies
// of hot keys (package redundancy).
package podstatus

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/distcache/distcache/dataplane/metrics"
)

// Defaults of a Prober.
const (
	DefaultTimeout  = time.Second
	DefaultParallel = 16
)

// Prober asks pods for their status over HTTP.
type Prober struct {
	// Port is the pods' metrics port.
	Port int
	// Timeout bounds each pod's answer (DefaultTimeout when 0).
	Timeout time.Duration
	// Parallel bounds the requests in flight (DefaultParallel when 0).
	Parallel int
	// Client makes the requests (http.DefaultClient when nil).
	Client *http.Client

	mu   sync.Mutex                        // guards seen
	seen map[string]map[types.UID]reported // per cluster, the last answer of each of its pods
}

// reported is a pod's last answer, valid while its containers have not
// restarted since.
type reported struct {
	restarts int32
	version  int64
}

// restarts is the number of container restarts of p: a restarted process
// starts over with whatever map it reads first.
func restarts(p *corev1.Pod) int32 {
	var n int32
	for _, c := range p.Status.ContainerStatuses {
		n += c.RestartCount
	}
	return n
}

// Applied says, for every pod of cluster (a key of the caller's choice),
// whether its process reports at least version; pods without an IP or
// that do not answer count as not having it. It asks only pods whose last
// answer was older than version, and forgets the cluster's pods not in
// pods.
func (p *Prober) Applied(ctx context.Context, cluster string, pods []*corev1.Pod, version int64) map[string]bool {
	out := make(map[string]bool, len(pods))
	var ask []*corev1.Pod
	p.mu.Lock()
	if p.seen == nil {
		p.seen = map[string]map[types.UID]reported{}
	}
	prev, cur := p.seen[cluster], make(map[types.UID]reported, len(pods))
	for _, pod := range pods {
		r, ok := prev[pod.UID]
		if ok && r.restarts == restarts(pod) {
			cur[pod.UID] = r
		}
		switch {
		case ok && r.restarts == restarts(pod) && r.version >= version:
			out[pod.Name] = true
		case pod.Status.PodIP != "":
			ask = append(ask, pod)
		}
	}
	p.seen[cluster] = cur
	p.mu.Unlock()

	type answer struct {
		pod     *corev1.Pod
		version int64
		err     error
	}
	answers := make(chan answer, len(ask))
	sem := make(chan struct{}, p.parallel())
	for _, pod := range ask {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			v, err := p.mapVersion(ctx, pod.Status.PodIP)
			answers <- answer{pod, v, err}
		}()
	}
	for range ask {
		a := <-answers
		if a.err != nil {
			continue
		}
		p.mu.Lock()
		if seen := p.seen[cluster]; seen != nil {
			seen[a.pod.UID] = reported{restarts: restarts(a.pod), version: a.version}
		}
		p.mu.Unlock()
		out[a.pod.Name] = a.version >= version
	}
	return out
}

// Forget drops what the pods of cluster answered (a deleted cluster).
func (p *Prober) Forget(cluster string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.seen, cluster)
}

func (p *Prober) parallel() int {
	if p.Parallel > 0 {
		return p.Parallel
	}
	return DefaultParallel
}

// mapVersion asks the process at ip for its status.
func (p *Prober) mapVersion(ctx context.Context, ip string) (int64, error) {
	timeout := p.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c := p.Client
	if c == nil {
		c = http.DefaultClient
	}
	var st metrics.Status
	addr := net.JoinHostPort(ip, strconv.Itoa(p.Port))
	if err := metrics.GetJSON(ctx, c, addr, metrics.StatusPath, metrics.MaxSmallAnswer, &st); err != nil {
		return 0, fmt.Errorf("cannot ask %s for its status: %w", ip, err)
	}
	return st.MapVersion, nil
}

package kubemap_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/distcache/distcache/dataplane/kubemap"
	"github.com/distcache/distcache/dataplane/mapwatch"
	"github.com/distcache/distcache/internal/testing/kubetest"
	"github.com/distcache/distcache/placement/partmap"
)

// env is the package's control plane: a real kube-apiserver and etcd. Its
// watches are served from etcd (no watch cache), so that a compacted
// resourceVersion gets 410 Gone.
var env *kubetest.Env

func TestMain(m *testing.M) { kubetest.Main(m, &env, kubetest.WithoutWatchCache()) }

// fixture is one ConfigMap holding a map, and a ServiceAccount allowed
// only what a data-plane pod is (kubemap.Rules).
type fixture struct {
	t    *testing.T
	ns   string
	name string
	m    *partmap.Map
	sa   *rest.Config // the ServiceAccount's client configuration
}

// newFixture creates namespace ns with the map's ConfigMap at version 1.
func newFixture(t *testing.T, ns string) *fixture {
	t.Helper()
	ctx := context.Background()
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	m, err := partmap.Build(partmap.Spec{
		Cluster: "demo", Racks: 1, ShardsPerRack: 1, StorageSeed: 7,
		Layers: []partmap.LayerSpec{{Name: "spine", Nodes: 2, Seed: 11}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, ns: ns, name: "demo-partition-map", m: m}
	f.create(m)
	f.sa, err = env.ServiceAccount(ctx, ns, "demo-data-plane", kubemap.Rules(f.name))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) configMap(m *partmap.Map) *corev1.ConfigMap {
	f.t.Helper()
	data, err := partmap.Encode(m)
	if err != nil {
		f.t.Fatal(err)
	}
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: f.name, Namespace: f.ns},
		Data:       map[string]string{kubemap.Key: string(data)},
	}
}

func (f *fixture) create(m *partmap.Map) {
	f.t.Helper()
	if err := env.Client.Create(context.Background(), f.configMap(m)); err != nil {
		f.t.Fatal(err)
	}
}

// publish writes the next version of the map, as the operator does.
func (f *fixture) publish() int64 {
	f.t.Helper()
	next := f.m.Clone()
	next.Version++
	f.m = next
	if err := env.Client.Update(context.Background(), f.configMap(next)); err != nil {
		f.t.Fatal(err)
	}
	return next.Version
}

// watcher opens the map through cfg and runs it with a poll interval long
// enough that only the watch triggers reads during the test.
func (f *fixture) watcher(cfg *rest.Config, opts ...kubemap.Option) (*mapwatch.Watcher, <-chan int64) {
	f.t.Helper()
	src, err := kubemap.New(cfg, f.ns, f.name, opts...)
	if err != nil {
		f.t.Fatal(err)
	}
	w, err := mapwatch.Open(context.Background(), src, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	installed := make(chan int64, 100)
	w.Subscribe(func(p *partmap.Placement) error { installed <- p.Version(); return nil })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx, time.Hour) }()
	f.t.Cleanup(func() { cancel(); <-done })
	return w, installed
}

// await waits for version v to be installed.
func await(t *testing.T, installed <-chan int64, v int64) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case got := <-installed:
			if got == v {
				return
			}
		case <-timeout:
			t.Fatalf("version %d not installed within 30s", v)
		}
	}
}

func TestWatchInstallsNewVersions(t *testing.T) {
	f := newFixture(t, "watch")
	w, installed := f.watcher(f.sa)
	if v := w.Current().Version(); v != 1 {
		t.Fatalf("opened version %d, want 1", v)
	}
	for range 3 {
		await(t, installed, f.publish())
	}
}

// TestWatchIsReestablished ends every watch after a second and checks that
// a version published on a later watch, and one published after the
// ConfigMap was deleted and created again, are installed.
func TestWatchIsReestablished(t *testing.T) {
	f := newFixture(t, "rewatch")
	starts := make(chan struct{}, 100)
	log := slog.New(&signalHandler{msg: "partition map watch started", ch: starts})
	w, installed := f.watcher(f.sa, kubemap.WithWatchTimeout(time.Second), kubemap.WithLogger(log))
	for i := range 2 {
		select {
		case <-starts:
		case <-time.After(30 * time.Second):
			t.Fatalf("watch %d did not start within 30s", i+1)
		}
	}
	await(t, installed, f.publish())

	ctx := context.Background()
	if err := env.Client.Delete(ctx, f.configMap(f.m)); err != nil {
		t.Fatal(err)
	}
	// A read the background watch started before the deletion may still
	// report what it found; a read started after it must find nothing.
	deleted := time.Now()
	var readAfter atomic.Bool
	w.OnRead(func(at time.Time, _ int64) {
		if at.After(deleted) {
			readAfter.Store(true)
		}
	})
	if _, err := w.Reload(); !apierrors.IsNotFound(err) || readAfter.Load() {
		t.Fatalf("Reload of a deleted ConfigMap: %v, observed %v; want NotFound and no observation", err, readAfter.Load())
	}
	next := f.m.Clone()
	next.Version++
	f.m = next
	f.create(next)
	await(t, installed, next.Version)
}

// TestWatchStartsOverWhenGone starts the watch from a resourceVersion that
// etcd has compacted away: the API server answers 410 Gone, and the source
// starts over from a GET and still delivers new versions.
func TestWatchStartsOverWhenGone(t *testing.T) {
	f := newFixture(t, "gone")
	f.publish() // a revision of the map that the compaction removes
	if err := env.CompactEtcd(context.Background()); err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 10)
	src, err := kubemap.New(f.sa, f.ns, f.name, kubemap.WithLogger(slog.New(&errHandler{msg: "partition map watch ended", errs: ended})))
	if err != nil {
		t.Fatal(err)
	}
	w, err := mapwatch.Open(context.Background(), src, nil)
	if err != nil {
		t.Fatal(err)
	}
	src.SetResourceVersion("1")
	installed := make(chan int64, 10)
	w.Subscribe(func(p *partmap.Placement) error { installed <- p.Version(); return nil })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx, time.Hour) }()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case err := <-ended:
		if !apierrors.IsGone(err) && !apierrors.IsResourceExpired(err) {
			t.Fatalf("watch from resourceVersion 1 ended with %v, want 410 Gone", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the watch from resourceVersion 1 did not end within 30s")
	}
	await(t, installed, f.publish())
}

// TestWatchResumesWhenTheMapPredatesHistory is an API server that keeps
// no history as old as the map's last publication, as one that restarted
// since: the watch from the map's own resourceVersion ends with 410 Gone,
// and the next one, started without a resourceVersion, stays up (it does
// not start from the resourceVersion of a GET, which is as old).
func TestWatchResumesWhenTheMapPredatesHistory(t *testing.T) {
	f := newFixture(t, "predates")
	ctx := context.Background()
	var cm corev1.ConfigMap
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: f.name}, &cm); err != nil {
		t.Fatal(err)
	}
	// Another object's write moves the history past the map's revision.
	other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: f.ns}}
	if err := env.Client.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	if err := env.CompactEtcd(ctx); err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 100)
	log := slog.New(&errHandler{msg: "partition map watch ended", errs: ended})
	src, err := kubemap.New(f.sa, f.ns, f.name, kubemap.WithLogger(log))
	if err != nil {
		t.Fatal(err)
	}
	w, err := mapwatch.Open(ctx, src, nil)
	if err != nil {
		t.Fatal(err)
	}
	src.SetResourceVersion(cm.ResourceVersion)
	installed := make(chan int64, 10)
	w.Subscribe(func(p *partmap.Placement) error { installed <- p.Version(); return nil })
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); w.Run(runCtx, time.Hour) }()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case err := <-ended:
		if !apierrors.IsGone(err) && !apierrors.IsResourceExpired(err) {
			t.Fatalf("watch from the map's resourceVersion %s ended with %v, want 410 Gone", cm.ResourceVersion, err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the watch from the map's resourceVersion %s did not end within 30s", cm.ResourceVersion)
	}
	// The next watch stays up: a source that went back to the map's
	// resourceVersion would end a watch every backoff (at most 2 s).
	select {
	case err := <-ended:
		t.Fatalf("the watch after 410 Gone ended too: %v", err)
	case <-time.After(5 * time.Second):
	}
	await(t, installed, f.publish())
}

// errHandler is a slog handler that sends the err attribute of every
// record with msg.
type errHandler struct {
	msg  string
	errs chan<- error
}

func (h *errHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *errHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message != h.msg {
		return nil
	}
	r.Attrs(func(a slog.Attr) bool {
		if err, ok := a.Value.Any().(error); ok && a.Key == "err" {
			select {
			case h.errs <- err:
			default:
			}
		}
		return true
	})
	return nil
}
func (h *errHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *errHandler) WithGroup(string) slog.Handler      { return h }

// TestLeastPrivilege checks that the data-plane Role allows get and watch
// of the map's ConfigMap, and nothing else.
func TestLeastPrivilege(t *testing.T) {
	f := newFixture(t, "rbac")
	cs, err := kubernetes.NewForConfig(f.sa)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cms := cs.CoreV1().ConfigMaps(f.ns)
	other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: f.ns}}
	if err := env.Client.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Get(ctx, f.name, metav1.GetOptions{}); err != nil {
		t.Fatalf("get of the map: %v", err)
	}
	tests := []struct {
		name string
		do   func() error
	}{
		{"list", func() error { _, err := cms.List(ctx, metav1.ListOptions{}); return err }},
		{"watch without a name", func() error { _, err := cms.Watch(ctx, metav1.ListOptions{}); return err }},
		{"get another ConfigMap", func() error { _, err := cms.Get(ctx, "other", metav1.GetOptions{}); return err }},
		{"update", func() error { _, err := cms.Update(ctx, f.configMap(f.m), metav1.UpdateOptions{}); return err }},
		{"delete", func() error { return cms.Delete(ctx, f.name, metav1.DeleteOptions{}) }},
		{"get in another namespace", func() error {
			_, err := cs.CoreV1().ConfigMaps("default").Get(ctx, f.name, metav1.GetOptions{})
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.do(); !apierrors.IsForbidden(err) {
				t.Fatalf("got %v, want Forbidden", err)
			}
		})
	}
}

// TestUnreachableAPIServer cuts the connection to the API server: reads
// fail, observe nothing (a node's lease runs out) and keep the current map.
func TestUnreachableAPIServer(t *testing.T) {
	f := newFixture(t, "unreachable")
	u, err := url.Parse(f.sa.Host)
	if err != nil {
		t.Fatal(err)
	}
	p := newProxy(t, u.Host)
	cfg := rest.CopyConfig(f.sa)
	cfg.Host = "https://" + p.addr()
	cfg.ServerName = "localhost" // the API server's certificate names localhost and 127.0.0.1
	w, installed := f.watcher(cfg)
	var mu sync.Mutex // guards reads
	var reads []time.Time
	w.OnRead(func(at time.Time, _ int64) { mu.Lock(); reads = append(reads, at); mu.Unlock() })

	before := time.Now()
	if _, err := w.Reload(); err != nil {
		t.Fatalf("Reload through the proxy: %v", err)
	}
	// The watch's own notifications may trigger reads too: count only the
	// reads that started after a point in time.
	startedSince := func(at time.Time) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, r := range reads {
			if !r.Before(at) {
				n++
			}
		}
		return n
	}
	if startedSince(before) == 0 {
		t.Fatalf("read observations %v, want one at or after %v", reads, before)
	}

	p.cut()
	cutAt := time.Now()
	v := f.publish()
	if _, err := w.Reload(); err == nil {
		t.Fatal("Reload succeeded with the API server unreachable")
	}
	if n := startedSince(cutAt); n != 0 {
		t.Fatalf("%d failed reads were observed: %v", n, reads)
	}
	if got := w.Current().Version(); got != 1 {
		t.Fatalf("current version %d after failed reads, want 1 kept", got)
	}
	select {
	case got := <-installed:
		t.Fatalf("version %d installed while the API server was unreachable", got)
	default:
	}

	p.restore()
	await(t, installed, v) // the watch reconnects and triggers a read
}

// signalHandler is a slog handler that signals on every record with msg.
type signalHandler struct {
	msg string
	ch  chan<- struct{}
}

func (h *signalHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *signalHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		select {
		case h.ch <- struct{}{}:
		default:
		}
	}
	return nil
}
func (h *signalHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *signalHandler) WithGroup(string) slog.Handler      { return h }

// proxy forwards TCP connections on a loopback port to the API server,
// until cut closes them all and refuses new ones.
type proxy struct {
	t      *testing.T
	target string
	ln     net.Listener

	mu    sync.Mutex // guards conns and down
	conns []net.Conn
	down  bool
}

func newProxy(t *testing.T, target string) *proxy {
	var lc net.ListenConfig
	ln, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{t: t, target: target, ln: ln}
	t.Cleanup(func() { _ = ln.Close(); p.cut() })
	go p.serve()
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			continue
		}
		p.mu.Lock()
		down := p.down
		p.mu.Unlock()
		if down {
			_ = c.Close()
			continue
		}
		var d net.Dialer
		u, err := d.DialContext(context.Background(), "tcp", p.target)
		if err != nil {
			p.t.Logf("proxy: %v", err)
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, u)
		p.mu.Unlock()
		go func() { _, _ = io.Copy(u, c); _ = u.Close() }()
		go func() { _, _ = io.Copy(c, u); _ = c.Close() }()
	}
}

func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}

func (p *proxy) restore() {
	p.mu.Lock()
	p.down = false
	p.mu.Unlock()
}

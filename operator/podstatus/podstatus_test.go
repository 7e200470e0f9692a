package podstatus_test

import (
	"context"
	"net"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/distcache/distcache/dataplane/metrics"
	"github.com/distcache/distcache/operator/podstatus"
)

// process is a data-plane process's metrics server (the real one) whose
// applied map version the test sets.
type process struct {
	version atomic.Int64
	srv     *metrics.Server
}

// startProcess serves on ip:port (port 0: any), as every pod does on its own IP.
func startProcess(t *testing.T, ip string, port int, version int64) *process {
	t.Helper()
	p := &process{}
	p.version.Store(version)
	srv, err := metrics.Listen(net.JoinHostPort(ip, strconv.Itoa(port)), prometheus.NewRegistry(), nil,
		metrics.WithStatus(func() metrics.Status { return metrics.Status{MapVersion: p.version.Load()} }))
	if err != nil {
		t.Fatal(err)
	}
	p.srv = srv
	t.Cleanup(p.stop)
	return p
}

func (p *process) stop() { _ = p.srv.Close(context.Background()) }

type podOption func(*corev1.Pod)

func withIP(ip string) podOption { return func(p *corev1.Pod) { p.Status.PodIP = ip } }

func withRestarts(n int32) podOption {
	return func(p *corev1.Pod) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "distcache", RestartCount: n}}
	}
}

func pod(name string, opts ...podOption) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)}}
	for _, o := range opts {
		o(p)
	}
	return p
}

func TestApplied(t *testing.T) {
	a := startProcess(t, "127.0.0.2", 0, 3)
	_, portText, _ := net.SplitHostPort(a.srv.Addr())
	port, _ := strconv.Atoi(portText)
	b := startProcess(t, "127.0.0.3", port, 2)
	p := &podstatus.Prober{Port: port}
	ctx := t.Context()

	pods := []*corev1.Pod{pod("a", withIP("127.0.0.2")), pod("b", withIP("127.0.0.3")), pod("pending"), pod("silent", withIP("127.0.0.4"))}
	got := p.Applied(ctx, "ns/shop", pods, 3)
	want := map[string]bool{"a": true, "b": false, "silent": false}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("version 3: %s applied %v, want %v (all: %v)", name, got[name], w, got)
		}
	}
	if _, asked := got["pending"]; asked {
		t.Errorf("a pod without an IP was reported: %v", got)
	}

	// b installs version 3; a is gone but answered 3 before: not asked again.
	b.version.Store(3)
	a.stop()
	if got := p.Applied(ctx, "ns/shop", pods, 3); !got["a"] || !got["b"] {
		t.Errorf("after b installed v3: %v, want a (remembered) and b applied", got)
	}
	// A newer version, or a restarted container, is asked again.
	if got := p.Applied(ctx, "ns/shop", pods, 4); got["a"] || got["b"] {
		t.Errorf("version 4: %v, want neither", got)
	}
	restarted := []*corev1.Pod{pod("a", withIP("127.0.0.2"), withRestarts(1))}
	if got := p.Applied(ctx, "ns/shop", restarted, 3); got["a"] {
		t.Errorf("restarted a, which no longer answers: %v, want not applied", got)
	}
	// A forgotten cluster starts over.
	p.Forget("ns/shop")
	if got := p.Applied(ctx, "ns/shop", pods[:1], 3); got["a"] {
		t.Errorf("after Forget: %v, want a asked again (and silent)", got)
	}
}

package gateway

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// BenchmarkObserve measures what counting one command's reply costs
// (Server.observe: the totals, /metrics' series, INFO commandstats) from
// parallel goroutines, as the event loops count theirs.
func BenchmarkObserve(b *testing.B) {
	m, err := newMetrics(prometheus.NewRegistry(), func() float64 { return 0 })
	if err != nil {
		b.Fatal(err)
	}
	s := &Server{metrics: m}
	get := lookup([]byte("get"))
	reply := []byte("$5\r\nvalue\r\n")
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			s.observe(get, reply, 3*time.Microsecond)
		}
	})
}

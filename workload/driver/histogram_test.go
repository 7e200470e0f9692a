package driver

import (
	"testing"
	"time"
)

func TestHistogramBuckets(t *testing.T) {
	// Every value lands in a bucket whose upper bound is at least the value
	// and at most 1/subBuckets above it; buckets are contiguous.
	values := []uint64{0, 1, 63, 64, 127, 128, 129, 255, 256, 1000, 4095, 4096, 1e6, 1e9, 1 << 36}
	for _, v := range values {
		i := bucket(v)
		if up := upper(i); up < v || float64(up-v) > float64(v)/subBuckets {
			t.Errorf("value %d: bucket %d up to %d", v, i, up)
		}
		if i > 0 && upper(i-1) >= v {
			t.Errorf("value %d: bucket %d, but bucket %d ends at %d", v, i, i-1, upper(i-1))
		}
	}
	for i := 1; i < histBuckets; i++ {
		if bucket(upper(i-1)+1) != i {
			t.Fatalf("bucket %d does not start right after bucket %d (%d)", i, i-1, upper(i-1))
		}
	}
	if got := bucket(^uint64(0)); got != histBuckets-1 {
		t.Errorf("the largest value lands in bucket %d, want the last", got)
	}
}

func TestHistogramQuantiles(t *testing.T) {
	tests := []struct {
		name   string
		record []time.Duration
		q      float64
		want   time.Duration
	}{
		{name: "empty", q: 0.5, want: 0},
		{name: "one value", record: []time.Duration{5 * time.Microsecond}, q: 0.99, want: 6 * time.Microsecond},
		{name: "negative counts as zero", record: []time.Duration{-time.Second}, q: 0.5, want: time.Microsecond},
		{name: "median of three", record: []time.Duration{time.Microsecond, 10 * time.Microsecond, 100 * time.Microsecond},
			q: 0.5, want: 11 * time.Microsecond},
		{name: "p99 of a slow tail", record: append(repeat(time.Microsecond, 98), 2*time.Second, 2*time.Second),
			q: 0.99, want: time.Duration(upper(bucket(2e6))+1) * time.Microsecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Split over two histograms and merged, as the workers' are.
			var a, b histogram
			for i, d := range tt.record {
				if i%2 == 0 {
					a.record(d)
				} else {
					b.record(d)
				}
			}
			a.merge(&b)
			if a.n != uint64(len(tt.record)) {
				t.Fatalf("%d values counted, want %d", a.n, len(tt.record))
			}
			if got := a.quantile(tt.q); got != tt.want {
				t.Errorf("quantile %v = %v, want %v", tt.q, got, tt.want)
			}
		})
	}
}

func repeat(d time.Duration, n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = d
	}
	return out
}

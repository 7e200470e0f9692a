package kubemap_test

import (
	"testing"

	"github.com/distcache/distcache/dataplane/kubemap"
)

func TestParseRef(t *testing.T) {
	tests := []struct {
		ref      string
		ns, name string
		ok       bool
	}{
		{"shop/shop-partition-map", "shop", "shop-partition-map", true},
		{"shop", "", "", false},
		{"/name", "", "", false},
		{"ns/", "", "", false},
		{"a/b/c", "", "", false},
		{"", "", "", false},
	}
	for _, tt := range tests {
		ns, name, err := kubemap.ParseRef(tt.ref)
		if (err == nil) != tt.ok || ns != tt.ns || name != tt.name {
			t.Errorf("ParseRef(%q) = %q, %q, %v; want %q, %q, ok %v", tt.ref, ns, name, err, tt.ns, tt.name, tt.ok)
		}
	}
}

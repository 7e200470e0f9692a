package freeport

import "testing"

func TestPortsAreDistinct(t *testing.T) {
	tcp, udp, err := Ports("127.0.0.1", 20, 20)
	if err != nil {
		t.Fatal(err)
	}
	for _, ports := range [][]int{tcp, udp} {
		seen := map[int]bool{}
		for _, p := range ports {
			if p <= 0 || seen[p] {
				t.Fatalf("ports %v: %d repeated or invalid", ports, p)
			}
			seen[p] = true
		}
	}
	if len(tcp) != 20 || len(udp) != 20 {
		t.Fatalf("got %d TCP and %d UDP ports, want 20 each", len(tcp), len(udp))
	}
}

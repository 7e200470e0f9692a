package freeport

import (
	"net"
	"testing"
)

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

// TestPortsAvoidTheEphemeralRange: on this host's range, every port
// handed out is one no outgoing connection can take.
func TestPortsAvoidTheEphemeralRange(t *testing.T) {
	eph := ephemeralRange()
	w := window(eph)
	if w == (portRange{}) {
		t.Skipf("ephemeral ports %d-%d leave no room", eph.lo, eph.hi)
	}
	tcp, udp, err := Ports("127.0.0.1", 10, 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range append(tcp, udp...) {
		if p >= eph.lo && p <= eph.hi || p < w.lo || p > w.hi {
			t.Errorf("port %d: want one of %d-%d, outside the ephemeral %d-%d", p, w.lo, w.hi, eph.lo, eph.hi)
		}
	}
}

func TestWindow(t *testing.T) {
	for _, tc := range []struct {
		eph, want portRange
	}{
		{portRange{32768, 60999}, portRange{10000, 32767}}, // Linux's default
		{portRange{49152, 65535}, portRange{10000, 49151}}, // IANA's
		{portRange{10000, 20000}, portRange{20001, 65535}}, // room above only
		{portRange{1024, 65000}, portRange{}},              // no room: the kernel chooses
	} {
		if got := window(tc.eph); got != tc.want {
			t.Errorf("window(%v) = %v, want %v", tc.eph, got, tc.want)
		}
	}
}

// TestBindSkipsATakenPort: a port bound by another socket is passed over
// for the next one.
func TestBindSkipsATakenPort(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	port := taken.Addr().(*net.TCPAddr).Port
	c, got, err := bind("127.0.0.1", "tcp", portRange{port, port + 100}, port)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got <= port || got > port+100 {
		t.Fatalf("bind gave port %d, want one of %d-%d (port %d is taken)", got, port+1, port+100, port)
	}
	if _, _, err := bind("127.0.0.1", "tcp", portRange{port, port}, port); err == nil {
		t.Fatalf("bind of the taken port %d alone succeeded", port)
	}
}

// TestBlock: the ports of a block are consecutive, free, and outside the
// ephemeral range.
func TestBlock(t *testing.T) {
	for _, network := range []string{"tcp", "udp"} {
		base, err := Block("127.0.0.1", network, 8)
		if err != nil {
			t.Fatal(err)
		}
		if eph := ephemeralRange(); window(eph) != (portRange{}) && base+7 >= eph.lo && base <= eph.hi {
			t.Errorf("%s block %d-%d overlaps the ephemeral ports %d-%d", network, base, base+7, eph.lo, eph.hi)
		}
		for port := base; port < base+8; port++ {
			c, _, err := bind("127.0.0.1", network, portRange{port, port}, port)
			if err != nil {
				t.Fatalf("%s port %d of the block %d-%d: %v", network, port, base, base+7, err)
			}
			_ = c.Close()
		}
	}
}

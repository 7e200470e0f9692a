package pipelines_test

import (
	"bytes"
	"errors"
	"net/netip"
	"testing"

	pipelines "github.com/distcache/distcache/stratum_pipelines"
)

// FuzzParseFrame reads arbitrary packet-out frames, as the software
// switch's P4Runtime server hands them over. A frame read is written
// back by AppendFrame to one that reads the same; a frame refused for
// its headers says so with ErrFrame.
func FuzzParseFrame(f *testing.F) {
	src, dst := netip.MustParseAddrPort("198.18.0.1:7000"), netip.MustParseAddrPort("198.18.0.2:7100")
	for _, payload := range [][]byte{nil, []byte("x"), bytes.Repeat([]byte{0xdc}, 1200)} {
		frame := pipelines.AppendFrame(nil, src, dst, payload)
		f.Add(frame)
		f.Add(frame[:len(frame)-1])
		f.Add(frame[:20])
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		s, d, payload, err := pipelines.ParseFrame(frame)
		if err != nil {
			if s.IsValid() || d.IsValid() || payload != nil {
				t.Fatalf("refused frame: %v %v %q", s, d, payload)
			}
			return
		}
		if !s.Addr().Is4() || !d.Addr().Is4() || len(payload) > len(frame) {
			t.Fatalf("frame read as %v → %v with %d bytes of %d", s, d, len(payload), len(frame))
		}
		again := pipelines.AppendFrame(nil, s, d, payload)
		s2, d2, p2, err := pipelines.ParseFrame(again)
		if err != nil || s2 != s || d2 != d || !bytes.Equal(p2, payload) {
			t.Fatalf("round trip: %v → %v %q, then %v → %v %q (%v)", s, d, payload, s2, d2, p2, err)
		}
	})
}

// TestParseFrameRefusesOtherFrames checks that non-IPv4 and non-UDP
// frames are refused with ErrFrame.
func TestParseFrameRefusesOtherFrames(t *testing.T) {
	frame := pipelines.AppendFrame(nil, netip.MustParseAddrPort("198.18.0.1:1"), netip.MustParseAddrPort("198.18.0.2:2"), []byte("p"))
	for name, mutate := range map[string]func([]byte){
		"ARP":  func(b []byte) { b[12], b[13] = 0x08, 0x06 },
		"TCP":  func(b []byte) { b[14+9] = 6 },
		"IPv6": func(b []byte) { b[14] = 0x65 },
	} {
		b := bytes.Clone(frame)
		mutate(b)
		if _, _, _, err := pipelines.ParseFrame(b); !errors.Is(err, pipelines.ErrFrame) {
			t.Errorf("%s: %v, want ErrFrame", name, err)
		}
	}
}

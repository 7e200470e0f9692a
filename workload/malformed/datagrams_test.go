package malformed

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/dataplane/wireauth"
)

// TestDatagrams makes many datagrams of every kind, with and without a
// key: each fits a UDP payload, random and oversize ones are no valid
// message, and a flipped-then-signed one carries a MAC the key accepts.
func TestDatagrams(t *testing.T) {
	ring, err := wireauth.New(bytes.Repeat([]byte{7}, wireauth.MinKeyLen), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, signer := range []Signer{nil, ring} {
		d := &datagrams{rng: rand.New(rand.NewPCG(1, 2)), signer: signer}
		for i := range 6000 {
			k := Kind(i % int(kinds))
			b := d.next(k)
			if len(b) > MaxUDPPayload {
				t.Fatalf("%s: %d bytes", k, len(b))
			}
			switch k {
			case Oversize:
				if _, err := wire.Parse(b); err == nil {
					t.Fatalf("oversize datagram parses: %q", b[:wire.HeaderLen])
				}
			case FlippedSigned:
				if data, tag, ok := wire.Signed(b); ok && signer != nil && !ring.Verify(data, tag) {
					t.Fatalf("flipped, then signed: the MAC fails")
				}
			}
		}
	}
}

// TestRESPAndHTTP checks the connection inputs' bounds: every kind is
// made, and no control API path names the shutdown.
func TestRESPAndHTTP(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for k := range respKinds {
		if b := resp(rng, k); len(b) == 0 || len(b) > 2*overCommand {
			t.Fatalf("%s: %d bytes", k, len(b))
		}
	}
	for range 1000 {
		_, path, _ := httpRequest(rng, true)
		if bytes.Contains([]byte(path), []byte("shutdown")) {
			t.Fatalf("control path %q", path)
		}
	}
}

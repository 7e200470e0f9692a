package fault

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/placement/hashing"
	"github.com/distcache/distcache/placement/partmap"
	"github.com/distcache/distcache/standalone/manifest"
	pipelines "github.com/distcache/distcache/stratum_pipelines"
)

// storageLeaf is a storage-leaf switch of a cluster file: its member name
// and where its P4Runtime server listens (in the cluster's namespace).
type storageLeaf struct {
	member, p4runtime string
	deviceID          uint64
}

// storageLeafSwitches lays out the cluster file as `distcache up` does and
// returns its storage-leaf switches in rack order.
func storageLeafSwitches(t *testing.T, file string) []storageLeaf {
	t.Helper()
	v, err := manifest.NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	b, err := manifest.Load(t.Context(), v, file)
	if err != nil {
		t.Fatal(err)
	}
	c, err := b.Layout()
	if err != nil {
		t.Fatal(err)
	}
	var out []storageLeaf
	for _, sm := range c.SwitchMembers() {
		if sm.Switch.Role == v1alpha1.RoleStorageLeaf {
			out = append(out, storageLeaf{member: sm.Member, p4runtime: sm.Switch.P4RuntimeAddress, deviceID: uint64(sm.Switch.DeviceID)})
		}
	}
	if len(out) < 2 {
		t.Fatalf("%s has %d storage-leaf switches, want one per rack of at least 2", file, len(out))
	}
	return out
}

// digestOf is key's digest as a switch's cache_lookup table matches it
// (a P4Runtime bytestring: no leading zero bytes).
func digestOf(key string) string {
	d := hashing.DigestOfString(key)
	return string(pipelines.StripZeros(d[:]))
}

// cachedDigests reads sw's cache_lookup table over P4Runtime, from inside
// the cluster's namespace (any client may read): the digests of the keys
// it holds a slot for. It neither arbitrates nor writes, so it leaves the
// fabric controller's session alone.
func cachedDigests(ctx context.Context, c *cluster, sw storageLeaf) (map[string]bool, error) {
	info, err := pipelines.ProgramP4Info("v1model/cache_switch.p4")
	if err != nil {
		return nil, err
	}
	table, ok := pipelines.ObjectID(info, "cache_lookup")
	if !ok {
		return nil, errors.New("the cache switch program has no cache_lookup table")
	}
	cc, err := grpc.NewClient("passthrough:///"+sw.p4runtime, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			var conn net.Conn
			err := c.ns.Do(func() error {
				var d net.Dialer
				var err error
				conn, err = d.DialContext(ctx, "tcp", addr)
				return err
			})
			return conn, err
		}))
	if err != nil {
		return nil, fmt.Errorf("cannot reach %s: %w", sw.member, err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	stream, err := p4v1.NewP4RuntimeClient(cc).Read(ctx, &p4v1.ReadRequest{DeviceId: sw.deviceID,
		Entities: []*p4v1.Entity{{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{TableId: table}}}}})
	if err != nil {
		return nil, fmt.Errorf("cannot read the slots of %s: %w", sw.member, err)
	}
	held := map[string]bool{}
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return held, nil
		}
		if err != nil {
			return nil, fmt.Errorf("cannot read the slots of %s: %w", sw.member, err)
		}
		for _, e := range resp.Entities {
			for _, m := range e.GetTableEntry().GetMatch() {
				held[string(pipelines.StripZeros(m.GetExact().GetValue()))] = true
			}
		}
	}
}

// readPlacement compiles the cluster's published map.
func readPlacement(t *testing.T, c *cluster) *partmap.Placement {
	t.Helper()
	p, err := publishedPlacement(c)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func publishedPlacement(c *cluster) (*partmap.Placement, error) {
	b, err := os.ReadFile(filepath.Join(c.runDir, "map.json"))
	if err != nil {
		return nil, fmt.Errorf("cannot read the cluster's map: %w", err)
	}
	m, err := partmap.Decode(b)
	if err != nil {
		return nil, err
	}
	return partmap.Compile(m)
}

// layerIndex is the index of the named layer in m.
func layerIndex(t *testing.T, m *partmap.Map, name string) int {
	t.Helper()
	i := slices.IndexFunc(m.Layers, func(l partmap.Layer) bool { return l.Name == name })
	if i < 0 {
		t.Fatalf("the map has no layer %s", name)
	}
	return i
}

// rackOwnedBy reports whether the published map places every one of keys
// on member in layer.
func rackOwnedBy(t *testing.T, c *cluster, layer int, keys []string, member string) (bool, error) {
	t.Helper()
	p, err := publishedPlacement(c)
	if err != nil {
		return false, err
	}
	var wrong []string
	for _, key := range keys {
		o := p.Owner(layer, key)
		if o < 0 || p.Map().Layers[layer].Members[o].Name != member {
			wrong = append(wrong, key)
		}
	}
	if len(wrong) > 0 {
		return false, fmt.Errorf("map version %d places %s elsewhere than on %s", p.Version(), strings.Join(wrong, ", "), member)
	}
	return true, nil
}

// reportText is r as the report's text shows it.
func reportText(r result) string {
	var b strings.Builder
	rep := report{}
	rep.add(r)
	rep.text(&b)
	return b.String()
}

package pipelines

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	"google.golang.org/protobuf/proto"
)

// find returns the object of objs named name; the test fails without one.
func find[T withPreamble](t *testing.T, objs []T, name string) T {
	t.Helper()
	for _, o := range objs {
		if o.GetPreamble().GetName() == name {
			return o
		}
	}
	t.Fatalf("no %s in the P4Info", name)
	var zero T
	return zero
}

// TestCompareP4Info compares edited copies of the v1model cache switch's
// P4Info, as a compiler could write them, with the kept one: what the
// controller relies on must not change; the digest's id and objects the
// controller never names may.
func TestCompareP4Info(t *testing.T) {
	kept, err := ProgramP4Info("v1model/cache_switch.p4")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		edit func(t *testing.T, info *p4configv1.P4Info)
		want []string
	}{
		{"identical", func(*testing.T, *p4configv1.P4Info) {}, nil},
		{"annotations and aliases differ", func(t *testing.T, info *p4configv1.P4Info) {
			tb := find(t, info.Tables, "cache_lookup")
			tb.Preamble.Alias, tb.Preamble.Annotations = "DistCacheIngress.cache.cache_lookup", []string{"@name(\".cache_lookup\")"}
		}, nil},
		{"digest id derived by p4c", func(t *testing.T, info *p4configv1.P4Info) {
			find(t, info.Digests, "hot_key_t").Preamble.Id = 0x17000000 | 402183
		}, nil},
		{"extra table the controller never names", func(_ *testing.T, info *p4configv1.P4Info) {
			info.Tables = append(info.Tables, &p4configv1.Table{Preamble: &p4configv1.Preamble{Id: 0x02000099, Name: "acl"}, Size: 16})
		}, nil},
		{"renamed table", func(t *testing.T, info *p4configv1.P4Info) {
			find(t, info.Tables, "cache_lookup").Preamble.Name = "lookup"
		}, []string{"table cache_lookup (id 0x2000004) missing"}},
		{"changed table id", func(t *testing.T, info *p4configv1.P4Info) {
			find(t, info.Tables, "cache_lookup").Preamble.Id = 0x02000009
		}, []string{"table cache_lookup: id 0x2000009, want 0x2000004"}},
		{"changed match field width", func(t *testing.T, info *p4configv1.P4Info) {
			find(t, info.Tables, "cache_lookup").MatchFields[0].Bitwidth = 64
		}, []string{"table cache_lookup: match field 1 is key_digest EXACT bit<64>, want key_digest EXACT bit<128>"}},
		{"changed table size", func(t *testing.T, info *p4configv1.P4Info) {
			find(t, info.Tables, "cache_lookup").Size = 4096
		}, []string{"table cache_lookup: size 4096, want 65536"}},
		{"changed register width", func(t *testing.T, info *p4configv1.P4Info) {
			find(t, info.Registers, "lease_until").TypeSpec = bitstring(64)
		}, []string{"register lease_until: cells of 64 bits, want 48"}},
		{"missing register", func(_ *testing.T, info *p4configv1.P4Info) {
			info.Registers = slices.DeleteFunc(info.Registers, func(r *p4configv1.Register) bool { return r.Preamble.Name == "valid" })
		}, []string{"register valid (id 0x16000003) missing"}},
		{"changed action parameter", func(t *testing.T, info *p4configv1.P4Info) {
			find(t, info.Actions, "cached").Params[0].Bitwidth = 16
		}, []string{"action cached: parameter 1 is slot bit<16>, want slot bit<32>"}},
		{"changed counter unit", func(t *testing.T, info *p4configv1.P4Info) {
			find(t, info.Counters, "datagrams").Spec.Unit = p4configv1.CounterSpec_BYTES
		}, []string{"counter datagrams: unit BYTES, want BOTH"}},
		{"changed digest member", func(_ *testing.T, info *p4configv1.P4Info) {
			info.TypeInfo.Structs["hot_key_t"].Members[0].TypeSpec = bitstring(64)
		}, []string{"digest hot_key_t: member 1 is key_digest bit<64>, want key_digest bit<128>"}},
		{"changed packet-out metadata", func(t *testing.T, info *p4configv1.P4Info) {
			find(t, info.ControllerPacketMetadata, "packet_out").Metadata[0].Bitwidth = 32
		}, []string{"controller header packet_out: metadata 1 is egress_port bit<32>, want egress_port bit<9>"}},
		{"another architecture", func(_ *testing.T, info *p4configv1.P4Info) {
			info.PkgInfo.Arch = "tna"
		}, []string{`architecture "tna", want "v1model"`}},
		{"extra table taking a used id", func(_ *testing.T, info *p4configv1.P4Info) {
			info.Tables = append(info.Tables, &p4configv1.Table{Preamble: &p4configv1.Preamble{Id: 0x02000004, Name: "acl"}})
		}, []string{"id 0x2000004 given to 2 objects: [cache_lookup acl]"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := proto.Clone(kept).(*p4configv1.P4Info)
			tc.edit(t, got)
			if diff := cmp.Diff(tc.want, CompareP4Info(kept, got)); diff != "" {
				t.Errorf("differences (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCompareP4InfoAcrossArchitectures: the TNA build of the cache switch
// is no v1model build: the comparison names the architecture and the
// registers Tofino splits or widens.
func TestCompareP4InfoAcrossArchitectures(t *testing.T) {
	v1model, err := ProgramP4Info("v1model/cache_switch.p4")
	if err != nil {
		t.Fatal(err)
	}
	tna, err := ProgramP4Info("tna/cache_switch.p4")
	if err != nil {
		t.Fatal(err)
	}
	if d := CompareP4Info(tna, tna); d != nil {
		t.Errorf("the TNA P4Info differs from itself: %v", d)
	}
	d := CompareP4Info(v1model, tna)
	for _, want := range []string{`architecture "tna", want "v1model"`, "register lease_until: cells of 64 bits, want 48", "register value_words (id 0x16000001) missing"} {
		if !slices.Contains(d, want) {
			t.Errorf("differences %q lack %q", d, want)
		}
	}
}

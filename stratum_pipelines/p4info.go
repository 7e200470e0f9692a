package pipelines

import (
	"fmt"
	"io/fs"
	"sort"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	"google.golang.org/protobuf/encoding/prototext"
)

// DigestIDBase is the P4Runtime id of a program's first digest, the next
// ones following in order of first use. p4c takes no @id for a digest and
// derives one from the struct's name: on a workstation, set these from
// the compiler's P4Info (README.md).
const DigestIDBase = 0x17000001

var matchTypes = map[string]p4configv1.MatchField_MatchType{
	"exact": p4configv1.MatchField_EXACT, "lpm": p4configv1.MatchField_LPM,
	"ternary": p4configv1.MatchField_TERNARY, "range": p4configv1.MatchField_RANGE,
	"optional": p4configv1.MatchField_OPTIONAL,
}

var counterUnits = map[string]p4configv1.CounterSpec_Unit{
	"packets": p4configv1.CounterSpec_PACKETS, "bytes": p4configv1.CounterSpec_BYTES,
	"packets_and_bytes": p4configv1.CounterSpec_BOTH,
}

// P4Info is the P4Info a compiler derives from the declarations for arch
// ("v1model", "tna"): what the controller and the switch agree on. Every
// object is listed in order of its id.
func (d Decls) P4Info(arch string) (*p4configv1.P4Info, error) {
	info := &p4configv1.P4Info{PkgInfo: &p4configv1.PkgInfo{Arch: arch}}
	actionIDs := map[string]uint32{}
	for _, a := range d.Actions {
		if _, ok := actionIDs[a.Name]; ok {
			return nil, fmt.Errorf("cannot derive P4Info: action %s declared twice", a.Name)
		}
		actionIDs[a.Name] = a.ID
		pa := &p4configv1.Action{Preamble: preamble(a.ID, a.Name)}
		for i, p := range a.Params {
			pa.Params = append(pa.Params, &p4configv1.Action_Param{Id: uint32(i + 1), Name: p.Name, Bitwidth: int32(p.Bits)})
		}
		info.Actions = append(info.Actions, pa)
	}
	for _, t := range d.Tables {
		pt := &p4configv1.Table{Preamble: preamble(t.ID, t.Name), Size: int64(t.Size)}
		for _, k := range t.Keys {
			pt.MatchFields = append(pt.MatchFields, &p4configv1.MatchField{
				Id: k.ID, Name: k.Name, Bitwidth: int32(k.Bits),
				Match: &p4configv1.MatchField_MatchType_{MatchType: matchTypes[k.Kind]},
			})
		}
		for _, r := range t.Actions {
			id, ok := actionIDs[r.Name]
			if !ok {
				return nil, fmt.Errorf("cannot derive P4Info: table %s names action %s, which has no @id", t.Name, r.Name)
			}
			ref := &p4configv1.ActionRef{Id: id}
			if r.DefaultOnly {
				ref.Scope = p4configv1.ActionRef_DEFAULT_ONLY
				ref.Annotations = []string{"@defaultonly"}
			}
			pt.ActionRefs = append(pt.ActionRefs, ref)
		}
		info.Tables = append(info.Tables, pt)
	}
	for _, r := range d.Registers {
		info.Registers = append(info.Registers, &p4configv1.Register{
			Preamble: preamble(r.ID, r.Name), Size: int32(r.Size), TypeSpec: bitstring(r.Bits),
		})
	}
	for _, c := range d.Counters {
		info.Counters = append(info.Counters, &p4configv1.Counter{
			Preamble: preamble(c.ID, c.Name), Size: int64(c.Size),
			Spec: &p4configv1.CounterSpec{Unit: counterUnits[c.Unit]},
		})
	}
	if err := d.addDigests(info); err != nil {
		return nil, err
	}
	if err := d.addControllerHeaders(info); err != nil {
		return nil, err
	}
	sortByID(info)
	return info, nil
}

func (d Decls) addDigests(info *p4configv1.P4Info) error {
	for i, name := range d.Digests {
		s := d.Structs[name]
		ps := &p4configv1.P4StructTypeSpec{}
		for _, m := range s.Members {
			w, err := d.Width(m.Type)
			if err != nil || m.Stack > 0 {
				return fmt.Errorf("cannot derive P4Info: digest %s member %s is not a bit string", name, m.Name)
			}
			ps.Members = append(ps.Members, &p4configv1.P4StructTypeSpec_Member{Name: m.Name, TypeSpec: bitstring(w)})
		}
		if info.TypeInfo == nil {
			info.TypeInfo = &p4configv1.P4TypeInfo{Structs: map[string]*p4configv1.P4StructTypeSpec{}}
		}
		info.TypeInfo.Structs[name] = ps
		info.Digests = append(info.Digests, &p4configv1.Digest{
			Preamble: preamble(uint32(DigestIDBase+i), name),
			TypeSpec: &p4configv1.P4DataTypeSpec{TypeSpec: &p4configv1.P4DataTypeSpec_Struct{
				Struct: &p4configv1.P4NamedType{Name: name},
			}},
		})
	}
	return nil
}

func (d Decls) addControllerHeaders(info *p4configv1.P4Info) error {
	for _, c := range d.ControllerHeaders {
		h, ok := d.Headers[c.Header]
		if !ok {
			return fmt.Errorf("cannot derive P4Info: controller header %s has no header type %s", c.Name, c.Header)
		}
		pre := preamble(c.ID, c.Name)
		pre.Annotations = []string{fmt.Sprintf("@controller_header(%q)", c.Name)}
		cm := &p4configv1.ControllerPacketMetadata{Preamble: pre}
		for i, f := range h.Fields {
			cm.Metadata = append(cm.Metadata, &p4configv1.ControllerPacketMetadata_Metadata{
				Id: uint32(i + 1), Name: f.Name, Bitwidth: int32(f.Bits),
			})
		}
		info.ControllerPacketMetadata = append(info.ControllerPacketMetadata, cm)
	}
	return nil
}

func preamble(id uint32, name string) *p4configv1.Preamble {
	return &p4configv1.Preamble{Id: id, Name: name, Alias: name}
}

func bitstring(bits int) *p4configv1.P4DataTypeSpec {
	return &p4configv1.P4DataTypeSpec{TypeSpec: &p4configv1.P4DataTypeSpec_Bitstring{
		Bitstring: &p4configv1.P4BitstringLikeTypeSpec{TypeSpec: &p4configv1.P4BitstringLikeTypeSpec_Bit{
			Bit: &p4configv1.P4BitTypeSpec{Bitwidth: int32(bits)},
		}},
	}}
}

func sortByID(info *p4configv1.P4Info) {
	sort.Slice(info.Tables, func(i, j int) bool { return info.Tables[i].Preamble.Id < info.Tables[j].Preamble.Id })
	sort.Slice(info.Actions, func(i, j int) bool { return info.Actions[i].Preamble.Id < info.Actions[j].Preamble.Id })
	sort.Slice(info.Registers, func(i, j int) bool { return info.Registers[i].Preamble.Id < info.Registers[j].Preamble.Id })
	sort.Slice(info.Counters, func(i, j int) bool { return info.Counters[i].Preamble.Id < info.Counters[j].Preamble.Id })
	sort.Slice(info.ControllerPacketMetadata, func(i, j int) bool {
		return info.ControllerPacketMetadata[i].Preamble.Id < info.ControllerPacketMetadata[j].Preamble.Id
	})
}

// ReadP4Info reads the P4Info text file at name in fsys.
func ReadP4Info(fsys fs.FS, name string) (*p4configv1.P4Info, error) {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, fmt.Errorf("cannot read P4Info: %w", err)
	}
	info := &p4configv1.P4Info{}
	if err := prototext.Unmarshal(b, info); err != nil {
		return nil, fmt.Errorf("cannot parse P4Info %s: %w", name, err)
	}
	return info, nil
}

// ProgramP4Info is the P4Info file of one of Programs, from Sources.
func ProgramP4Info(program string) (*p4configv1.P4Info, error) {
	return ReadP4Info(Sources, "p4src/"+P4InfoPath(program))
}

// ObjectID is the P4Runtime id of the table, action, register, counter or
// digest of info named name (names are unique across them in these
// programs).
func ObjectID(info *p4configv1.P4Info, name string) (uint32, bool) {
	var pre []*p4configv1.Preamble
	for _, x := range info.Tables {
		pre = append(pre, x.Preamble)
	}
	for _, x := range info.Actions {
		pre = append(pre, x.Preamble)
	}
	for _, x := range info.Registers {
		pre = append(pre, x.Preamble)
	}
	for _, x := range info.Counters {
		pre = append(pre, x.Preamble)
	}
	for _, x := range info.Digests {
		pre = append(pre, x.Preamble)
	}
	for _, p := range pre {
		if p.Name == name {
			return p.Id, true
		}
	}
	return 0, false
}

// IDRef names an object of a P4Info and where its id goes.
type IDRef struct {
	Dst  *uint32
	Name string
}

// ObjectIDs resolves every ref by name (ObjectID). Its error names the
// first object info lacks.
func ObjectIDs(info *p4configv1.P4Info, refs ...IDRef) error {
	for _, r := range refs {
		v, ok := ObjectID(info, r.Name)
		if !ok {
			return fmt.Errorf("its P4Info has no %s", r.Name)
		}
		*r.Dst = v
	}
	return nil
}

package pipelines

import (
	"fmt"
	"sort"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
)

// CompareP4Info lists how got, the P4Info a compiler wrote for a build of
// one of Programs, differs from want, that program's P4Info kept here
// (ProgramP4Info), in what the controller and the switch must agree on.
// Nil means a controller that programs want can program got.
//
// Every table, action, register, counter, digest and controller header
// of want must be in got under the same name, with:
//
//   - the same id, except a digest's: p4c and bf-p4c derive a digest's
//     id (README.md), and the controller looks the digest up by name;
//   - a table: the same match fields (id, name, width, match kind), the
//     same action references (ids, scopes) and the same size;
//   - an action: the same parameters (id, name, width);
//   - a register: the same width and size; a counter: the same unit and
//     size (the controller indexes cells up to the program's sizes);
//   - a digest: a struct of the same members (names and widths);
//   - a controller header: the same metadata (id, name, width).
//
// The architecture (pkg_info.arch) must be want's when got names one.
// Objects of got that want does not have are accepted — a build may
// carry more than the controller uses, and the controller never names
// them — unless one takes an id that got gives another object.
// Annotations, aliases and documentation are not compared.
func CompareP4Info(want, got *p4configv1.P4Info) []string {
	var d []string
	if w, g := want.GetPkgInfo().GetArch(), got.GetPkgInfo().GetArch(); g != "" && w != g {
		d = append(d, fmt.Sprintf("architecture %q, want %q", g, w))
	}
	d = append(d, compareKind("table", want.GetTables(), got.GetTables(), true, compareTable)...)
	d = append(d, compareKind("action", want.GetActions(), got.GetActions(), true, compareAction)...)
	d = append(d, compareKind("register", want.GetRegisters(), got.GetRegisters(), true, compareRegister)...)
	d = append(d, compareKind("counter", want.GetCounters(), got.GetCounters(), true, compareCounter)...)
	d = append(d, compareKind("digest", want.GetDigests(), got.GetDigests(), false, func(w, g *p4configv1.Digest) []string {
		return compareDigest(want, got, w, g)
	})...)
	d = append(d, compareKind("controller header", want.GetControllerPacketMetadata(), got.GetControllerPacketMetadata(), true, compareControllerHeader)...)
	return append(d, duplicateIDs(got)...)
}

type withPreamble interface {
	GetPreamble() *p4configv1.Preamble
}

// compareKind matches the objects of one kind by name and compares each
// pair with same; sameID says whether their ids must be equal.
func compareKind[T withPreamble](kind string, want, got []T, sameID bool, same func(w, g T) []string) []string {
	byName := map[string]T{}
	for _, g := range got {
		byName[g.GetPreamble().GetName()] = g
	}
	var d []string
	for _, w := range want {
		p := w.GetPreamble()
		g, ok := byName[p.GetName()]
		if !ok {
			d = append(d, fmt.Sprintf("%s %s (id %#x) missing", kind, p.GetName(), p.GetId()))
			continue
		}
		if gid := g.GetPreamble().GetId(); sameID && gid != p.GetId() {
			d = append(d, fmt.Sprintf("%s %s: id %#x, want %#x", kind, p.GetName(), gid, p.GetId()))
		}
		for _, s := range same(w, g) {
			d = append(d, fmt.Sprintf("%s %s: %s", kind, p.GetName(), s))
		}
	}
	return d
}

func compareTable(w, g *p4configv1.Table) []string {
	var d []string
	gotFields := map[uint32]*p4configv1.MatchField{}
	for _, f := range g.GetMatchFields() {
		gotFields[f.GetId()] = f
	}
	for _, f := range w.GetMatchFields() {
		gf, ok := gotFields[f.GetId()]
		delete(gotFields, f.GetId())
		switch {
		case !ok:
			d = append(d, fmt.Sprintf("match field %d (%s) missing", f.GetId(), f.GetName()))
		case gf.GetName() != f.GetName() || gf.GetBitwidth() != f.GetBitwidth() || gf.GetMatchType() != f.GetMatchType():
			d = append(d, fmt.Sprintf("match field %d is %s %s bit<%d>, want %s %s bit<%d>", f.GetId(),
				gf.GetName(), gf.GetMatchType(), gf.GetBitwidth(), f.GetName(), f.GetMatchType(), f.GetBitwidth()))
		}
	}
	for _, id := range sortedKeys(gotFields) {
		d = append(d, fmt.Sprintf("match field %d (%s) unknown", id, gotFields[id].GetName()))
	}
	refs := func(t *p4configv1.Table) map[uint32]p4configv1.ActionRef_Scope {
		m := map[uint32]p4configv1.ActionRef_Scope{}
		for _, r := range t.GetActionRefs() {
			m[r.GetId()] = r.GetScope()
		}
		return m
	}
	wr, gr := refs(w), refs(g)
	for _, id := range sortedKeys(wr) {
		scope, ok := gr[id]
		delete(gr, id)
		switch {
		case !ok:
			d = append(d, fmt.Sprintf("action %#x missing from its actions", id))
		case scope != wr[id]:
			d = append(d, fmt.Sprintf("action %#x has scope %s, want %s", id, scope, wr[id]))
		}
	}
	for _, id := range sortedKeys(gr) {
		d = append(d, fmt.Sprintf("action %#x unknown among its actions", id))
	}
	if g.GetSize() != w.GetSize() {
		d = append(d, fmt.Sprintf("size %d, want %d", g.GetSize(), w.GetSize()))
	}
	return d
}

func compareAction(w, g *p4configv1.Action) []string {
	var d []string
	gotParams := map[uint32]*p4configv1.Action_Param{}
	for _, p := range g.GetParams() {
		gotParams[p.GetId()] = p
	}
	for _, p := range w.GetParams() {
		gp, ok := gotParams[p.GetId()]
		delete(gotParams, p.GetId())
		switch {
		case !ok:
			d = append(d, fmt.Sprintf("parameter %d (%s) missing", p.GetId(), p.GetName()))
		case gp.GetName() != p.GetName() || gp.GetBitwidth() != p.GetBitwidth():
			d = append(d, fmt.Sprintf("parameter %d is %s bit<%d>, want %s bit<%d>", p.GetId(), gp.GetName(), gp.GetBitwidth(), p.GetName(), p.GetBitwidth()))
		}
	}
	for _, id := range sortedKeys(gotParams) {
		d = append(d, fmt.Sprintf("parameter %d (%s) unknown", id, gotParams[id].GetName()))
	}
	return d
}

func compareRegister(w, g *p4configv1.Register) []string {
	var d []string
	if gw, ww := bitWidth(g.GetTypeSpec()), bitWidth(w.GetTypeSpec()); gw != ww {
		d = append(d, fmt.Sprintf("cells of %d bits, want %d", gw, ww))
	}
	if g.GetSize() != w.GetSize() {
		d = append(d, fmt.Sprintf("size %d, want %d", g.GetSize(), w.GetSize()))
	}
	return d
}

func compareCounter(w, g *p4configv1.Counter) []string {
	var d []string
	if gu, wu := g.GetSpec().GetUnit(), w.GetSpec().GetUnit(); gu != wu {
		d = append(d, fmt.Sprintf("unit %s, want %s", gu, wu))
	}
	if g.GetSize() != w.GetSize() {
		d = append(d, fmt.Sprintf("size %d, want %d", g.GetSize(), w.GetSize()))
	}
	return d
}

// compareDigest compares the members of the digests' structs, which the
// P4Infos' type info declares.
func compareDigest(wantInfo, gotInfo *p4configv1.P4Info, w, g *p4configv1.Digest) []string {
	ws := wantInfo.GetTypeInfo().GetStructs()[w.GetTypeSpec().GetStruct().GetName()]
	gs := gotInfo.GetTypeInfo().GetStructs()[g.GetTypeSpec().GetStruct().GetName()]
	if gs == nil {
		return []string{"not a struct the P4Info declares"}
	}
	var d []string
	wm, gm := ws.GetMembers(), gs.GetMembers()
	for i, m := range wm {
		if i >= len(gm) {
			d = append(d, fmt.Sprintf("member %s missing", m.GetName()))
			continue
		}
		if gm[i].GetName() != m.GetName() || bitWidth(gm[i].GetTypeSpec()) != bitWidth(m.GetTypeSpec()) {
			d = append(d, fmt.Sprintf("member %d is %s bit<%d>, want %s bit<%d>", i+1,
				gm[i].GetName(), bitWidth(gm[i].GetTypeSpec()), m.GetName(), bitWidth(m.GetTypeSpec())))
		}
	}
	for _, m := range gm[min(len(wm), len(gm)):] {
		d = append(d, fmt.Sprintf("member %s unknown", m.GetName()))
	}
	return d
}

func compareControllerHeader(w, g *p4configv1.ControllerPacketMetadata) []string {
	var d []string
	gotMeta := map[uint32]*p4configv1.ControllerPacketMetadata_Metadata{}
	for _, m := range g.GetMetadata() {
		gotMeta[m.GetId()] = m
	}
	for _, m := range w.GetMetadata() {
		gm, ok := gotMeta[m.GetId()]
		delete(gotMeta, m.GetId())
		switch {
		case !ok:
			d = append(d, fmt.Sprintf("metadata %d (%s) missing", m.GetId(), m.GetName()))
		case gm.GetName() != m.GetName() || gm.GetBitwidth() != m.GetBitwidth():
			d = append(d, fmt.Sprintf("metadata %d is %s bit<%d>, want %s bit<%d>", m.GetId(), gm.GetName(), gm.GetBitwidth(), m.GetName(), m.GetBitwidth()))
		}
	}
	for _, id := range sortedKeys(gotMeta) {
		d = append(d, fmt.Sprintf("metadata %d (%s) unknown", id, gotMeta[id].GetName()))
	}
	return d
}

// duplicateIDs lists the ids info gives more than one object.
func duplicateIDs(info *p4configv1.P4Info) []string {
	names := map[uint32][]string{}
	add := func(p *p4configv1.Preamble) { names[p.GetId()] = append(names[p.GetId()], p.GetName()) }
	for _, x := range info.GetTables() {
		add(x.GetPreamble())
	}
	for _, x := range info.GetActions() {
		add(x.GetPreamble())
	}
	for _, x := range info.GetRegisters() {
		add(x.GetPreamble())
	}
	for _, x := range info.GetCounters() {
		add(x.GetPreamble())
	}
	for _, x := range info.GetDigests() {
		add(x.GetPreamble())
	}
	for _, x := range info.GetControllerPacketMetadata() {
		add(x.GetPreamble())
	}
	var d []string
	for _, id := range sortedKeys(names) {
		if n := names[id]; len(n) > 1 {
			d = append(d, fmt.Sprintf("id %#x given to %d objects: %v", id, len(n), n))
		}
	}
	return d
}

// bitWidth is the width of a bit<W> type spec, 0 for another type.
func bitWidth(t *p4configv1.P4DataTypeSpec) int32 {
	return t.GetBitstring().GetBit().GetBitwidth()
}

func sortedKeys[V any](m map[uint32]V) []uint32 {
	keys := make([]uint32, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	return keys
}

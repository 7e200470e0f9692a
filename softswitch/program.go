package softswitch

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	pipelines "github.com/distcache/distcache/stratum_pipelines"
	"github.com/distcache/distcache/stratum_pipelines/p4entity"
)

// The P4 programs of stratum_pipelines the software switch runs, one per
// switch (Config.Program): a controller must push the P4Info of the one it
// runs.
const (
	// Program is the cache switch (spine and storage-leaf roles), the
	// default.
	Program = "v1model/cache_switch.p4"
	// ClientLeafProgram is the client leaf (DistCache §4.2's client ToR).
	ClientLeafProgram = "v1model/client_leaf.p4"
)

// Programs are the programs the software switch runs, by the names
// `distcache switch --program` takes.
var Programs = map[string]string{
	"cache_switch": Program,
	"client_leaf":  ClientLeafProgram,
}

// ProgramNames are the names of Programs, sorted.
func ProgramNames() []string {
	return slices.Sorted(maps.Keys(Programs))
}

// register is a P4 register array; every cell fits 64 bits.
type register struct {
	info  *p4configv1.Register
	mask  uint64
	cells []uint64
}

// newRegister is a register of info's width and size, every cell zero.
func newRegister(info *p4configv1.Register) (*register, error) {
	bits := info.TypeSpec.GetBitstring().GetBit().GetBitwidth()
	if bits < 1 || bits > 64 {
		return nil, status.Errorf(codes.InvalidArgument, "register %s: %d bits, the software switch holds 1 to 64", info.Preamble.Name, bits)
	}
	return &register{info: info, mask: ^uint64(0) >> (64 - bits), cells: make([]uint64, info.Size)}, nil
}

func (r *register) read(i uint32) uint64     { return r.cells[i] }
func (r *register) write(i uint32, v uint64) { r.cells[i] = v & r.mask }

// counter is an indexed P4 counter array.
type counter struct {
	info    *p4configv1.Counter
	packets []uint64
	bytes   []uint64
}

func (c *counter) count(i uint32, n int) {
	if int(i) < len(c.packets) {
		c.packets[i]++
		c.bytes[i] += uint64(n)
	}
}

// state is a configured pipeline: its tables, registers and counters, by
// P4Runtime id and by name. A switch restart starts from a new state:
// every register zero, every table empty.
type state struct {
	info      *p4configv1.P4Info
	cookie    uint64
	tables    map[uint32]*table
	registers map[uint32]*register
	counters  map[uint32]*counter
	digests   map[uint32]*p4configv1.Digest
	byName    map[string]uint32
}

// CheckP4Info checks that info is the P4Info of program, which the
// software switch runs; the error says how it differs.
func CheckP4Info(program string, info *p4configv1.P4Info) error {
	want, err := pipelines.ProgramP4Info(program)
	if err != nil {
		return status.Errorf(codes.Internal, "cannot load the software switch's P4Info: %v", err)
	}
	if diffs := mismatch(want, info); len(diffs) > 0 {
		return status.Errorf(codes.InvalidArgument, "the pipeline's P4Info is not %s's, which the software switch runs: %s", program, strings.Join(diffs, "; "))
	}
	return nil
}

// newState builds the objects of info, which must be the P4Info of
// program: the software switch implements that program and no other.
func newState(program string, info *p4configv1.P4Info, cookie uint64) (*state, error) {
	if err := CheckP4Info(program, info); err != nil {
		return nil, err
	}
	s := &state{
		info: info, cookie: cookie, tables: map[uint32]*table{}, registers: map[uint32]*register{},
		counters: map[uint32]*counter{}, digests: map[uint32]*p4configv1.Digest{}, byName: map[string]uint32{},
	}
	actions := map[uint32]*p4configv1.Action{}
	for _, a := range info.Actions {
		actions[a.Preamble.Id] = a
		s.byName[a.Preamble.Name] = a.Preamble.Id
	}
	for _, t := range info.Tables {
		tb, err := newTable(t, actions)
		if err != nil {
			return nil, status.Error(codes.InvalidArgument, err.Error())
		}
		s.tables[t.Preamble.Id] = tb
		s.byName[t.Preamble.Name] = t.Preamble.Id
	}
	for _, r := range info.Registers {
		reg, err := newRegister(r)
		if err != nil {
			return nil, err
		}
		s.registers[r.Preamble.Id] = reg
		s.byName[r.Preamble.Name] = r.Preamble.Id
	}
	for _, c := range info.Counters {
		s.counters[c.Preamble.Id] = &counter{info: c, packets: make([]uint64, c.Size), bytes: make([]uint64, c.Size)}
		s.byName[c.Preamble.Name] = c.Preamble.Id
	}
	for _, d := range info.Digests {
		s.digests[d.Preamble.Id] = d
		s.byName[d.Preamble.Name] = d.Preamble.Id
	}
	return s, nil
}

func (s *state) table(name string) *table       { return s.tables[s.byName[name]] }
func (s *state) register(name string) *register { return s.registers[s.byName[name]] }
func (s *state) counter(name string) *counter   { return s.counters[s.byName[name]] }

// selected is the objects a read selects: every one (id 0) or id's.
func selected[T any](objs map[uint32]T, id uint32, kind string) ([]T, error) {
	if id == 0 {
		out := make([]T, 0, len(objs))
		for _, o := range objs {
			out = append(out, o)
		}
		return out, nil
	}
	o, ok := objs[id]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "no %s %d", kind, id)
	}
	return []T{o}, nil
}

// cellRange is the cells of an array of n that idx selects: all of them
// without an index, else the one.
func cellRange(idx *p4v1.Index, n int, kind, name string) (from, to int64, err error) {
	if idx == nil {
		return 0, int64(n), nil
	}
	if idx.Index < 0 || idx.Index >= int64(n) {
		return 0, 0, status.Errorf(codes.OutOfRange, "%s %s: index %d outside 0…%d", kind, name, idx.Index, n-1)
	}
	return idx.Index, idx.Index + 1, nil
}

// writeRegister applies a MODIFY of one cell, or of every cell when the
// index is unset.
func (s *state) writeRegister(typ p4v1.Update_Type, re *p4v1.RegisterEntry) error {
	r, ok := s.registers[re.RegisterId]
	if !ok {
		return status.Errorf(codes.NotFound, "no register %d", re.RegisterId)
	}
	name := r.info.Preamble.Name
	if typ != p4v1.Update_MODIFY {
		return status.Errorf(codes.InvalidArgument, "register %s: only MODIFY, not %s", name, typ)
	}
	b := re.GetData().GetBitstring()
	if b == nil {
		return status.Errorf(codes.InvalidArgument, "register %s: data must be a bitstring", name)
	}
	v, err := canonical(b, int(r.info.TypeSpec.GetBitstring().GetBit().GetBitwidth()))
	if err != nil {
		return status.Errorf(codes.InvalidArgument, "register %s: %v", name, err)
	}
	from, to, err := cellRange(re.Index, len(r.cells), "register", name)
	if err != nil {
		return err
	}
	if x := pipelines.BytesUint(v); x == 0 {
		clear(r.cells[from:to]) // a controller's reset of a sketch: no per-cell loop
	} else {
		for i := from; i < to; i++ {
			r.cells[i] = x
		}
	}
	return nil
}

func (s *state) readRegister(re *p4v1.RegisterEntry, dst []*p4v1.Entity) ([]*p4v1.Entity, error) {
	rs, err := selected(s.registers, re.RegisterId, "register")
	if err != nil {
		return dst, err
	}
	for _, r := range rs {
		from, to, err := cellRange(re.Index, len(r.cells), "register", r.info.Preamble.Name)
		if err != nil {
			return dst, err
		}
		for i := from; i < to; i++ {
			dst = append(dst, p4entity.Register(r.info.Preamble.Id, i, fromUint(r.cells[i])))
		}
	}
	return dst, nil
}

// writeCounter sets one cell of a counter, or every cell.
func (s *state) writeCounter(typ p4v1.Update_Type, ce *p4v1.CounterEntry) error {
	c, ok := s.counters[ce.CounterId]
	if !ok {
		return status.Errorf(codes.NotFound, "no counter %d", ce.CounterId)
	}
	if typ != p4v1.Update_MODIFY {
		return status.Errorf(codes.InvalidArgument, "counter %s: only MODIFY, not %s", c.info.Preamble.Name, typ)
	}
	from, to, err := cellRange(ce.Index, len(c.packets), "counter", c.info.Preamble.Name)
	if err != nil {
		return err
	}
	pk, by := uint64(ce.GetData().GetPacketCount()), uint64(ce.GetData().GetByteCount())
	for i := from; i < to; i++ {
		c.packets[i], c.bytes[i] = pk, by
	}
	return nil
}

func (s *state) readCounter(ce *p4v1.CounterEntry, dst []*p4v1.Entity) ([]*p4v1.Entity, error) {
	cs, err := selected(s.counters, ce.CounterId, "counter")
	if err != nil {
		return dst, err
	}
	for _, c := range cs {
		from, to, err := cellRange(ce.Index, len(c.packets), "counter", c.info.Preamble.Name)
		if err != nil {
			return dst, err
		}
		for i := from; i < to; i++ {
			dst = append(dst, &p4v1.Entity{Entity: &p4v1.Entity_CounterEntry{CounterEntry: &p4v1.CounterEntry{
				CounterId: c.info.Preamble.Id, Index: &p4v1.Index{Index: i},
				Data: &p4v1.CounterData{PacketCount: int64(c.packets[i]), ByteCount: int64(c.bytes[i])},
			}}})
		}
	}
	return dst, nil
}

// errUnconfigured is returned for writes and reads before a pipeline.
var errUnconfigured = status.Error(codes.FailedPrecondition, "no forwarding pipeline config is set")

// maxMismatches bounds the differences a refused pipeline reports.
const maxMismatches = 5

// mismatch lists how got differs from want, object by object.
func mismatch(want, got *p4configv1.P4Info) []string {
	var d []string
	if w, g := want.GetPkgInfo().GetArch(), got.GetPkgInfo().GetArch(); w != g {
		d = append(d, fmt.Sprintf("architecture %q, not %q", g, w))
	}
	d = append(d, diffObjects("table", want.Tables, got.Tables)...)
	d = append(d, diffObjects("action", want.Actions, got.Actions)...)
	d = append(d, diffObjects("register", want.Registers, got.Registers)...)
	d = append(d, diffObjects("counter", want.Counters, got.Counters)...)
	d = append(d, diffObjects("digest", want.Digests, got.Digests)...)
	d = append(d, diffObjects("controller header", want.ControllerPacketMetadata, got.ControllerPacketMetadata)...)
	if len(d) == 0 && !proto.Equal(want, got) {
		d = append(d, "the type info or annotations differ")
	}
	if len(d) > maxMismatches {
		d = append(d[:maxMismatches], fmt.Sprintf("and %d more", len(d)-maxMismatches))
	}
	return d
}

type p4Object interface {
	proto.Message
	GetPreamble() *p4configv1.Preamble
}

func diffObjects[T p4Object](kind string, want, got []T) []string {
	byID := map[uint32]T{}
	for _, g := range got {
		byID[g.GetPreamble().GetId()] = g
	}
	var d []string
	for _, w := range want {
		p := w.GetPreamble()
		g, ok := byID[p.GetId()]
		delete(byID, p.GetId())
		switch {
		case !ok:
			d = append(d, fmt.Sprintf("%s %s (id %#x) missing", kind, p.GetName(), p.GetId()))
		case !proto.Equal(w, g):
			d = append(d, fmt.Sprintf("%s %s (id %#x) differs", kind, p.GetName(), p.GetId()))
		}
	}
	var extra []string
	for id, g := range byID {
		extra = append(extra, fmt.Sprintf("%s %s (id %#x) unknown", kind, g.GetPreamble().GetName(), id))
	}
	slices.Sort(extra)
	return append(d, extra...)
}

package p4entity

import (
	"testing"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/protobuf/proto"
)

func TestTableEntry(t *testing.T) {
	got := TableEntry(7, 9, [][]byte{{1}, U16(2)}, U32(3)).GetTableEntry()
	want := &p4v1.TableEntry{TableId: 7,
		Match: []*p4v1.FieldMatch{Exact(1, []byte{1}), Exact(2, []byte{0, 2})},
		Action: &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: &p4v1.Action{ActionId: 9,
			Params: []*p4v1.Action_Param{{ParamId: 1, Value: []byte{0, 0, 0, 3}}}}}}}
	if !proto.Equal(got, want) {
		t.Errorf("TableEntry = %v, want %v", got, want)
	}
	if del := TableEntry(7, 0, [][]byte{{1}}).GetTableEntry(); del.Action != nil {
		t.Errorf("an entry without action has action %v", del.Action)
	}
	if e := Entry(7, 1, nil, 9).GetTableEntry(); e.Priority != 1 || e.Match != nil {
		t.Errorf("Entry at priority 1 without matches = %v", e)
	}
}

func TestRegister(t *testing.T) {
	if re := Register(4, -1, nil).GetRegisterEntry(); re.Index != nil || re.Data != nil {
		t.Errorf("a read of every cell = %v", re)
	}
	if re := Register(4, 2, U64(5)).GetRegisterEntry(); re.GetIndex().GetIndex() != 2 || len(re.GetData().GetBitstring()) != 8 {
		t.Errorf("a write of cell 2 = %v", re)
	}
}

package history

import "testing"

func TestModelStep(t *testing.T) {
	empty, a := register{}, register{value: "a", found: true}
	tests := []struct {
		name   string
		state  register
		op     Operation
		wantOK bool
		want   register
	}{
		{"put sets the value", empty, Operation{Kind: Put, Value: "a"}, true, a},
		{"put overwrites", register{value: "b", found: true}, Operation{Kind: Put, Value: "a"}, true, a},
		{"delete clears", a, Operation{Kind: Delete}, true, empty},
		{"delete of a missing key", empty, Operation{Kind: Delete}, true, empty},
		{"get of the value", a, Operation{Kind: Get, Value: "a", Found: true}, true, a},
		{"get of another value", a, Operation{Kind: Get, Value: "b", Found: true}, false, a},
		{"get not found of a present key", a, Operation{Kind: Get}, false, a},
		{"get not found of a missing key", empty, Operation{Kind: Get}, true, empty},
		{"get of a value of a missing key", empty, Operation{Kind: Get, Value: "a", Found: true}, false, empty},
		{"get of the empty value", register{found: true}, Operation{Kind: Get, Found: true}, true, register{found: true}},
		{"the empty value is not not-found", register{found: true}, Operation{Kind: Get}, false, register{found: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ok, next := step(tc.state, tc.op)
			if ok != tc.wantOK || next != tc.want {
				t.Fatalf("step(%+v, %s) = %v, %+v; want %v, %+v", tc.state, tc.op.Describe(), ok, next, tc.wantOK, tc.want)
			}
			// The porcupine model wraps step.
			ok, st := Model.Step(tc.state, tc.op, tc.op)
			if ok != tc.wantOK || st.(register) != tc.want {
				t.Fatalf("Model.Step disagrees with step: %v, %+v", ok, st)
			}
		})
	}
}

func TestModelPartitionsByKey(t *testing.T) {
	ops := porcupineOps([]Operation{
		{Kind: Put, Key: "b", Value: "1"}, {Kind: Put, Key: "a", Value: "2"}, {Kind: Get, Key: "b", Value: "1", Found: true},
	})
	parts := Model.Partition(ops)
	if len(parts) != 2 || len(parts[0]) != 2 || len(parts[1]) != 1 {
		t.Fatalf("partitions %v, want b's two operations then a's one", parts)
	}
	if k := parts[1][0].Input.(Operation).Key; k != "a" {
		t.Fatalf("second partition is %s's, want a's", k)
	}
}

func TestDescribe(t *testing.T) {
	tests := []struct {
		op   Operation
		want string
	}{
		{Operation{Kind: Put, Key: "k", Value: "v"}, `put(k, "v")`},
		{Operation{Kind: Delete, Key: "k"}, `del(k)`},
		{Operation{Kind: Get, Key: "k", Value: "v", Found: true}, `get(k) -> "v"`},
		{Operation{Kind: Get, Key: "k"}, `get(k) -> not found`},
	}
	for _, tc := range tests {
		if got := tc.op.Describe(); got != tc.want {
			t.Errorf("Describe() = %s, want %s", got, tc.want)
		}
	}
	op := Operation{Client: 3, Kind: Put, Key: "k", Value: "v", Call: 1000, Return: Unknown}
	if got, want := op.String(), `client  3 [1µs, unknown] put(k, "v")`; got != want {
		t.Errorf("String() = %s, want %s", got, want)
	}
}

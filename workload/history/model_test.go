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

		{"increment of a missing key starts from 0", empty, incrOp(1, "1"), true, num("1")},
		{"increment of an integer", num("41"), incrOp(1, "42"), true, num("42")},
		{"increment by a negative delta", num("5"), incrOp(-7, "-2"), true, num("-2")},
		{"increment of a put integer value", num("0"), incrOp(3, "3"), true, num("3")},
		{"increment returning another sum", num("41"), incrOp(1, "43"), false, num("41")},
		{"increment returning the value before it", num("41"), incrOp(1, "41"), false, num("41")},
		{"increment applied to a non-integer", a, incrOp(1, "1"), false, a},
		{"refused increment of a non-integer", a, refusedOp(1), true, a},
		{"refused increment of the empty value", register{found: true}, refusedOp(1), true, register{found: true}},
		{"refused increment of an integer", num("41"), refusedOp(1), false, num("41")},
		{"refused increment of a missing key", empty, refusedOp(1), false, empty},
		{"a leading zero is not an integer", num("007"), refusedOp(1), true, num("007")},
		{"a plus sign is not an integer", num("+7"), refusedOp(1), true, num("+7")},
		{"a space is not an integer", num(" 7"), incrOp(1, "8"), false, num(" 7")},
		{"minus zero is not an integer", num("-0"), refusedOp(1), true, num("-0")},
		{"beyond int64 is not an integer", num("9223372036854775808"), refusedOp(-1), true, num("9223372036854775808")},
		{"an overflowing increment is refused", num("9223372036854775807"), refusedOp(1), true, num("9223372036854775807")},
		{"an overflowing increment does not wrap", num("9223372036854775807"), incrOp(1, "-9223372036854775808"), false, num("9223372036854775807")},
		{"an increment to the least int64", num("-9223372036854775807"), incrOp(-1, "-9223372036854775808"), true, num("-9223372036854775808")},
		{"an increment of unknown outcome applies", num("41"), unknownIncrOp(1), true, num("42")},
		{"an increment of unknown outcome of a missing key", empty, unknownIncrOp(2), true, num("2")},
		{"an increment of unknown outcome of a non-integer changes nothing", a, unknownIncrOp(1), true, a},
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

// num is a register holding v.
func num(v string) register { return register{value: v, found: true} }

// incrOp is an acknowledged increment by delta that returned sum.
func incrOp(delta int64, sum string) Operation {
	return Operation{Kind: Incr, Delta: delta, Value: sum, Found: true}
}

// refusedOp is an increment by delta the store refused.
func refusedOp(delta int64) Operation { return Operation{Kind: Incr, Delta: delta} }

// unknownIncrOp is an increment by delta whose outcome is unknown.
func unknownIncrOp(delta int64) Operation {
	return Operation{Kind: Incr, Delta: delta, Return: Unknown}
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
		{Operation{Kind: Incr, Key: "k", Delta: 1, Value: "5", Found: true}, `incr(k, 1) -> 5`},
		{Operation{Kind: Incr, Key: "k", Delta: -2}, `incr(k, -2) -> refused`},
		{Operation{Kind: Incr, Key: "k", Delta: 1, Return: Unknown}, `incr(k, 1)`},
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

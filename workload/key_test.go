package workload

import (
	"math"
	"strconv"
	"testing"
)

func TestKey(t *testing.T) {
	for _, id := range []uint64{0, 1, 9, 10, 42, 99_999_999, 1 << 40, math.MaxUint64} {
		want := "key:" + strconv.FormatUint(id, 10)
		if got := Key(id); got != want {
			t.Errorf("Key(%d) = %q, want %q", id, got, want)
		}
		if got := string(AppendKey(nil, id)); got != want {
			t.Errorf("AppendKey(nil, %d) = %q, want %q", id, got, want)
		}
		if got := string(AppendKey([]byte("x/"), id)); got != "x/"+want {
			t.Errorf("AppendKey(\"x/\", %d) = %q, want %q", id, got, "x/"+want)
		}
	}
}

func TestAppendKeyDoesNotAllocate(t *testing.T) {
	buf := make([]byte, 0, 64)
	id := uint64(math.MaxUint64)
	if a := testing.AllocsPerRun(1000, func() { buf = AppendKey(buf[:0], id) }); a != 0 {
		t.Errorf("AppendKey allocates %v times per call", a)
	}
}

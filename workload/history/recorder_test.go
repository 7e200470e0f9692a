package history

import (
	"sync"
	"testing"
)

func TestRecorderIsSafeForConcurrentUse(t *testing.T) {
	r := NewRecorder()
	const clients, each = 8, 100
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			for i := range each {
				call := r.Now()
				r.Add(Operation{Client: c, Kind: Put, Key: "k", Value: string(rune('a'+c)) + string(rune('0'+i%10)), Call: call, Return: r.Now()})
			}
		})
	}
	wg.Wait()
	if r.Len() != clients*each {
		t.Fatalf("%d operations recorded, want %d", r.Len(), clients*each)
	}
	ops := r.Operations()
	last := map[int]int64{}
	for _, op := range ops {
		if op.Return < op.Call {
			t.Fatalf("%s returns before its call", op)
		}
		if op.Call < last[op.Client] {
			t.Fatalf("client %d's operations are out of order", op.Client)
		}
		last[op.Client] = op.Return
	}
	ops[0].Key = "changed"
	if r.Operations()[0].Key != "k" {
		t.Fatal("Operations returned the recorder's own slice")
	}
}

package main

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"time"
)

// writeOps writes a trial's operations to path as CSV, in the order they
// were called, with times in milliseconds from the fault: what to look at
// when a trial's worst bin is low (which reads were slow, and who answered
// them).
func writeOps(path string, ops []op, fault time.Duration) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("cannot write the operations: %w", err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("cannot write the operations: %w", cerr)
		}
	}()
	sorted := slices.Clone(ops)
	slices.SortFunc(sorted, func(a, b op) int { return int(a.call - b.call) })
	w := bufio.NewWriter(f)
	fmt.Fprintln(w, "kind,key,call_ms,ret_ms,took_ms,ok,layer,node,hit")
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	for _, o := range sorted {
		kind := "read"
		if o.write {
			kind = "write"
		}
		fmt.Fprintf(w, "%s,%d,%.1f,%.1f,%.1f,%t,%d,%d,%t\n", kind, o.key, ms(o.call-fault), ms(o.ret-fault), ms(o.ret-o.call), o.ok, o.layer, o.node, o.hit)
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("cannot write the operations: %w", err)
	}
	return nil
}

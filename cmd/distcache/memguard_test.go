package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

func TestGuardMemory(t *testing.T) {
	t.Run("over the limit", func(t *testing.T) {
		var out bytes.Buffer
		exited := make(chan struct{})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		// Any running Go program has more than one byte of heap.
		go guardMemory(ctx, 1, &out, func() { close(exited) })
		select {
		case <-exited:
		case <-ctx.Done():
			t.Fatal("the guard did not end the check over its limit")
		}
		if !strings.Contains(out.String(), "over --max-memory") {
			t.Errorf("the guard said %q", out.String())
		}
	})
	t.Run("no limit", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		guardMemory(ctx, 0, nil, func() { t.Error("exited without a limit") })
	})
}

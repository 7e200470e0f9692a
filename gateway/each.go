package gateway

import (
	"context"
	"sync"
)

// each calls fn for every group of n consecutive arguments (a key, or a
// key and its value), with the group's index, concurrently, and returns the
// first error.
func each(ctx context.Context, args [][]byte, n int, fn func(ctx context.Context, g int, kv [][]byte) error) error {
	groups := len(args) / n
	if groups == 1 {
		return fn(ctx, 0, args[:n])
	}
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	for g := range groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(ctx, g, args[g*n:g*n+n]); err != nil {
				once.Do(func() { first = err })
			}
		}()
	}
	wg.Wait()
	return first
}

package gateway

import (
	"context"

	"golang.org/x/sync/errgroup"
)

// each calls fn for every group of n consecutive arguments (a key, or a
// key and its value), with the group's index, concurrently, and returns the
// first error.
func each(ctx context.Context, args [][]byte, n int, fn func(ctx context.Context, g int, kv [][]byte) error) error {
	groups := len(args) / n
	if groups == 1 {
		return fn(ctx, 0, args[:n])
	}
	var eg errgroup.Group
	for g := range groups {
		eg.Go(func() error { return fn(ctx, g, args[g*n:g*n+n]) })
	}
	return eg.Wait()
}

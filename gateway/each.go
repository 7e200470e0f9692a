package gateway

import (
	"context"

	"golang.org/x/sync/errgroup"
)

// multiKeyWorkers bounds the keys of one multi-key command (MGET, MSET,
// DEL, EXISTS) that are in the cluster at once: an MGET of a thousand keys
// would otherwise send a thousand requests to a few shims at once, and a
// queue longer than the transport's retransmission makes each go out again
// (as Config.MaxInFlight does for commands).
const multiKeyWorkers = 32

// each calls fn for every group of n consecutive arguments (a key, or a
// key and its value), with the group's index, at most multiKeyWorkers at
// once, and returns the first error.
func each(ctx context.Context, args [][]byte, n int, fn func(ctx context.Context, g int, kv [][]byte) error) error {
	groups := len(args) / n
	if groups == 1 {
		return fn(ctx, 0, args[:n])
	}
	var eg errgroup.Group
	eg.SetLimit(multiKeyWorkers)
	for g := range groups {
		eg.Go(func() error { return fn(ctx, g, args[g*n:g*n+n]) })
	}
	return eg.Wait()
}

package gateway

import "context"

// workers are long-lived goroutines that run pipelined commands. A
// goroutine started per command begins on a small stack, which the
// command's call chain (gateway, client, transport) grows again every
// time: in a CPU profile of redis-benchmark -P 16 through the gateway,
// that growth and the goroutines' start took a tenth of its CPU. A worker
// keeps its grown stack from one command to the next.
type workers struct {
	tasks chan func()
}

// startWorkers starts n workers, which end when ctx does.
func startWorkers(ctx context.Context, n int) *workers {
	w := &workers{tasks: make(chan func())}
	for range n {
		go w.loop(ctx)
	}
	return w
}

func (w *workers) loop(ctx context.Context) {
	for {
		select {
		case f := <-w.tasks:
			f()
		case <-ctx.Done():
			return
		}
	}
}

// run hands f to a worker, waiting for one to be free until ctx ends; it
// reports whether a worker took f.
func (w *workers) run(ctx context.Context, f func()) bool {
	select {
	case w.tasks <- f:
		return true
	case <-ctx.Done():
		return false
	}
}

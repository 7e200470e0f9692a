package shim

import "sync"

// queuedReads are the GETs waiting for their work unit of the emulated
// capacity, by key: CableCache's request coalescing, at the storage server.
// A GET that arrives while another GET of its key waits for its unit joins
// that read instead of queueing one of its own. The shared Redis read
// starts after every GET that joined it arrived, so its value is as recent
// as each of them needs, and they share its work unit; a read is taken out
// of the table before it reads Redis, and later GETs queue their own. The
// hottest key's readers reach its shard in bursts — parked readers of a
// key whose writes follow one another, sent on by each of its owners every
// park timeout — and would otherwise each cost the busiest shard a unit.
type queuedReads struct {
	mu    sync.Mutex             // guards byKey and the joined of every read in it
	byKey map[string]*queuedRead // reads waiting for their unit
}

// queuedRead is a GET waiting for its work unit and the GETs that joined it.
type queuedRead struct {
	joined []*request
}

func newQueuedReads() *queuedReads { return &queuedReads{byKey: map[string]*queuedRead{}} }

// join makes r wait with the read of its key queued already, and reports
// true; or, when there is none, queues r's read and returns it (r leads it).
func (q *queuedReads) join(r *request) (lead *queuedRead, joined bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if qr := q.byKey[r.key]; qr != nil {
		qr.joined = append(qr.joined, r)
		return nil, true
	}
	qr := &queuedRead{}
	q.byKey[r.key] = qr
	return qr, false
}

// start takes qr, the queued read of key, out of the table, so that no GET
// joins it any more, and returns the GETs that joined it.
func (q *queuedReads) start(key string, qr *queuedRead) []*request {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.byKey[key] == qr {
		delete(q.byKey, key)
	}
	return qr.joined
}

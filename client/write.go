package client

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/distcache/distcache/dataplane/metrics"
	"github.com/distcache/distcache/dataplane/wire"
)

// Put writes key = value through the key's storage shim, which invalidates
// every cached copy before writing Redis (DistCache §4.3). value must not be
// modified until Put returns. When ctx ends before the shim replies, the
// error wraps ErrOutcomeUnknown and ctx's error (context.DeadlineExceeded):
// the write may or may not have been applied.
func (c *Client) Put(ctx context.Context, key string, value []byte) error {
	if v := c.view.Load(); c.writesDirect(v) { // directwrite.go
		errs := make([]error, 1)
		wait(func(done func()) { c.PutManyFunc(ctx, []string{key}, [][]byte{value}, errs, done) })
		return errs[0]
	}
	c.stats.puts.Add(1)
	_, err := c.write(ctx, wire.OpPut, "put", key, value)
	return err
}

// Delete removes key through its storage shim; like Put otherwise.
func (c *Client) Delete(ctx context.Context, key string) error {
	_, err := c.Remove(ctx, key)
	return err
}

// Remove is Delete that also reports whether the key existed (Redis DEL's
// count), as the shim that deleted it found it.
func (c *Client) Remove(ctx context.Context, key string) (existed bool, err error) {
	c.stats.deletes.Add(1)
	r, err := c.write(ctx, wire.OpDel, "delete", key, nil)
	return err == nil && r.Has(wire.FlagHit), err
}

// write runs a write and returns the shim's reply.
func (c *Client) write(ctx context.Context, op wire.Op, verb, key string, value []byte) (wire.Message, error) {
	start := time.Now()
	r, label, err := c.doWrite(ctx, op, key, value, 1)
	return r, c.wrote(op, verb, key, start, label, err)
}

// wrote accounts for a write of key that started at start and ended with
// label and err, and returns the error the caller gets.
func (c *Client) wrote(op wire.Op, verb, key string, start time.Time, label string, err error) error {
	c.requests.Observe(op, label, time.Since(start))
	if err != nil {
		c.stats.errors.Add(1)
		return fmt.Errorf("cannot %s %q: %w", verb, key, err)
	}
	return nil
}

// checkWrite refuses a write the protocol cannot carry.
func checkWrite(key string, value []byte) (string, error) {
	if err := checkKey(key); err != nil {
		return metrics.StatusResult(wire.StatusTooLarge), err
	}
	if len(value) > wire.MaxValueLen {
		return metrics.StatusResult(wire.StatusTooLarge), fmt.Errorf("%w: value of %d bytes, limit %d", ErrTooLarge, len(value), wire.MaxValueLen)
	}
	return "", nil
}

// doWrite sends the write as one transport call (retransmitted with the same
// sequence number, which the shim deduplicates) and starts a new call only
// after COHERENCE_TIMEOUT, when the shim guarantees nothing was written. Its
// first call is attempt number first (writeManyFunc made the earlier ones).
func (c *Client) doWrite(ctx context.Context, op wire.Op, key string, value []byte, first int) (wire.Message, string, error) {
	if label, err := checkWrite(key, value); err != nil {
		return wire.Message{}, label, err
	}
	kb := []byte(key)
	for attempt := first; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return wire.Message{}, metrics.ResultTimeout, err // nothing sent by this attempt
		}
		v := c.view.Load() // a retry follows a map change
		dst, err := c.shardAddr(ctx, v, key)
		if err != nil {
			return wire.Message{}, metrics.StatusResult(wire.StatusInternal), err
		}
		m := wire.Message{Header: wire.Header{Op: op, Flags: wire.FlagFirst, MapVersion: v.version}, Key: kb, Value: value}
		r, err := c.ep.Call(ctx, dst, &m)
		label, again, err := c.writeAnswered(ctx, &m, dst, r, err, attempt)
		if !again {
			return r, label, err
		}
	}
}

// writeAnswered is the outcome of attempt number attempt of write m at
// the shim at dst: its reply r, or the error that ended the wait; again
// says that nothing was written and the write should be sent anew.
func (c *Client) writeAnswered(ctx context.Context, m *wire.Message, dst netip.AddrPort, r wire.Message, err error, attempt int) (label string, again bool, _ error) {
	if err != nil {
		// Sent at least once (or failed while sending): the shim may
		// execute it. Never resend with a new sequence number.
		if ctx.Err() != nil {
			c.stats.timeouts.Add(1)
		}
		c.cfg.Logger.Debug("write got no reply", "op", m.Op, "key", m.Key, "shim", dst, "seq", m.Seq, "err", err)
		return metrics.ResultTimeout, false, fmt.Errorf("%w: no reply from shim %s (seq %d): %w", ErrOutcomeUnknown, dst, m.Seq, err)
	}
	switch r.Status {
	case wire.StatusOK:
		return metrics.ResultOK, false, nil
	case wire.StatusCoherence:
		if attempt < c.cfg.Attempts {
			c.stats.retries.Add(1)
			c.cfg.Logger.Debug("write not invalidated in time, nothing written; retrying", "op", m.Op, "key", m.Key,
				"shim", dst, "attempt", attempt)
			return "", true, nil
		}
		return metrics.StatusResult(r.Status), false, fmt.Errorf("shim %s, %d attempts: %w", dst, attempt, ErrCoherence)
	default:
		return metrics.StatusResult(r.Status), false, fmt.Errorf("shim %s: %w", dst, statusError(r.Status))
	}
}

package client

import (
	"context"
	"fmt"
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
	r, label, err := c.doWrite(ctx, op, key, value)
	c.requests.Observe(op, label, time.Since(start))
	if err != nil {
		c.stats.errors.Add(1)
		return r, fmt.Errorf("cannot %s %q: %w", verb, key, err)
	}
	return r, nil
}

// doWrite sends the write as one transport call (retransmitted with the same
// sequence number, which the shim deduplicates) and starts a new call only
// after COHERENCE_TIMEOUT, when the shim guarantees nothing was written.
func (c *Client) doWrite(ctx context.Context, op wire.Op, key string, value []byte) (wire.Message, string, error) {
	if err := checkKey(key); err != nil {
		return wire.Message{}, metrics.StatusResult(wire.StatusTooLarge), err
	}
	if len(value) > wire.MaxValueLen {
		return wire.Message{}, metrics.StatusResult(wire.StatusTooLarge), fmt.Errorf("%w: value of %d bytes, limit %d", ErrTooLarge, len(value), wire.MaxValueLen)
	}
	kb := []byte(key)
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return wire.Message{}, metrics.ResultTimeout, err // nothing sent by this attempt
		}
		v := c.view.Load() // a retry follows a map change
		dst, err := c.shardAddr(ctx, v, key)
		if err != nil {
			return wire.Message{}, metrics.StatusResult(wire.StatusInternal), err
		}
		m := wire.Message{Header: wire.Header{Op: op, MapVersion: v.version}, Key: kb, Value: value}
		r, err := c.ep.Call(ctx, dst, &m)
		if err != nil {
			// Sent at least once (or failed while sending): the shim may
			// execute it. Never resend with a new sequence number.
			if ctx.Err() != nil {
				c.stats.timeouts.Add(1)
			}
			c.cfg.Logger.Debug("write got no reply", "op", op, "key", key, "shim", dst, "seq", m.Seq, "err", err)
			return wire.Message{}, metrics.ResultTimeout, fmt.Errorf("%w: no reply from shim %s (seq %d): %w", ErrOutcomeUnknown, dst, m.Seq, err)
		}
		switch r.Status {
		case wire.StatusOK:
			return r, metrics.ResultOK, nil
		case wire.StatusCoherence:
			if attempt < c.cfg.Attempts {
				c.stats.retries.Add(1)
				c.cfg.Logger.Debug("write not invalidated in time, nothing written; retrying", "op", op, "key", key,
					"shim", dst, "attempt", attempt)
				continue
			}
			return r, metrics.StatusResult(r.Status), fmt.Errorf("shim %s, %d attempts: %w", dst, attempt, ErrCoherence)
		default:
			return r, metrics.StatusResult(r.Status), fmt.Errorf("shim %s: %w", dst, statusError(r.Status))
		}
	}
}

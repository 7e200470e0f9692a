package client

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// putMany runs PutManyFunc and waits for its done.
func putMany(c *Client, ctx context.Context, keys []string, values [][]byte) []error {
	errs := make([]error, len(keys))
	done := make(chan struct{})
	c.PutManyFunc(ctx, keys, values, errs, func() { close(done) })
	<-done
	return errs
}

// PutManyFunc ends each write as Put would: stored, sent anew after a
// coherence timeout, refused, or of unknown outcome at its deadline.
func TestPutManyAnswersAsPut(t *testing.T) {
	tests := []struct {
		name           string
		coherenceFails int
		silent         bool
		value          []byte
		timeout        time.Duration
		wantErr        error
		wantStored     bool
	}{
		{name: "stored", value: []byte("v"), wantStored: true},
		{name: "coherence timed out once: sent anew", coherenceFails: 1, value: []byte("v"), wantStored: true},
		{name: "coherence timed out every attempt", coherenceFails: 10, value: []byte("v"), wantErr: ErrCoherence},
		{name: "too large", value: make([]byte, 2<<20), wantErr: ErrTooLarge},
		{name: "silent shim", silent: true, value: []byte("v"), timeout: 100 * time.Millisecond, wantErr: ErrOutcomeUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cl := newCluster(t, withLayers(1), withShards(2, 2))
			keys := []string{"a", "b", "c", "d", "e", "f"}
			for _, k := range keys {
				cl.shimFor(k).do(func(s *fakeShim) { s.coherenceFails, s.silent = tt.coherenceFails, tt.silent })
			}
			c := newTestClient(t, cl.p, withAttempts(3))
			ctx := testCtx(t)
			if tt.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.timeout)
				defer cancel()
			}
			values := make([][]byte, len(keys))
			for i := range values {
				values[i] = tt.value
			}
			for i, err := range putMany(c, ctx, keys, values) {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("PutManyFunc %s: error %v, want %v", keys[i], err, tt.wantErr)
				}
				if err != nil && !strings.Contains(err.Error(), fmt.Sprintf("cannot put %q", keys[i])) {
					t.Errorf("error %q does not name the write", err)
				}
				var stored bool
				cl.shimFor(keys[i]).do(func(s *fakeShim) { stored = s.data[keys[i]] != nil })
				if stored != tt.wantStored {
					t.Errorf("%s stored: %v, want %v", keys[i], stored, tt.wantStored)
				}
			}
			if errors.Is(tt.wantErr, ErrCoherence) {
				for _, k := range keys { // a new seq per attempt, Attempts of them, as Put's
					var sent []shimRequest
					cl.shimFor(k).do(func(s *fakeShim) {
						for _, r := range s.log {
							if r.key == k {
								sent = append(sent, r)
							}
						}
					})
					if got := distinctSeqs(sent); got != 3 {
						t.Errorf("%s: the shim got %d attempts, want 3", k, got)
					}
				}
			}
			if st := c.Stats(); st.Puts != uint64(len(keys)) {
				t.Errorf("stats count %d puts, want %d", st.Puts, len(keys))
			}
		})
	}
}

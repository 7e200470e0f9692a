package kubetest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
)

// CompactEtcd compacts etcd's history up to its current revision, as the
// API server does every few minutes, through etcd's JSON gateway (no etcd
// client module is needed): a watch from an older resourceVersion then gets
// 410 Gone.
func (e *Env) CompactEtcd(ctx context.Context) error {
	base := e.env.ControlPlane.Etcd.URL.String()
	var rng struct {
		Header struct {
			Revision string `json:"revision"`
		} `json:"header"`
	}
	// Any key: the reply's header carries the current revision.
	if err := etcdPost(ctx, base+"/v3/kv/range", map[string]any{"key": "AA=="}, &rng); err != nil {
		return err
	}
	rev, err := strconv.ParseInt(rng.Header.Revision, 10, 64)
	if err != nil {
		return fmt.Errorf("cannot parse etcd revision %q: %w", rng.Header.Revision, err)
	}
	return etcdPost(ctx, base+"/v3/kv/compaction", map[string]any{"revision": rev, "physical": true}, nil)
}

func etcdPost(ctx context.Context, url string, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("cannot encode etcd request: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("cannot create etcd request: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("cannot reach etcd: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("cannot read etcd reply: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("cannot %s: etcd answered %s: %s", url, resp.Status, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("cannot decode etcd reply: %w", err)
		}
	}
	return nil
}

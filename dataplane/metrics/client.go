package metrics

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// Bounds of the answers GetJSON reads.
const (
	// MaxSmallAnswer bounds the answer of StatusPath or WorkPath.
	MaxSmallAnswer = 64 << 10
	// MaxHotKeysAnswer bounds the answer of HotKeysPath: a node reports at
	// most about a thousand keys, of at most 512 bytes each.
	MaxHotKeysAnswer = 4 << 20
	// MaxMissRatioCurveAnswer bounds the answer of MissRatioCurvePath: a
	// node reports about 64 points, some 3 KiB.
	MaxMissRatioCurveAnswer = 64 << 10
)

// GetJSON asks the metrics server at addr (host:port) for one of its JSON
// endpoints (StatusPath, WorkPath, HotKeysPath, MissRatioCurvePath) and decodes the answer, of
// at most limit bytes, into v.
func GetJSON(ctx context.Context, client *http.Client, addr, path string, limit int64, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		return fmt.Errorf("cannot read %s of %s: %w", path, addr, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("cannot read %s of %s: %w", path, addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("cannot read %s of %s: HTTP %s", path, addr, resp.Status)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, limit)).Decode(v); err != nil {
		return fmt.Errorf("cannot decode %s of %s: %w", path, addr, err)
	}
	return nil
}

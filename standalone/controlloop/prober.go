package controlloop

import (
	"context"
	"io"
	"net/http"
	"time"
)

// ProbeTimeout bounds one health check of HTTPProber: a member that does
// not answer in time (stopped, overloaded) is not Ready.
const ProbeTimeout = 500 * time.Millisecond

// HTTPProber checks members by GET http://<health address>/healthz, as a
// kubelet's readiness probe does: Ready when it answers 200 in time.
type HTTPProber struct {
	addrs  map[string]string // member name → health address
	client *http.Client
}

// NewHTTPProber probes the members of addrs (member name → host:port).
func NewHTTPProber(addrs map[string]string) *HTTPProber {
	return &HTTPProber{addrs: addrs, client: &http.Client{Timeout: ProbeTimeout, Transport: &http.Transport{
		MaxIdleConnsPerHost: 2, DisableCompression: true,
	}}}
}

// Ready implements Prober; a member without an address is not Ready.
func (p *HTTPProber) Ready(ctx context.Context, member string) bool {
	addr, ok := p.addrs[member]
	if !ok {
		return false
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/healthz", nil)
	if err != nil {
		return false
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	return resp.StatusCode == http.StatusOK
}

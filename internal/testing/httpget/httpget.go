// Package httpget fetches a URL for the tests that check what the
// project's HTTP endpoints answer: health checks, metrics and scrapes.
package httpget

import (
	"context"
	"fmt"
	"io"
	"net/http"
)

// Response is what a GET answered.
type Response struct {
	Status int
	Header http.Header
	Body   string
}

// Get sends GET url with ctx and reads the whole answer, whatever its
// status.
func Get(ctx context.Context, url string) (Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return Response{}, fmt.Errorf("cannot GET %s: %w", url, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return Response{}, fmt.Errorf("cannot GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return Response{}, fmt.Errorf("cannot read the answer to GET %s: %w", url, err)
	}
	return Response{Status: resp.StatusCode, Header: resp.Header, Body: string(b)}, nil
}

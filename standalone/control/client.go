package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// ErrNotRunning is wrapped when no cluster answers on the socket.
var ErrNotRunning = errors.New("no standalone cluster is running there")

// Client talks to the control API of the cluster in one run directory.
type Client struct {
	runDir string
	http   *http.Client
}

// Dial returns a client of the cluster running in runDir; it connects on
// each call.
func Dial(runDir string) *Client {
	path := SocketPath(runDir)
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}}
	return &Client{runDir: runDir, http: &http.Client{Transport: tr}}
}

// Status returns the cluster's status.
func (c *Client) Status(ctx context.Context) (Status, error) {
	var s Status
	return s, c.do(ctx, http.MethodGet, "/v1/status", &s)
}

// Work returns every shim's and node's load, scraped now.
func (c *Client) Work(ctx context.Context) ([]Process, error) {
	var w []Process
	return w, c.do(ctx, http.MethodGet, "/v1/work", &w)
}

// Kill kills process name (SIGKILL) and holds it down.
func (c *Client) Kill(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodPost, "/v1/processes/"+url.PathEscape(name)+"/kill", nil)
}

// Restart starts process name again.
func (c *Client) Restart(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodPost, "/v1/processes/"+url.PathEscape(name)+"/restart", nil)
}

// Pause stops process name (SIGSTOP) until Resume.
func (c *Client) Pause(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodPost, "/v1/processes/"+url.PathEscape(name)+"/pause", nil)
}

// Resume continues process name (SIGCONT); a no-op unless it is paused.
func (c *Client) Resume(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodPost, "/v1/processes/"+url.PathEscape(name)+"/resume", nil)
}

// Slow delays every datagram process name's data-plane socket sends by
// delay, until Unslow.
func (c *Client) Slow(ctx context.Context, name string, delay time.Duration) error {
	q := url.Values{"delay": {delay.String()}}
	return c.do(ctx, http.MethodPost, "/v1/processes/"+url.PathEscape(name)+"/slow?"+q.Encode(), nil)
}

// Unslow stops delaying process name's datagrams; a no-op unless it is
// slowed.
func (c *Client) Unslow(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodPost, "/v1/processes/"+url.PathEscape(name)+"/unslow", nil)
}

// Shutdown asks the cluster to stop; it does not wait for it.
func (c *Client) Shutdown(ctx context.Context) error {
	return c.do(ctx, http.MethodPost, "/v1/shutdown", nil)
}

func (c *Client) do(ctx context.Context, method, path string, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, "http://distcache"+path, nil)
	if err != nil {
		return fmt.Errorf("cannot call %s %s: %w", method, path, err)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("cannot reach the cluster in %s: %w: %w", c.runDir, ErrNotRunning, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("cannot read the reply to %s %s: %w", method, path, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e apiError
		if json.Unmarshal(body, &e) == nil && e.Error != "" {
			switch resp.StatusCode {
			case http.StatusNotFound:
				return rewrap(e.Error, ErrNotFound)
			case http.StatusBadRequest:
				return rewrap(e.Error, ErrBadRequest)
			}
			return errors.New(e.Error)
		}
		return fmt.Errorf("cannot %s %s: HTTP %s", method, path, resp.Status)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("cannot decode the reply to %s %s: %w", method, path, err)
	}
	return nil
}

// rewrap turns the message of a server's error that wrapped sentinel back
// into an error that wraps it, without repeating its text.
func rewrap(msg string, sentinel error) error {
	return fmt.Errorf("%s: %w", strings.TrimSuffix(msg, ": "+sentinel.Error()), sentinel)
}

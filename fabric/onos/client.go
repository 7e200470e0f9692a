// Package onos is the fabric driver for switches run by an ONOS
// controller: it programs them through ONOS's REST API (ONOS 2.7.0,
// /onos/v1) with plain net/http — no ONOS Go library exists — instead of
// holding a P4Runtime session itself. ONOS holds that session: the
// driver puts each switch into ONOS's network configuration with its
// P4Runtime address and the cache switch pipeconf (ONOS then connects,
// becomes primary and pushes the pipeline), writes the program's tables
// as protocol-independent (PI) flow rules, and reads the device's state.
//
// A Session (one per switch) satisfies cacheswitch.Session, so the same
// controller code that drives a stratum.Conn can drive a switch behind
// ONOS: it translates the P4Runtime table entries the controller builds
// into flow rules by the names in the program's P4Info. What ONOS's REST
// API has no resource for — register writes and reads, counters,
// packet-outs, packet-ins and digests — fails with ErrNotInREST; what an
// ONOS-driven switch therefore does is in stratum_pipelines/onos/README.md.
package onos

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
)

// DefaultAppID is the ONOS application the driver's flow rules belong to.
const DefaultAppID = "org.distcache.cacheswitch"

// maxErrorBody bounds how much of an error answer goes into an error.
const maxErrorBody = 1024

// Config configures a client of one ONOS controller.
type Config struct {
	// Endpoint is ONOS's REST API base URL (SwitchFabric spec.onos.endpoint),
	// for instance http://onos:8181/onos/v1.
	Endpoint string
	// Username and Password authenticate every request (HTTP basic
	// authentication; spec.onos.credentialsSecretRef). No Authorization
	// header is sent when both are empty.
	Username, Password string
	// AppID owns the driver's flow rules (DefaultAppID).
	AppID string
	// HTTPClient sends the requests (http.DefaultClient); its timeout, if
	// any, bounds each request, as does the caller's context.
	HTTPClient *http.Client
	Logger     *slog.Logger
}

// Client speaks to ONOS's REST API.
type Client struct {
	base  *url.URL
	user  string
	pass  string
	appID string
	http  *http.Client
	log   *slog.Logger
}

// New returns a client of the ONOS controller at cfg.Endpoint.
func New(cfg Config) (*Client, error) {
	base, err := url.Parse(cfg.Endpoint)
	if err != nil {
		return nil, fmt.Errorf("cannot use ONOS endpoint %q: %w", cfg.Endpoint, err)
	}
	if base.Scheme != "http" && base.Scheme != "https" || base.Host == "" {
		return nil, fmt.Errorf("cannot use ONOS endpoint %q: not an http(s) URL", cfg.Endpoint)
	}
	if cfg.AppID == "" {
		cfg.AppID = DefaultAppID
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = http.DefaultClient
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Client{base: base, user: cfg.Username, pass: cfg.Password, appID: cfg.AppID, http: cfg.HTTPClient,
		log: cfg.Logger.With("onos", base.Redacted())}, nil
}

// AppID is the application the client's flow rules belong to.
func (c *Client) AppID() string { return c.appID }

// StatusError is an answer of ONOS other than success: its HTTP status
// and the message of its error body (ONOS answers {"code", "message"}),
// or the body itself.
type StatusError struct {
	Method, Path string
	Status       int
	Message      string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("ONOS answered %s %s with %d %s: %s", e.Method, e.Path, e.Status, http.StatusText(e.Status), e.Message)
}

// IsNotFound says whether err is ONOS's 404 answer.
func IsNotFound(err error) bool {
	var se *StatusError
	return errors.As(err, &se) && se.Status == http.StatusNotFound
}

// request is one REST call: path segments under the base URL (each
// escaped here), an optional query and JSON body, and where to decode
// the JSON answer (nil: discarded).
type request struct {
	method   string
	segments []string
	query    url.Values
	body     any
	out      any
}

// do sends r; any status but 200–204 is a *StatusError.
func (c *Client) do(ctx context.Context, r request) error {
	escaped := make([]string, len(r.segments))
	for i, s := range r.segments {
		escaped[i] = url.PathEscape(s)
	}
	u := c.base.JoinPath(escaped...)
	u.RawQuery = r.query.Encode()
	var body io.Reader
	if r.body != nil {
		b, err := json.Marshal(r.body)
		if err != nil {
			return fmt.Errorf("cannot encode the body of %s %s: %w", r.method, u.Path, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u.String(), body)
	if err != nil {
		return fmt.Errorf("cannot build %s %s: %w", r.method, u.Path, err)
	}
	req.Header.Set("Accept", "application/json")
	if r.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.user != "" || c.pass != "" {
		req.SetBasicAuth(c.user, c.pass)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("cannot reach ONOS: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 204 {
		return &StatusError{Method: r.method, Path: u.Path, Status: resp.StatusCode, Message: errorMessage(resp.Body)}
	}
	if r.out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(r.out); err != nil {
		return fmt.Errorf("cannot decode ONOS's answer to %s %s: %w", r.method, u.Path, err)
	}
	return nil
}

// errorMessage is the message of ONOS's error body {"code", "message"},
// or the body itself when it is not one.
func errorMessage(body io.Reader) string {
	b, _ := io.ReadAll(io.LimitReader(body, maxErrorBody))
	var e struct {
		Message json.RawMessage `json:"message"`
	}
	if json.Unmarshal(b, &e) == nil && len(e.Message) > 0 {
		var s string
		if json.Unmarshal(e.Message, &s) == nil {
			return s
		}
		return string(e.Message) // a network configuration's list of errors
	}
	return strings.TrimSpace(string(b))
}

package control

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzRequest sends arbitrary HTTP requests, as the control socket reads
// them, to the control API in front of a fake backend. Every answer is
// one JSON value with a status the API documents; a refused request (4xx)
// asks nothing of the backend, a GET never changes anything, and a request
// reaches the backend at most once, by the verb its path names.
func FuzzRequest(f *testing.F) {
	for _, seed := range []string{
		"GET /v1/status HTTP/1.1\r\nHost: distcache\r\n\r\n",
		"GET /v1/work HTTP/1.1\r\nHost: distcache\r\n\r\n",
		"POST /v1/processes/cli-spine-0/kill HTTP/1.1\r\nHost: distcache\r\nContent-Length: 0\r\n\r\n",
		"POST /v1/processes/cli-spine-0/slow?delay=100ms HTTP/1.1\r\nHost: distcache\r\nContent-Length: 0\r\n\r\n",
		"POST /v1/processes/cli-spine-0/slow?delay=-1s HTTP/1.1\r\nHost: distcache\r\n\r\n",
		"POST /v1/processes/nobody/pause HTTP/1.1\r\nHost: distcache\r\n\r\n",
		"POST /v1/processes/broken/resume HTTP/1.1\r\nHost: distcache\r\nContent-Type: application/json\r\nContent-Length: 9\r\n\r\n{\"a\":[1,",
		"PUT /v1/processes/x/unslow HTTP/1.1\r\nHost: distcache\r\n\r\n",
		"POST /v1/processes/%2e%2e/restart HTTP/1.1\r\nHost: distcache\r\n\r\n",
		"GET /v1/status?\xff\xfe HTTP/1.0\r\n\r\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(raw)))
		if err != nil {
			return // the server answers 400 before any handler runs
		}
		b := &fakeBackend{}
		w := httptest.NewRecorder()
		newHandler(b).ServeHTTP(w, req)
		calls := b.take()
		code := w.Code
		if w.Header().Get("Content-Type") == "application/json" {
			switch code {
			case http.StatusOK, http.StatusBadRequest, http.StatusNotFound, http.StatusInternalServerError:
			default:
				t.Fatalf("%s %s: status %d", req.Method, req.URL, code)
			}
			var v any
			dec := json.NewDecoder(w.Body)
			if err := dec.Decode(&v); err != nil || dec.More() {
				t.Fatalf("%s %s: %d answer is not one JSON value (%v): %q", req.Method, req.URL, code, err, w.Body.String())
			}
		} else if len(calls) > 0 {
			// The mux's own answers (a redirect to a clean path, a
			// request for "*") run no handler.
			t.Fatalf("%s %s: answered %d by the mux, yet the backend was asked to %q", req.Method, req.URL, code, calls)
		}
		if len(calls) > 1 {
			t.Fatalf("%s %s: %d backend calls %q", req.Method, req.URL, len(calls), calls)
		}
		if len(calls) == 1 {
			verb, _, _ := strings.Cut(calls[0], " ")
			if req.Method != http.MethodPost || !strings.HasSuffix(req.URL.Path, "/"+verb) {
				t.Fatalf("%s %s: backend asked to %q", req.Method, req.URL, calls[0])
			}
		}
		if code == http.StatusBadRequest && len(calls) > 0 {
			t.Fatalf("%s %s: refused, yet the backend was asked to %q", req.Method, req.URL, calls)
		}
	})
}

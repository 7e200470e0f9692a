package onos

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
)

// basePath is where ONOS serves its REST API (the spec's basePath).
const basePath = "/onos/v1"

// Credentials the fake accepts.
const (
	fakeUser     = "onos"
	fakePassword = "rocks"
)

// recorded is one request the fake received.
type recorded struct {
	Method string
	Path   string // under basePath
	Query  url.Values
	Body   []byte
}

// fakeONOS is a fake ONOS controller: a recording HTTP server on loopback
// that answers the REST resources the driver uses the way ONOS 2.7.0's do
// (FlowsWebResource, DevicesWebResource, NetworkConfigWebResource: their
// paths, status codes and answer shapes), keeps devices and flow rules in
// memory, and checks basic authentication. It connects to no switch: a
// configured device is available when available says so.
type fakeONOS struct {
	t   *testing.T
	srv *httptest.Server

	mu        sync.Mutex
	requests  []recorded
	available bool // a device configured from now on is available
	netcfg    map[string]json.RawMessage
	devices   map[string]*DeviceState
	flows     map[string][]Flow // by device
	ids       map[string]string // device + matchKey -> flow id: ONOS derives the id from them
	nextID    int
	fail      *fakeFailure // answer the next request with this
	// unavailableGets is how many more device reads answer a device
	// unavailable before it turns available (availableAfter).
	unavailableGets int
}

type fakeFailure struct {
	status int
	body   string
}

func newFakeONOS(t *testing.T) *fakeONOS {
	t.Helper()
	f := &fakeONOS{t: t, available: true, netcfg: map[string]json.RawMessage{}, devices: map[string]*DeviceState{},
		flows: map[string][]Flow{}, ids: map[string]string{}, nextID: 1000}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+basePath+"/network/configuration", f.postNetcfg)
	mux.HandleFunc("DELETE "+basePath+"/network/configuration/devices/{id}", f.deleteNetcfg)
	mux.HandleFunc("GET "+basePath+"/devices/{id}", f.getDevice)
	mux.HandleFunc("DELETE "+basePath+"/devices/{id}", f.deleteDevice)
	mux.HandleFunc("POST "+basePath+"/flows", f.postFlows)
	mux.HandleFunc("DELETE "+basePath+"/flows", f.deleteFlows)
	mux.HandleFunc("GET "+basePath+"/flows/{device}", f.getFlows)
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		f.mu.Lock()
		f.requests = append(f.requests, recorded{Method: r.Method, Path: trimBase(r.URL.Path), Query: r.URL.Query(), Body: body})
		fail := f.fail
		f.fail = nil
		f.mu.Unlock()
		if u, p, ok := r.BasicAuth(); !ok || u != fakeUser || p != fakePassword {
			answer(w, http.StatusUnauthorized, map[string]any{"code": 401, "message": "Unauthorized"})
			return
		}
		if fail != nil {
			w.WriteHeader(fail.status)
			_, _ = io.WriteString(w, fail.body)
			return
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// client is a client of the fake with its credentials.
func (f *fakeONOS) client(t *testing.T) *Client {
	t.Helper()
	c, err := New(Config{Endpoint: f.srv.URL + basePath, Username: fakeUser, Password: fakePassword,
		HTTPClient: f.srv.Client(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// taken returns the requests recorded since the last call.
func (f *fakeONOS) taken() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.requests
	f.requests = nil
	return r
}

func (f *fakeONOS) failNext(status int, body string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = &fakeFailure{status: status, body: body}
}

func (f *fakeONOS) setAvailable(id string, available bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.available = available
	if d, ok := f.devices[id]; ok {
		d.Available = available
	}
}

// availableAfter makes every device answer unavailable to the next n
// reads, and available from then on.
func (f *fakeONOS) availableAfter(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.unavailableGets, f.available = n, false
	for _, d := range f.devices {
		d.Available = false
	}
}

func (f *fakeONOS) postNetcfg(w http.ResponseWriter, r *http.Request) {
	var cfg struct {
		Devices map[string]json.RawMessage `json:"devices"`
	}
	if err := json.NewDecoder(r.Body).Decode(&cfg); err != nil {
		answer(w, http.StatusBadRequest, map[string]any{"code": 400, "message": err.Error()})
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for id, c := range cfg.Devices {
		f.netcfg[id] = c
		if _, ok := f.devices[id]; !ok {
			f.devices[id] = &DeviceState{ID: id, Available: f.available, Role: "MASTER", Driver: DefaultDriver}
		}
	}
	w.WriteHeader(http.StatusOK)
}

func (f *fakeONOS) deleteNetcfg(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.netcfg, r.PathValue("id"))
	w.WriteHeader(http.StatusNoContent)
}

func (f *fakeONOS) getDevice(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	d, ok := f.devices[r.PathValue("id")]
	if !ok {
		answer(w, http.StatusNotFound, map[string]any{"code": 404, "message": "Device is not found"})
		return
	}
	answer(w, http.StatusOK, d)
	if f.unavailableGets > 0 {
		if f.unavailableGets--; f.unavailableGets == 0 {
			f.available = true
			for _, d := range f.devices {
				d.Available = true
			}
		}
	}
}

func (f *fakeONOS) deleteDevice(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := r.PathValue("id")
	if _, ok := f.devices[id]; !ok {
		answer(w, http.StatusNotFound, map[string]any{"code": 404, "message": "Device is not found"})
		return
	}
	delete(f.devices, id)
	delete(f.flows, id)
	w.WriteHeader(http.StatusNoContent)
}

func (f *fakeONOS) postFlows(w http.ResponseWriter, r *http.Request) {
	var in flowList
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Flows == nil {
		answer(w, http.StatusBadRequest, map[string]any{"code": 400, "message": fmt.Sprint("Flow array was not specified ", err)})
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var out flowRefList
	for _, fl := range in.Flows {
		fl.AppID = r.URL.Query().Get("appId")
		fl.TableName = fl.Table()
		fl.TableID = json.RawMessage("-245201431") // ONOS answers the table's hash code
		fl.State = "ADDED"
		k := fl.DeviceID + "/" + matchKey(fl)
		id, ok := f.ids[k]
		if !ok {
			f.nextID++
			id = fmt.Sprint(f.nextID)
			f.ids[k] = id
		}
		fl.ID = id
		kept := f.flows[fl.DeviceID][:0]
		for _, old := range f.flows[fl.DeviceID] {
			if old.ID != id {
				kept = append(kept, old)
			}
		}
		f.flows[fl.DeviceID] = append(kept, fl)
		out.Flows = append(out.Flows, FlowRef{DeviceID: fl.DeviceID, FlowID: id})
	}
	answer(w, http.StatusOK, out)
}

func (f *fakeONOS) deleteFlows(w http.ResponseWriter, r *http.Request) {
	var in flowRefList
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		answer(w, http.StatusBadRequest, map[string]any{"code": 400, "message": err.Error()})
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, ref := range in.Flows {
		kept := f.flows[ref.DeviceID][:0]
		for _, fl := range f.flows[ref.DeviceID] {
			if fl.ID != ref.FlowID {
				kept = append(kept, fl)
			}
		}
		f.flows[ref.DeviceID] = kept
	}
	w.WriteHeader(http.StatusNoContent)
}

func (f *fakeONOS) getFlows(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	flows := f.flows[r.PathValue("device")]
	if len(flows) == 0 {
		answer(w, http.StatusNotFound, map[string]any{"code": 404, "message": "Device is not found"})
		return
	}
	answer(w, http.StatusOK, flowList{Flows: flows})
}

// addForeign adds a flow of another application, which the driver must
// leave alone.
func (f *fakeONOS) addForeign(fl Flow) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextID++
	fl.ID, fl.State = fmt.Sprint(f.nextID), "ADDED"
	f.flows[fl.DeviceID] = append(f.flows[fl.DeviceID], fl)
}

func (f *fakeONOS) flowCount(device string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.flows[device])
}

func answer(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func trimBase(p string) string {
	if len(p) >= len(basePath) && p[:len(basePath)] == basePath {
		return p[len(basePath):]
	}
	return p
}

package onos

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/protobuf/proto"

	"github.com/distcache/distcache/fabric/cacheswitch"
)

var _ cacheswitch.Session = (*Session)(nil)

func protoEqual(a, b *p4v1.Entity) bool { return proto.Equal(a, b) }

func TestErrorsCarryONOSStatusAndMessage(t *testing.T) {
	for _, c := range []struct {
		name       string
		status     int
		body       string
		wantSubstr []string
	}{
		{"ONOS's error body", http.StatusBadRequest, `{"code":400,"message":"Invalid flow rule"}`, []string{"400", "Invalid flow rule", "cannot add 1 flow rules"}},
		{"netcfg's multi-status", 207, `{"code":207,"message":["Error parsing config devices/device:x/basic"]}`, []string{"207", "Error parsing config devices/device:x/basic"}},
		{"a body that is no JSON", http.StatusInternalServerError, "boom", []string{"500", "boom"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeONOS(t)
			s := newSession(t, f, time.Hour)
			e := entities{t: t, info: s.tr.info}
			f.failNext(c.status, c.body)
			var err error
			if c.status == 207 {
				err = s.c.ConfigureDevices(context.Background(), spineA)
			} else {
				err = s.Write(context.Background(), upd(p4v1.Update_INSERT, e.entry("storage_route", "no_shim", -1, [][]byte{u32(1)})))
			}
			var se *StatusError
			if !errors.As(err, &se) || se.Status != c.status {
				t.Fatalf("got %v, want a StatusError %d", err, c.status)
			}
			for _, sub := range c.wantSubstr {
				if !strings.Contains(err.Error(), sub) {
					t.Errorf("error %q does not say %q", err, sub)
				}
			}
		})
	}
}

func TestBasicAuthentication(t *testing.T) {
	f := newFakeONOS(t)
	for _, c := range []struct {
		name, user, pass string
		wantStatus       int
	}{
		{"right credentials", fakeUser, fakePassword, 0},
		{"wrong password", fakeUser, "wrong", http.StatusUnauthorized},
		{"none", "", "", http.StatusUnauthorized},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl, err := New(Config{Endpoint: f.srv.URL + basePath, Username: c.user, Password: c.pass, HTTPClient: f.srv.Client(),
				Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			err = cl.ConfigureDevices(context.Background(), spineA)
			var se *StatusError
			switch {
			case c.wantStatus == 0 && err != nil:
				t.Fatal(err)
			case c.wantStatus != 0 && (!errors.As(err, &se) || se.Status != c.wantStatus):
				t.Fatalf("got %v, want status %d", err, c.wantStatus)
			}
		})
	}
}

func TestEndpoint(t *testing.T) {
	for _, c := range []struct {
		endpoint string
		ok       bool
	}{
		{"http://onos:8181/onos/v1", true},
		{"https://onos/onos/v1", true},
		{"onos:8181", false},
		{"grpc://onos:8181", false},
		{"http://", false},
	} {
		_, err := New(Config{Endpoint: c.endpoint})
		if (err == nil) != c.ok {
			t.Errorf("New(%q): %v, want ok %v", c.endpoint, err, c.ok)
		}
	}
}

func TestUnknownDevice(t *testing.T) {
	f := newFakeONOS(t)
	_, err := f.client(t).Device(context.Background(), "device:nowhere")
	if !errors.Is(err, ErrUnknownDevice) || !strings.Contains(err.Error(), "Device is not found") {
		t.Fatalf("got %v, want ErrUnknownDevice with ONOS's message", err)
	}
	// A switch ONOS never had leaves without an error.
	if err := f.client(t).RemoveDevice(context.Background(), "device:nowhere"); err != nil {
		t.Fatal(err)
	}
}

// TestSetPipeline: the device is configured with its pipeconf, waited for
// until ONOS reports it available, and the application's flows on it
// (from an earlier session) removed; another application's stay.
func TestSetPipeline(t *testing.T) {
	f := newFakeONOS(t)
	f.setAvailable(dev, false)
	c := f.client(t)
	e := entities{t: t, info: cacheSwitchInfo(t)}
	earlier := newTranslator(e.info)
	old, err := earlier.toFlow(dev, e.entry("storage_route", "no_shim", -1, [][]byte{u32(9)}).GetTableEntry(), true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.AddFlows(context.Background(), []Flow{old}); err != nil {
		t.Fatal(err)
	}
	foreign := old
	foreign.AppID = "org.onosproject.other"
	f.addForeign(foreign)

	s, err := c.Dial(context.Background(), SessionConfig{Switch: spineA, PollInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	f.taken()
	f.availableAfter(2)
	if err := s.SetPipeline(context.Background(), e.info, []byte("bmv2 json"), 7); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range f.taken() {
		got = append(got, r.Method+" "+r.Path)
	}
	want := []string{"POST /network/configuration", "GET /devices/" + dev, "GET /devices/" + dev, "GET /devices/" + dev,
		"GET /flows/" + dev, "DELETE /flows"}
	if len(got) < len(want) || strings.Join(got[:len(want)], "\n") != strings.Join(want, "\n") {
		t.Fatalf("requests\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if n := f.flowCount(dev); n != 1 {
		t.Errorf("%d flows left, want the other application's one", n)
	}
}

func TestSessionEndsWhenTheDeviceIsUnavailable(t *testing.T) {
	f := newFakeONOS(t)
	s := newSession(t, f, time.Millisecond)
	select {
	case <-s.Done():
		t.Fatalf("session ended with the device available: %v", s.Err())
	default:
	}
	f.setAvailable(dev, false)
	<-s.Done()
	if !errors.Is(s.Err(), ErrDeviceUnavailable) {
		t.Fatalf("session ended with %v, want ErrDeviceUnavailable", s.Err())
	}
}

func TestWriteBeforeSetPipeline(t *testing.T) {
	f := newFakeONOS(t)
	s, err := f.client(t).Dial(context.Background(), SessionConfig{Switch: spineA})
	if err != nil {
		t.Fatal(err)
	}
	e := entities{t: t, info: cacheSwitchInfo(t)}
	if err := s.Write(context.Background(), upd(p4v1.Update_INSERT, e.entry("storage_route", "no_shim", -1, [][]byte{u32(1)}))); !errors.Is(err, ErrNoPipeline) {
		t.Fatalf("got %v, want ErrNoPipeline", err)
	}
}

// TestTheCacheSwitchControllerNeedsRegisters: the controller's first
// write is the hot-key threshold register, which ONOS's REST API cannot
// write, so it does not start over an ONOS session (stratum_pipelines/onos/README.md).
func TestTheCacheSwitchControllerNeedsRegisters(t *testing.T) {
	f := newFakeONOS(t)
	s := newSession(t, f, time.Hour)
	_, err := cacheswitch.New(context.Background(), s, cacheswitch.Config{Member: "spine-a", Info: s.tr.info,
		Logger: slog.New(slog.DiscardHandler)})
	if !errors.Is(err, ErrNotInREST) || !strings.Contains(err.Error(), "register hot_threshold") {
		t.Fatalf("got %v, want ErrNotInREST for register hot_threshold", err)
	}
	if r := f.taken(); len(r) != 0 {
		t.Errorf("sent %v", r)
	}
}

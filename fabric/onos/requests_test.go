package onos

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"os"
	"reflect"
	"testing"
	"time"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	pipelines "github.com/distcache/distcache/stratum_pipelines"
	"github.com/distcache/distcache/stratum_pipelines/p4entity"
)

// spineA is the switch of stratum_pipelines/onos/netcfg.json.
var spineA = Switch{DeviceID: "device:distcache:spine-a", P4RuntimeAddress: "127.0.0.1:9559", P4RuntimeDeviceID: 1, Name: "spine-a"}

func cacheSwitchInfo(t *testing.T) *p4configv1.P4Info {
	t.Helper()
	info, err := pipelines.ProgramP4Info("v1model/cache_switch.p4")
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// entities builds P4Runtime entities of the cache switch program by name,
// as fabric/cacheswitch does by id.
type entities struct {
	t    *testing.T
	info *p4configv1.P4Info
}

func (e entities) id(name string) uint32 {
	id, ok := pipelines.ObjectID(e.info, name)
	if !ok {
		e.t.Fatalf("the P4Info has no %s", name)
	}
	return id
}

// entry is an entry of table: matches of field ids 1, 2, … of kind exact
// (or lpm with prefix when lpm ≥ 0), running action with params 1, 2, ….
func (e entities) entry(table, action string, lpm int32, matches [][]byte, params ...[]byte) *p4v1.Entity {
	var a uint32
	if action != "" {
		a = e.id(action)
	}
	ent := p4entity.TableEntry(e.id(table), a, matches, params...)
	if lpm >= 0 {
		for i, fm := range ent.GetTableEntry().Match {
			fm.FieldMatchType = &p4v1.FieldMatch_Lpm{Lpm: &p4v1.FieldMatch_LPM{Value: matches[i], PrefixLen: lpm}}
		}
	}
	return ent
}

func (e entities) register(name string, v []byte) *p4v1.Entity {
	return p4entity.Register(e.id(name), 0, v)
}

func upd(typ p4v1.Update_Type, e *p4v1.Entity) *p4v1.Update { return p4entity.Update(typ, e) }

func u16(v uint16) []byte { return p4entity.U16(v) }
func u32(v uint32) []byte { return p4entity.U32(v) }
func u64(v uint64) []byte { return p4entity.U64(v) }

var ip = []byte{10, 0, 0, 1}

// newSession is a session with spineA whose pipeline is set, and the
// requests recorded so far dropped; it watches the device every poll.
func newSession(t *testing.T, f *fakeONOS, poll time.Duration) *Session {
	t.Helper()
	s, err := f.client(t).Dial(context.Background(), SessionConfig{Switch: spineA, PollInterval: poll})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if err := s.SetPipeline(context.Background(), cacheSwitchInfo(t), nil, 1); err != nil {
		t.Fatal(err)
	}
	f.taken()
	return s
}

// want is a request the driver must send; body is JSON, compared as
// values.
type want struct {
	method, path string
	query        url.Values
	body         string
}

const dev = "device:distcache:spine-a"

// requestCase is one operation of the driver and the requests it sends.
type requestCase struct {
	name string
	// setup runs first; its requests are not compared.
	setup func(t *testing.T, s *Session, e entities)
	run   func(t *testing.T, c *Client, s *Session, e entities) error
	want  []want
	// err, if set, is what run must fail with.
	err error
}

var appQuery = url.Values{"appId": {DefaultAppID}}

func requestCases(t *testing.T) []requestCase {
	netcfg, err := os.ReadFile("../../stratum_pipelines/onos/netcfg.json")
	if err != nil {
		t.Fatal(err)
	}
	bg := context.Background()
	return []requestCase{{
		name: "the fabric's devices in the network configuration, as netcfg.json",
		run:  func(_ *testing.T, c *Client, _ *Session, _ entities) error { return c.ConfigureDevices(bg, spineA) },
		want: []want{{method: "POST", path: "/network/configuration", body: string(netcfg)}},
	}, {
		name: "a switch that left: its configuration, then the device",
		run:  func(_ *testing.T, c *Client, _ *Session, _ entities) error { return c.RemoveDevice(bg, dev) },
		want: []want{{method: "DELETE", path: "/network/configuration/devices/" + dev}, {method: "DELETE", path: "/devices/" + dev}},
	}, {
		name: "device state",
		run: func(t *testing.T, c *Client, _ *Session, _ entities) error {
			d, err := c.Device(bg, dev)
			if err == nil && (!d.Available || d.Role != "MASTER") {
				t.Errorf("device %+v, want available and MASTER", d)
			}
			return err
		},
		want: []want{{method: "GET", path: "/devices/" + dev}},
	}, {
		name: "a read port: switch_address entry as a PI flow rule",
		run: func(_ *testing.T, _ *Client, s *Session, e entities) error {
			return s.Write(bg, upd(p4v1.Update_INSERT, e.entry("switch_address", "serve_reads", -1, [][]byte{ip, u16(8080)}, u32(2))))
		},
		want: []want{{method: "POST", path: "/flows", query: appQuery, body: `{"flows":[{"deviceId":"` + dev + `","tableId":"switch_address",
			"priority":10,"isPermanent":true,
			"selector":{"criteria":[{"type":"PROTOCOL_INDEPENDENT","matches":[
				{"field":"ipv4_dst","match":"exact","value":"0a000001"},{"field":"udp_dst_port","match":"exact","value":"1f90"}]}]},
			"treatment":{"instructions":[{"type":"PROTOCOL_INDEPENDENT","subtype":"ACTION","actionId":"serve_reads","actionParams":{"shard":"00000002"}}]}}]}`}},
	}, {
		name: "identity's default action: a flow rule without matches",
		run: func(_ *testing.T, _ *Client, s *Session, e entities) error {
			id := e.entry("identity", "set_identity", -1, nil, u32(7), u64(3))
			id.GetTableEntry().IsDefaultAction = true
			return s.Write(bg, upd(p4v1.Update_MODIFY, id))
		},
		want: []want{{method: "POST", path: "/flows", query: appQuery, body: `{"flows":[{"deviceId":"` + dev + `","tableId":"identity",
			"priority":10,"isPermanent":true,"selector":{"criteria":[]},
			"treatment":{"instructions":[{"type":"PROTOCOL_INDEPENDENT","subtype":"ACTION","actionId":"set_identity",
				"actionParams":{"node_id":"00000007","map_version":"0000000000000003"}}]}}]}`}},
	}, {
		name: "cache_lookup and storage_route in one request",
		run: func(_ *testing.T, _ *Client, s *Session, e entities) error {
			digest := make([]byte, 16)
			digest[15] = 0xab
			return s.Write(bg,
				upd(p4v1.Update_INSERT, e.entry("cache_lookup", "cached", -1, [][]byte{digest}, u32(5))),
				upd(p4v1.Update_INSERT, e.entry("storage_route", "to_shim", -1, [][]byte{u32(0)}, ip, u16(7000))))
		},
		want: []want{{method: "POST", path: "/flows", query: appQuery, body: `{"flows":[
			{"deviceId":"` + dev + `","tableId":"cache_lookup","priority":10,"isPermanent":true,
			 "selector":{"criteria":[{"type":"PROTOCOL_INDEPENDENT","matches":[{"field":"key_digest","match":"exact","value":"000000000000000000000000000000ab"}]}]},
			 "treatment":{"instructions":[{"type":"PROTOCOL_INDEPENDENT","subtype":"ACTION","actionId":"cached","actionParams":{"slot":"00000005"}}]}},
			{"deviceId":"` + dev + `","tableId":"storage_route","priority":10,"isPermanent":true,
			 "selector":{"criteria":[{"type":"PROTOCOL_INDEPENDENT","matches":[{"field":"shard","match":"exact","value":"00000000"}]}]},
			 "treatment":{"instructions":[{"type":"PROTOCOL_INDEPENDENT","subtype":"ACTION","actionId":"to_shim","actionParams":{"addr":"0a000001","port":"1b58"}}]}}]}`}},
	}, {
		name: "an ipv4_route prefix: lpm match",
		run: func(_ *testing.T, _ *Client, s *Session, e entities) error {
			return s.Write(bg, upd(p4v1.Update_INSERT, e.entry("ipv4_route", "route", 24, [][]byte{{10, 0, 1, 0}},
				u16(3), []byte{2, 0, 0, 0, 0, 1}, []byte{2, 0, 0, 0, 0, 2})))
		},
		want: []want{{method: "POST", path: "/flows", query: appQuery, body: `{"flows":[{"deviceId":"` + dev + `","tableId":"ipv4_route",
			"priority":10,"isPermanent":true,
			"selector":{"criteria":[{"type":"PROTOCOL_INDEPENDENT","matches":[{"field":"ipv4_dst","match":"lpm","value":"0a000100","prefixLength":24}]}]},
			"treatment":{"instructions":[{"type":"PROTOCOL_INDEPENDENT","subtype":"ACTION","actionId":"route",
				"actionParams":{"port":"0003","src_mac":"020000000001","dst_mac":"020000000002"}}]}}]}`}},
	}, {
		name: "a delete removes the flow ONOS named when it was added",
		setup: func(t *testing.T, s *Session, e entities) {
			if err := s.Write(bg, upd(p4v1.Update_INSERT, e.entry("storage_route", "to_shim", -1, [][]byte{u32(1)}, ip, u16(7000)))); err != nil {
				t.Fatal(err)
			}
		},
		run: func(_ *testing.T, _ *Client, s *Session, e entities) error {
			return s.Write(bg, upd(p4v1.Update_DELETE, e.entry("storage_route", "", -1, [][]byte{u32(1)})))
		},
		want: []want{{method: "DELETE", path: "/flows", body: `{"flows":[{"deviceId":"` + dev + `","flowId":"1001"}]}`}},
	}, {
		name: "a delete of a flow the session did not add reads the device's flows",
		setup: func(t *testing.T, s *Session, e entities) {
			other, err := s.c.AddFlows(bg, []Flow{mustFlow(t, s, e.entry("storage_route", "no_shim", -1, [][]byte{u32(4)}))})
			if err != nil || other[0].FlowID != "1001" {
				t.Fatalf("added %v, %v", other, err)
			}
		},
		run: func(_ *testing.T, _ *Client, s *Session, e entities) error {
			return s.Write(bg, upd(p4v1.Update_DELETE, e.entry("storage_route", "", -1, [][]byte{{4}})))
		},
		want: []want{{method: "GET", path: "/flows/" + dev}, {method: "DELETE", path: "/flows", body: `{"flows":[{"deviceId":"` + dev + `","flowId":"1001"}]}`}},
	}, {
		name: "a changed address: delete, then insert, in the updates' order",
		setup: func(t *testing.T, s *Session, e entities) {
			if err := s.Write(bg, upd(p4v1.Update_INSERT, e.entry("switch_address", "serve_coherence", -1, [][]byte{ip, u16(9000)}))); err != nil {
				t.Fatal(err)
			}
		},
		run: func(_ *testing.T, _ *Client, s *Session, e entities) error {
			return s.Write(bg, upd(p4v1.Update_DELETE, e.entry("switch_address", "", -1, [][]byte{ip, u16(9000)})),
				upd(p4v1.Update_INSERT, e.entry("switch_address", "serve_reads", -1, [][]byte{ip, u16(9000)}, u32(0))))
		},
		want: []want{{method: "DELETE", path: "/flows", body: `{"flows":[{"deviceId":"` + dev + `","flowId":"1001"}]}`},
			{method: "POST", path: "/flows", query: appQuery, body: `{"flows":[{"deviceId":"` + dev + `","tableId":"switch_address",
			"priority":10,"isPermanent":true,
			"selector":{"criteria":[{"type":"PROTOCOL_INDEPENDENT","matches":[
				{"field":"ipv4_dst","match":"exact","value":"0a000001"},{"field":"udp_dst_port","match":"exact","value":"2328"}]}]},
			"treatment":{"instructions":[{"type":"PROTOCOL_INDEPENDENT","subtype":"ACTION","actionId":"serve_reads","actionParams":{"shard":"00000000"}}]}}]}`}},
	}, {
		name: "the serving lease is a register: not in the REST API, nothing sent",
		run: func(_ *testing.T, _ *Client, s *Session, e entities) error {
			return s.Write(bg, upd(p4v1.Update_MODIFY, e.entry("switch_address", "serve_coherence", -1, [][]byte{ip, u16(1)})),
				upd(p4v1.Update_MODIFY, e.register("lease_until", u64(5))))
		},
		err: ErrNotInREST,
	}, {
		name: "hot-key digests: not in the REST API",
		run: func(_ *testing.T, _ *Client, s *Session, e entities) error {
			d := &p4v1.Entity{Entity: &p4v1.Entity_DigestEntry{DigestEntry: &p4v1.DigestEntry{DigestId: e.id("hot_key_t")}}}
			return s.Write(bg, upd(p4v1.Update_INSERT, d))
		},
		err: ErrNotInREST,
	}, {
		name: "the clock register and hit counters cannot be read",
		run: func(_ *testing.T, _ *Client, s *Session, e entities) error {
			_, err := s.Read(bg, e.register("clock", nil))
			return err
		},
		err: ErrNotInREST,
	}, {
		name: "packet-outs (FETCHes) cannot be sent",
		run:  func(_ *testing.T, _ *Client, s *Session, _ entities) error { return s.PacketOut([]byte{1, 2, 3}) },
		err:  ErrNotInREST,
	}, {
		name: "table entries read back from the device's flows",
		setup: func(t *testing.T, s *Session, e entities) {
			if err := s.Write(bg, upd(p4v1.Update_INSERT, e.entry("switch_address", "serve_reads", -1, [][]byte{ip, u16(8080)}, u32(2)))); err != nil {
				t.Fatal(err)
			}
		},
		run: func(t *testing.T, _ *Client, s *Session, e entities) error {
			got, err := s.Read(bg, e.entry("switch_address", "", -1, nil))
			if err != nil {
				return err
			}
			want := e.entry("switch_address", "serve_reads", -1, [][]byte{ip, {0x1f, 0x90}}, []byte{2})
			if len(got) != 1 || !protoEqual(got[0], want) {
				t.Errorf("read %v, want %v", got, want)
			}
			return nil
		},
		want: []want{{method: "GET", path: "/flows/" + dev}},
	}}
}

func mustFlow(t *testing.T, s *Session, e *p4v1.Entity) Flow {
	t.Helper()
	f, err := s.tr.toFlow(dev, e.GetTableEntry(), true)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// runRequestCases runs every case against a fake of its own and returns
// each case's requests.
func runRequestCases(t *testing.T, check func(t *testing.T, c requestCase, got []recorded)) {
	for _, c := range requestCases(t) {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeONOS(t)
			s := newSession(t, f, time.Hour) // no device polls among the requests
			e := entities{t: t, info: s.tr.info}
			if c.setup != nil {
				c.setup(t, s, e)
			}
			f.taken()
			err := c.run(t, s.c, s, e)
			if c.err != nil {
				if !errors.Is(err, c.err) {
					t.Fatalf("got %v, want %v", err, c.err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			check(t, c, f.taken())
		})
	}
}

func TestRequests(t *testing.T) {
	runRequestCases(t, func(t *testing.T, c requestCase, got []recorded) {
		if len(got) != len(c.want) {
			t.Fatalf("sent %d requests %v, want %d", len(got), got, len(c.want))
		}
		for i, w := range c.want {
			g := got[i]
			if g.Method != w.method || g.Path != w.path {
				t.Errorf("request %d is %s %s, want %s %s", i, g.Method, g.Path, w.method, w.path)
			}
			if len(g.Query) > 0 || len(w.query) > 0 {
				if !reflect.DeepEqual(g.Query, w.query) {
					t.Errorf("request %d has query %v, want %v", i, g.Query, w.query)
				}
			}
			if !jsonEqual(t, g.Body, w.body) {
				t.Errorf("request %d has body\n%s\nwant\n%s", i, g.Body, w.body)
			}
		}
	})
}

func jsonEqual(t *testing.T, got []byte, want string) bool {
	t.Helper()
	if len(got) == 0 || want == "" {
		return len(got) == 0 && want == ""
	}
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("body %s: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("wanted body %s: %v", want, err)
	}
	return reflect.DeepEqual(g, w)
}

package p4rtserver_test

import (
	"context"
	"encoding/binary"
	"strings"
	"testing"
	"time"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/distcache/distcache/internal/testing/switchtest"
	"github.com/distcache/distcache/softswitch"
	pipelines "github.com/distcache/distcache/stratum_pipelines"
)

const testTimeout = 10 * time.Second

// testServer is a software switch behind a P4Runtime server on loopback.
type testServer struct {
	sw   *softswitch.Switch
	addr string
	info *p4configv1.P4Info
}

func startServer(t *testing.T) *testServer {
	t.Helper()
	sw := switchtest.NewSwitch(t, 1)
	addr := switchtest.Serve(t, sw)
	info, err := pipelines.ProgramP4Info(softswitch.Program)
	if err != nil {
		t.Fatal(err)
	}
	return &testServer{sw: sw, addr: addr, info: info}
}

// controller is one P4Runtime client with its stream.
type controller struct {
	c        p4v1.P4RuntimeClient
	stream   p4v1.P4Runtime_StreamChannelClient
	election *p4v1.Uint128
	cancel   context.CancelFunc
}

func (ts *testServer) connect(t *testing.T, election uint64) *controller {
	t.Helper()
	return ts.open(t, &p4v1.Uint128{Low: election})
}

// connectBackupOnly connects a controller without an election id.
func (ts *testServer) connectBackupOnly(t *testing.T) *controller {
	t.Helper()
	return ts.open(t, nil)
}

func (ts *testServer) open(t *testing.T, election *p4v1.Uint128) *controller {
	t.Helper()
	conn, err := grpc.NewClient(ts.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c := &controller{c: p4v1.NewP4RuntimeClient(conn), election: election, cancel: cancel}
	if c.stream, err = c.c.StreamChannel(ctx); err != nil {
		t.Fatal(err)
	}
	c.arbitrate(t)
	return c
}

// arbitrate sends the controller's election id on its stream.
func (c *controller) arbitrate(t *testing.T) {
	t.Helper()
	if err := c.stream.Send(&p4v1.StreamMessageRequest{Update: &p4v1.StreamMessageRequest_Arbitration{
		Arbitration: &p4v1.MasterArbitrationUpdate{DeviceId: 1, ElectionId: c.election}}}); err != nil {
		t.Fatal(err)
	}
}

// next is the next stream message of the kind want returns non-nil for,
// skipping others.
func next[T any](t *testing.T, c *controller, want func(*p4v1.StreamMessageResponse) T) T {
	t.Helper()
	got := make(chan T, 1)
	go func() {
		for {
			m, err := c.stream.Recv()
			if err != nil {
				return
			}
			if v := want(m); any(v) != any(*new(T)) {
				got <- v
				return
			}
		}
	}()
	select {
	case v := <-got:
		return v
	case <-time.After(testTimeout):
		t.Fatal("no stream message of the kind awaited")
		return *new(T)
	}
}

func arbitration(m *p4v1.StreamMessageResponse) *p4v1.MasterArbitrationUpdate {
	return m.GetArbitration()
}

func (c *controller) setPipeline(t *testing.T, info *p4configv1.P4Info, cookie uint64) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	_, err := c.c.SetForwardingPipelineConfig(ctx, &p4v1.SetForwardingPipelineConfigRequest{
		DeviceId: 1, ElectionId: c.election, Action: p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT,
		Config: &p4v1.ForwardingPipelineConfig{P4Info: info, Cookie: &p4v1.ForwardingPipelineConfig_Cookie{Cookie: cookie}},
	})
	return err
}

func (c *controller) write(t *testing.T, updates ...*p4v1.Update) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	_, err := c.c.Write(ctx, &p4v1.WriteRequest{DeviceId: 1, ElectionId: c.election, Updates: updates})
	return err
}

// TestArbitration: the controller with the highest election id ever seen
// is primary (OK), the others backups told ALREADY_EXISTS with that id;
// only the primary may push a pipeline or write; when the primary leaves
// nobody is primary — the backups are told NOT_FOUND, and a controller
// with a lower id that arrives stays a backup — until one re-arbitrates
// with an id at least the highest seen; a backup-only controller (no
// election id) is told who is primary; an election id another controller
// holds is refused.
func TestArbitration(t *testing.T) {
	ts := startServer(t)
	low := ts.connect(t, 5)
	if a := next(t, low, arbitration); codes.Code(a.Status.Code) != codes.OK {
		t.Fatalf("the only controller: %v", a.Status)
	}
	high := ts.connect(t, 9)
	if a := next(t, high, arbitration); codes.Code(a.Status.Code) != codes.OK || a.ElectionId.Low != 9 {
		t.Fatalf("the higher election id: %v", a)
	}
	if a := next(t, low, arbitration); codes.Code(a.Status.Code) != codes.AlreadyExists || a.ElectionId.Low != 9 {
		t.Fatalf("the backup: %v", a)
	}
	if err := low.setPipeline(t, ts.info, 1); status.Code(err) != codes.PermissionDenied {
		t.Errorf("a backup's pipeline: %v", err)
	}
	if err := high.setPipeline(t, ts.info, 1); err != nil {
		t.Fatalf("the primary's pipeline: %v", err)
	}
	high.cancel()
	if a := next(t, low, arbitration); codes.Code(a.Status.Code) != codes.NotFound || a.ElectionId.Low != 9 {
		t.Fatalf("after the primary left: %v", a)
	}
	if err := low.setPipeline(t, ts.info, 2); status.Code(err) != codes.PermissionDenied {
		t.Errorf("a backup's pipeline with no primary: %v", err)
	}
	late := ts.connect(t, 7)
	if a := next(t, late, arbitration); codes.Code(a.Status.Code) != codes.NotFound || a.ElectionId.Low != 9 {
		t.Fatalf("an id below the highest seen, with no primary: %v", a)
	}
	watcher := ts.connectBackupOnly(t)
	if a := next(t, watcher, arbitration); codes.Code(a.Status.Code) != codes.NotFound {
		t.Fatalf("a backup-only controller with no primary: %v", a)
	}

	low.election = &p4v1.Uint128{High: 1, Low: 5}
	low.arbitrate(t)
	if a := next(t, low, arbitration); codes.Code(a.Status.Code) != codes.OK || a.ElectionId.High != 1 {
		t.Fatalf("a backup that re-arbitrated above the highest seen: %v", a)
	}
	for name, c := range map[string]*controller{"the late backup": late, "the backup-only controller": watcher} {
		if a := next(t, c, arbitration); codes.Code(a.Status.Code) != codes.AlreadyExists || a.ElectionId.High != 1 {
			t.Fatalf("%s after the new primary: %v", name, a)
		}
	}
	if err := low.setPipeline(t, ts.info, 3); err != nil {
		t.Errorf("the new primary's pipeline: %v", err)
	}
	dup := ts.connect(t, 7)
	if _, err := dup.stream.Recv(); status.Code(err) != codes.InvalidArgument {
		t.Errorf("a duplicate election id: %v", err)
	}
}

// TestPipelineAndWrites: a P4Info that is not the program's is refused
// with what differs; the program's is installed and read back with its
// cookie; a Write with a bad update fails with one p4.v1.Error per update
// while applying the good ones.
func TestPipelineAndWrites(t *testing.T) {
	ts := startServer(t)
	c := ts.connect(t, 1)
	next(t, c, arbitration)
	bad := &p4configv1.P4Info{PkgInfo: &p4configv1.PkgInfo{Arch: "tna"}}
	if err := c.setPipeline(t, bad, 1); status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), `architecture "tna"`) {
		t.Errorf("another program's P4Info: %v", err)
	}
	if err := c.setPipeline(t, ts.info, 77); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	got, err := c.c.GetForwardingPipelineConfig(ctx, &p4v1.GetForwardingPipelineConfigRequest{DeviceId: 1, ResponseType: p4v1.GetForwardingPipelineConfigRequest_COOKIE_ONLY})
	if err != nil || got.Config.Cookie.Cookie != 77 || got.Config.P4Info != nil {
		t.Errorf("cookie %v, %v", got, err)
	}

	lookup := objectID(ts.info, "cache_lookup")
	entry := func(digest byte, slot uint32) *p4v1.Update {
		return &p4v1.Update{Type: p4v1.Update_INSERT, Entity: &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{
			TableId: lookup,
			Match:   []*p4v1.FieldMatch{{FieldId: 1, FieldMatchType: &p4v1.FieldMatch_Exact_{Exact: &p4v1.FieldMatch_Exact{Value: []byte{digest}}}}},
			Action: &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: &p4v1.Action{ActionId: objectID(ts.info, "cached"),
				Params: []*p4v1.Action_Param{{ParamId: 1, Value: binary.BigEndian.AppendUint32(nil, slot)}}}}},
		}}}}
	}
	err = c.write(t, entry(1, 1), entry(1, 2), entry(2, 3))
	st, _ := status.FromError(err)
	if st.Code() != codes.Unknown || len(st.Details()) != 3 {
		t.Fatalf("write: %v with %d details", err, len(st.Details()))
	}
	want := []codes.Code{codes.OK, codes.AlreadyExists, codes.OK}
	for i, d := range st.Details() {
		if e, ok := d.(*p4v1.Error); !ok || codes.Code(e.CanonicalCode) != want[i] {
			t.Errorf("update %d: %v, want %s", i, d, want[i])
		}
	}
	rs, err := c.c.Read(ctx, &p4v1.ReadRequest{DeviceId: 1, Entities: []*p4v1.Entity{{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{TableId: lookup}}}}})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		r, err := rs.Recv()
		if err != nil {
			break
		}
		n += len(r.Entities)
	}
	if n != 2 {
		t.Errorf("read %d entries, want 2", n)
	}
}

func objectID(info *p4configv1.P4Info, name string) uint32 {
	id, _ := pipelines.ObjectID(info, name)
	return id
}

func (c *controller) push(t *testing.T, action p4v1.SetForwardingPipelineConfigRequest_Action, info *p4configv1.P4Info, device []byte, cookie uint64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if _, err := c.c.SetForwardingPipelineConfig(ctx, &p4v1.SetForwardingPipelineConfigRequest{
		DeviceId: 1, ElectionId: c.election, Action: action,
		Config: &p4v1.ForwardingPipelineConfig{P4Info: info, P4DeviceConfig: device, Cookie: &p4v1.ForwardingPipelineConfig_Cookie{Cookie: cookie}},
	}); err != nil {
		t.Fatalf("%s: %v", action, err)
	}
}

// read counts the entities the filter selects.
func (c *controller) read(t *testing.T, filter *p4v1.Entity) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	rs, err := c.c.Read(ctx, &p4v1.ReadRequest{DeviceId: 1, Entities: []*p4v1.Entity{filter}})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		r, err := rs.Recv()
		if err != nil {
			return n
		}
		n += len(r.Entities)
	}
}

// TestReconcileKeepsState: the device config of each commit is stored as
// sent and read back; RECONCILE_AND_COMMIT of the P4Info the switch runs
// keeps its table entries and configured digests, VERIFY_AND_COMMIT
// starts it over.
func TestReconcileKeepsState(t *testing.T) {
	ts := startServer(t)
	c := ts.connect(t, 1)
	next(t, c, arbitration)
	deviceConfig := func() ([]byte, uint64) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		got, err := c.c.GetForwardingPipelineConfig(ctx, &p4v1.GetForwardingPipelineConfigRequest{DeviceId: 1, ResponseType: p4v1.GetForwardingPipelineConfigRequest_DEVICE_CONFIG_AND_COOKIE})
		if err != nil {
			t.Fatal(err)
		}
		return got.Config.P4DeviceConfig, got.Config.Cookie.GetCookie()
	}
	build1, build2 := []byte("\x00build 1\xff"), []byte("\x00build 2, upgraded\xff")
	c.push(t, p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT, ts.info, build1, 1)
	if dc, cookie := deviceConfig(); string(dc) != string(build1) || cookie != 1 {
		t.Fatalf("device config %q cookie %d, want %q and 1", dc, cookie, build1)
	}
	route := &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{TableId: objectID(ts.info, "storage_route")}}}
	digest := &p4v1.Entity{Entity: &p4v1.Entity_DigestEntry{DigestEntry: &p4v1.DigestEntry{DigestId: objectID(ts.info, "hot_key_t")}}}
	insertRoute := &p4v1.Update{Type: p4v1.Update_INSERT, Entity: &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{
		TableId: objectID(ts.info, "storage_route"),
		Match:   []*p4v1.FieldMatch{{FieldId: 1, FieldMatchType: &p4v1.FieldMatch_Exact_{Exact: &p4v1.FieldMatch_Exact{Value: []byte{0}}}}},
		Action: &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: &p4v1.Action{ActionId: objectID(ts.info, "to_shim"),
			Params: []*p4v1.Action_Param{{ParamId: 1, Value: []byte{127, 0, 0, 1}}, {ParamId: 2, Value: []byte{0x1b, 0x58}}}}}},
	}}}}
	configDigest := &p4v1.Update{Type: p4v1.Update_INSERT, Entity: &p4v1.Entity{Entity: &p4v1.Entity_DigestEntry{DigestEntry: &p4v1.DigestEntry{
		DigestId: objectID(ts.info, "hot_key_t"), Config: &p4v1.DigestEntry_Config{MaxListSize: 1}}}}}
	if err := c.write(t, insertRoute, configDigest); err != nil {
		t.Fatal(err)
	}

	c.push(t, p4v1.SetForwardingPipelineConfigRequest_RECONCILE_AND_COMMIT, ts.info, build2, 2)
	if dc, cookie := deviceConfig(); string(dc) != string(build2) || cookie != 2 {
		t.Errorf("after the upgrade: device config %q cookie %d, want %q and 2", dc, cookie, build2)
	}
	if n, d := c.read(t, route), c.read(t, digest); n != 1 || d != 1 {
		t.Errorf("after RECONCILE_AND_COMMIT: %d routes and %d digests configured, want both kept", n, d)
	}

	c.push(t, p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT, ts.info, build1, 3)
	if n, d := c.read(t, route), c.read(t, digest); n != 0 || d != 0 {
		t.Errorf("after VERIFY_AND_COMMIT: %d routes and %d digests configured, want none", n, d)
	}
}

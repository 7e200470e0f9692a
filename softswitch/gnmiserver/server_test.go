package gnmiserver

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	gpb "github.com/openconfig/gnmi/proto/gnmi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// ports is a Target whose second port can be taken down.
type ports struct{ down atomic.Bool }

func (p *ports) Ports() []Port {
	return []Port{{Name: "coherence", ID: 1, Up: true}, {Name: "read-0", ID: 2, Up: !p.down.Load()}}
}

func client(t *testing.T, target Target) gpb.GNMIClient {
	t.Helper()
	lis, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	New(target).Register(g)
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(g.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return gpb.NewGNMIClient(conn)
}

func operStatus(name string) *gpb.Path {
	return &gpb.Path{Elem: []*gpb.PathElem{{Name: "interfaces"}, {Name: "interface", Key: map[string]string{"name": name}}, {Name: "state"}, {Name: "oper-status"}}}
}

func TestGet(t *testing.T) {
	c := client(t, &ports{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tests := []struct {
		name  string
		path  *gpb.Path
		count int
		code  codes.Code
	}{
		{"one port", operStatus("read-0"), 1, codes.OK},
		{"every port", operStatus("*"), 2, codes.OK},
		{"everything", &gpb.Path{Elem: []*gpb.PathElem{{Name: "interfaces"}}}, 8, codes.OK},
		{"below", &gpb.Path{Elem: []*gpb.PathElem{{Name: "interfaces"}, {Name: "..."}}}, 8, codes.OK},
		{"no such port", operStatus("read-9"), 0, codes.NotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := c.Get(ctx, &gpb.GetRequest{Path: []*gpb.Path{tt.path}, Encoding: gpb.Encoding_JSON_IETF})
			if status.Code(err) != tt.code {
				t.Fatalf("error %v, want %s", err, tt.code)
			}
			if err == nil && len(r.Notification[0].Update) != tt.count {
				t.Errorf("%d updates, want %d", len(r.Notification[0].Update), tt.count)
			}
		})
	}
	r, err := c.Get(ctx, &gpb.GetRequest{Path: []*gpb.Path{operStatus("coherence")}})
	if err != nil || r.Notification[0].Update[0].Val.GetStringVal() != "UP" {
		t.Errorf("oper-status %v, %v", r, err)
	}
}

// TestSubscribeStreamOnChange: a STREAM subscription gets the values and
// a sync, then the change of a port's state.
func TestSubscribeStreamOnChange(t *testing.T) {
	p := &ports{}
	c := client(t, p)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sub, err := c.Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := sub.Send(&gpb.SubscribeRequest{Request: &gpb.SubscribeRequest_Subscribe{Subscribe: &gpb.SubscriptionList{
		Mode: gpb.SubscriptionList_STREAM, Encoding: gpb.Encoding_JSON_IETF,
		Subscription: []*gpb.Subscription{{Path: operStatus("read-0"), Mode: gpb.SubscriptionMode_ON_CHANGE}},
	}}}); err != nil {
		t.Fatal(err)
	}
	first, err := sub.Recv()
	if err != nil || first.GetUpdate().Update[0].Val.GetStringVal() != "UP" {
		t.Fatalf("first %v, %v", first, err)
	}
	if sync, err := sub.Recv(); err != nil || !sync.GetSyncResponse() {
		t.Fatalf("sync %v, %v", sync, err)
	}
	p.down.Store(true)
	change, err := sub.Recv()
	if err != nil || change.GetUpdate().Update[0].Val.GetStringVal() != "DOWN" {
		t.Fatalf("change %v, %v", change, err)
	}
}

// Package gnmiserver serves gNMI (openconfig/gnmi v0.14.1) for the
// software switch: the OpenConfig interface state of its ports —
// /interfaces/interface[name=…]/state/{name,ifindex,oper-status,admin-status} —
// by Get and by Subscribe (ONCE, POLL, and STREAM with SAMPLE or
// ON_CHANGE), which a controller watches to see the switch and its ports
// alive. Set is not supported: the switch's configuration is its
// command line.
package gnmiserver

import (
	"context"
	"fmt"
	"time"

	gpb "github.com/openconfig/gnmi/proto/gnmi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Version is the gNMI specification version served.
const Version = "0.10.0"

// minSample bounds a SAMPLE subscription's interval from below.
const minSample = 100 * time.Millisecond

// Port is one port of the target and its state.
type Port struct {
	Name string
	ID   uint64 // the ifindex, P4Runtime's port number
	Up   bool
}

// Target is what the server reports on.
type Target interface {
	Ports() []Port
}

// Server is a gNMI server for one target.
type Server struct {
	gpb.UnimplementedGNMIServer
	t Target
}

// New returns a server reporting t's ports.
func New(t Target) *Server { return &Server{t: t} }

// Register adds the gNMI service to g.
func (s *Server) Register(g *grpc.Server) { gpb.RegisterGNMIServer(g, s) }

// Capabilities names the model and encodings served.
func (s *Server) Capabilities(context.Context, *gpb.CapabilityRequest) (*gpb.CapabilityResponse, error) {
	return &gpb.CapabilityResponse{
		SupportedModels:    []*gpb.ModelData{{Name: "openconfig-interfaces", Organization: "OpenConfig working group", Version: "3.0.0"}},
		SupportedEncodings: []gpb.Encoding{gpb.Encoding_JSON_IETF, gpb.Encoding_PROTO},
		GNMIVersion:        Version,
	}, nil
}

// leaf is one value of the model.
type leaf struct {
	path  []*gpb.PathElem
	value *gpb.TypedValue
}

func stringVal(v string) *gpb.TypedValue {
	return &gpb.TypedValue{Value: &gpb.TypedValue_StringVal{StringVal: v}}
}

// leaves are the model's values now.
func (s *Server) leaves() []leaf {
	var out []leaf
	for _, p := range s.t.Ports() {
		oper := "DOWN"
		if p.Up {
			oper = "UP"
		}
		for _, l := range []struct {
			name  string
			value *gpb.TypedValue
		}{
			{"name", stringVal(p.Name)}, {"ifindex", &gpb.TypedValue{Value: &gpb.TypedValue_UintVal{UintVal: p.ID}}},
			{"oper-status", stringVal(oper)}, {"admin-status", stringVal("UP")},
		} {
			out = append(out, leaf{path: []*gpb.PathElem{
				{Name: "interfaces"}, {Name: "interface", Key: map[string]string{"name": p.Name}},
				{Name: "state"}, {Name: l.name},
			}, value: l.value})
		}
	}
	return out
}

// matches reports whether query (a path that may use "*" for a name or a
// key, omit keys, or end in "...") selects leaf.
func matches(query, leaf []*gpb.PathElem) bool {
	for i, q := range query {
		if q.Name == "..." {
			return true
		}
		if i >= len(leaf) {
			return false
		}
		l := leaf[i]
		if q.Name != "*" && q.Name != l.Name {
			return false
		}
		for k, v := range q.Key {
			if v != "*" && l.Key[k] != v {
				return false
			}
		}
	}
	return true
}

func join(prefix, p *gpb.Path) []*gpb.PathElem {
	return append(append([]*gpb.PathElem(nil), prefix.GetElem()...), p.GetElem()...)
}

// notification holds the updates of the leaves the paths select.
func (s *Server) notification(prefix *gpb.Path, paths []*gpb.Path, enc gpb.Encoding) (*gpb.Notification, error) {
	if enc != gpb.Encoding_JSON && enc != gpb.Encoding_JSON_IETF && enc != gpb.Encoding_PROTO {
		return nil, status.Errorf(codes.Unimplemented, "encoding %s: JSON, JSON_IETF or PROTO", enc)
	}
	n := &gpb.Notification{Timestamp: time.Now().UnixNano(), Prefix: prefix}
	for _, l := range s.leaves() {
		for _, p := range paths {
			if matches(join(prefix, p), l.path) {
				n.Update = append(n.Update, &gpb.Update{
					Path: &gpb.Path{Elem: l.path[len(prefix.GetElem()):]},
					Val:  l.value,
				})
				break
			}
		}
	}
	return n, nil
}

// Get returns the values the request's paths select; a path that selects
// nothing is NOT_FOUND.
func (s *Server) Get(_ context.Context, req *gpb.GetRequest) (*gpb.GetResponse, error) {
	resp := &gpb.GetResponse{}
	for _, p := range req.Path {
		n, err := s.notification(req.Prefix, []*gpb.Path{p}, req.Encoding)
		if err != nil {
			return nil, err
		}
		if len(n.Update) == 0 {
			return nil, status.Errorf(codes.NotFound, "no data at %s", pathString(join(req.Prefix, p)))
		}
		resp.Notification = append(resp.Notification, n)
	}
	return resp, nil
}

// Subscribe serves ONCE (the values, then sync), POLL (the values at each
// poll) and STREAM (the values and sync, then every sample interval for
// SAMPLE subscriptions and whenever a value changes otherwise).
func (s *Server) Subscribe(srv grpc.BidiStreamingServer[gpb.SubscribeRequest, gpb.SubscribeResponse]) error {
	req, err := srv.Recv()
	if err != nil {
		return nil //nolint:nilerr // the client ended the stream
	}
	list := req.GetSubscribe()
	if list == nil {
		return status.Error(codes.InvalidArgument, "the first request must be a subscription list")
	}
	var paths []*gpb.Path
	for _, sub := range list.Subscription {
		paths = append(paths, sub.Path)
	}
	send := func(sync bool) error {
		n, err := s.notification(list.Prefix, paths, list.Encoding)
		if err != nil {
			return err
		}
		if err := srv.Send(&gpb.SubscribeResponse{Response: &gpb.SubscribeResponse_Update{Update: n}}); err != nil {
			return err
		}
		if sync {
			return srv.Send(&gpb.SubscribeResponse{Response: &gpb.SubscribeResponse_SyncResponse{SyncResponse: true}})
		}
		return nil
	}
	if err := send(true); err != nil {
		return err
	}
	switch list.Mode {
	case gpb.SubscriptionList_ONCE:
		return nil
	case gpb.SubscriptionList_POLL:
		for {
			r, err := srv.Recv()
			if err != nil {
				return nil //nolint:nilerr // the client ended the stream
			}
			if r.GetPoll() == nil {
				return status.Error(codes.InvalidArgument, "a POLL subscription takes only polls")
			}
			if err := send(true); err != nil {
				return err
			}
		}
	}
	return s.stream(srv, list, send)
}

// stream sends SAMPLE subscriptions' values every interval, and the
// values whenever they change.
func (s *Server) stream(srv grpc.BidiStreamingServer[gpb.SubscribeRequest, gpb.SubscribeResponse], list *gpb.SubscriptionList, send func(bool) error) error {
	interval := time.Duration(0)
	for _, sub := range list.Subscription {
		if sub.Mode == gpb.SubscriptionMode_SAMPLE {
			d := max(time.Duration(sub.SampleInterval), minSample)
			if interval == 0 || d < interval {
				interval = d
			}
		}
	}
	check := interval
	if check == 0 {
		check = minSample // how often an ON_CHANGE subscription looks for changes
	}
	t := time.NewTicker(check)
	defer t.Stop()
	last := fmt.Sprint(s.t.Ports())
	for {
		select {
		case <-srv.Context().Done():
			return nil
		case <-t.C:
			now := fmt.Sprint(s.t.Ports())
			if interval == 0 && now == last {
				continue
			}
			last = now
			if err := send(false); err != nil {
				return err
			}
		}
	}
}

func pathString(elems []*gpb.PathElem) string {
	s := ""
	for _, e := range elems {
		s += "/" + e.Name
		for k, v := range e.Key {
			s += fmt.Sprintf("[%s=%s]", k, v)
		}
	}
	if s == "" {
		return "/"
	}
	return s
}

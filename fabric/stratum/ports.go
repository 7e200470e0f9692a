package stratum

import (
	"context"
	"crypto/tls"
	"fmt"

	gpb "github.com/openconfig/gnmi/proto/gnmi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
)

// PortState is one port's operational state, as gNMI reports it.
type PortState struct {
	Name string
	Up   bool
}

// operStatus is /interfaces/interface[name=*]/state/oper-status.
var operStatus = &gpb.Path{Elem: []*gpb.PathElem{
	{Name: "interfaces"}, {Name: "interface", Key: map[string]string{"name": "*"}}, {Name: "state"}, {Name: "oper-status"},
}}

// WatchPorts subscribes to the operational state of every port of the
// switch at addr (its gNMI endpoint) and calls fn with each state as it
// is first reported and whenever it changes, until ctx ends or the stream
// breaks, which it returns.
func WatchPorts(ctx context.Context, addr string, tlsConfig *tls.Config, fn func(PortState)) error {
	creds := insecure.NewCredentials()
	if tlsConfig != nil {
		creds = credentials.NewTLS(tlsConfig)
	}
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		return fmt.Errorf("cannot dial the gNMI endpoint %s: %w", addr, err)
	}
	defer cc.Close()
	sub, err := gpb.NewGNMIClient(cc).Subscribe(ctx)
	if err != nil {
		return fmt.Errorf("cannot subscribe to the ports of %s: %w", addr, err)
	}
	if err := sub.Send(&gpb.SubscribeRequest{Request: &gpb.SubscribeRequest_Subscribe{Subscribe: &gpb.SubscriptionList{
		Mode: gpb.SubscriptionList_STREAM, Encoding: gpb.Encoding_PROTO,
		Subscription: []*gpb.Subscription{{Path: operStatus, Mode: gpb.SubscriptionMode_ON_CHANGE}},
	}}}); err != nil {
		return fmt.Errorf("cannot subscribe to the ports of %s: %w", addr, err)
	}
	for {
		r, err := sub.Recv()
		if err != nil {
			return fmt.Errorf("the port subscription of %s ended: %w", addr, err)
		}
		n := r.GetUpdate()
		for _, u := range n.GetUpdate() {
			elems := append(append([]*gpb.PathElem(nil), n.GetPrefix().GetElem()...), u.GetPath().GetElem()...)
			name := ""
			for _, e := range elems {
				if e.Name == "interface" {
					name = e.Key["name"]
				}
			}
			if name != "" {
				fn(PortState{Name: name, Up: u.GetVal().GetStringVal() == "UP"})
			}
		}
	}
}

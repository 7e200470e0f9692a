package main

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/distcache/distcache/gateway"
)

// TestClusterFaceFlags checks the gateway's cluster face flags: off by
// default; the address announced is --redis-addr's IP, $POD_IP when that
// listens on every address, or --cluster-announce-ip, at --redis-addr's
// port; --cluster-peers-dns names the peers; and what cannot be announced
// is refused with the flag to set.
func TestClusterFaceFlags(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		podIP     string
		want      string // the announced address; "" for no face
		wantPeers string
		wantErr   string
	}{
		{name: "off", args: []string{"--redis-addr", "127.0.0.1:6379"}},
		{name: "listening IP", args: []string{"--redis-addr", "127.0.0.1:7001", "--cluster-face"}, want: "127.0.0.1:7001"},
		{name: "every address, POD_IP", args: []string{"--redis-addr", "0.0.0.0:6379", "--cluster-face"}, podIP: "198.18.0.12", want: "198.18.0.12:6379"},
		{name: "no host, POD_IP", args: []string{"--redis-addr", ":6380", "--cluster-face"}, podIP: "198.18.0.13", want: "198.18.0.13:6380"},
		{name: "announce IP over the rest", args: []string{"--redis-addr", "0.0.0.0:6379", "--cluster-face", "--cluster-announce-ip", "203.0.113.5"},
			podIP: "198.18.0.12", want: "203.0.113.5:6379"},
		{name: "peers", args: []string{"--redis-addr", "0.0.0.0:6379", "--cluster-face", "--cluster-peers-dns", "shop-gateway-peers.shop.svc"},
			podIP: "198.18.0.12", want: "198.18.0.12:6379", wantPeers: "shop-gateway-peers.shop.svc"},
		{name: "every address, no POD_IP", args: []string{"--redis-addr", "0.0.0.0:6379", "--cluster-face"}, wantErr: "--cluster-announce-ip"},
		{name: "a name", args: []string{"--redis-addr", "localhost:6379", "--cluster-face"}, wantErr: "--cluster-announce-ip"},
		{name: "unspecified announce IP", args: []string{"--redis-addr", "127.0.0.1:6379", "--cluster-face", "--cluster-announce-ip", "::"}, wantErr: "no IP"},
		{name: "port 0", args: []string{"--redis-addr", "127.0.0.1:0", "--cluster-face"}, wantErr: "no fixed port"},
		{name: "announce IP without the face", args: []string{"--cluster-announce-ip", "198.18.0.1"}, wantErr: "without --cluster-face"},
		{name: "peers without the face", args: []string{"--cluster-peers-dns", "x"}, wantErr: "without --cluster-face"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := newGatewayCommand()
			if err := cmd.ParseFlags(tt.args); err != nil {
				t.Fatal(err)
			}
			var face clusterFaceFlags
			face.on, _ = cmd.Flags().GetBool("cluster-face")
			face.announceIP, _ = cmd.Flags().GetString("cluster-announce-ip")
			face.peersDNS, _ = cmd.Flags().GetString("cluster-peers-dns")
			redisAddr, _ := cmd.Flags().GetString("redis-addr")
			got, err := face.config(redisAddr, tt.podIP)
			switch {
			case tt.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one naming %q", err, tt.wantErr)
				}
			case err != nil:
				t.Fatal(err)
			case tt.want == "":
				if got != nil {
					t.Errorf("cluster face %+v, want none", got)
				}
			case got == nil || got.Announce != netip.MustParseAddrPort(tt.want):
				t.Errorf("cluster face %+v, want announced at %s", got, tt.want)
			case tt.wantPeers == "" && got.Peers != nil, tt.wantPeers != "" && got.Peers != gateway.PeerSource(gateway.DNSPeers{Name: tt.wantPeers}):
				t.Errorf("peers %+v, want %q", got.Peers, tt.wantPeers)
			}
		})
	}
}

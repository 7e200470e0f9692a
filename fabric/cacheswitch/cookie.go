package cacheswitch

import (
	"crypto/sha256"
	"encoding/binary"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	"google.golang.org/protobuf/proto"
)

// PipelineCookie is the cookie a runner pushes with info and deviceConfig:
// the first 8 bytes of a SHA-256 of both (the P4Info in protobuf's
// deterministic encoding), so that equal pipelines have equal cookies and
// a controller that takes a switch over can tell from the cookie alone
// whether the switch runs its pipeline. The deterministic encoding may
// change with the protobuf library: a controller built with another one
// may then see another cookie and push the pipeline again (the switch
// starts empty, which is safe).
func PipelineCookie(info *p4configv1.P4Info, deviceConfig []byte) uint64 {
	b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(info) // a P4Info always encodes
	h := sha256.New()
	h.Write(binary.BigEndian.AppendUint64(nil, uint64(len(b))))
	h.Write(b)
	h.Write(deviceConfig)
	return binary.BigEndian.Uint64(h.Sum(nil))
}

package malformed

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
)

// RESPKind is a class of bad input on a gateway connection.
type RESPKind int

// Kinds of bad RESP.
const (
	HugeBulk     RESPKind = iota // a bulk length of 2 GB, then more bytes than a command may hold
	EndlessLine                  // an inline command that never ends
	InvalidUTF8                  // well-formed commands whose keys and values are not UTF-8
	GarbagePipe                  // a pipeline of random bytes, RESP fragments and CRLFs
	BadMultibulk                 // malformed array and bulk headers
	respKinds
)

var respNames = [...]string{"huge-bulk", "endless-line", "invalid-utf8", "garbage-pipeline", "bad-multibulk"}

func (k RESPKind) String() string { return respNames[k] }

// overCommand is more than a gateway's default --max-command-bytes
// (1 MiB + 64 KiB): what a command too large sends.
const overCommand = 1<<20 + 128<<10

// resp is the bytes of one connection of kind k.
func resp(rng *rand.Rand, k RESPKind) []byte {
	switch k {
	case HugeBulk:
		return append([]byte("*2\r\n$3\r\nSET\r\n$2000000000\r\n"), bytes.Repeat([]byte("x"), overCommand)...)
	case EndlessLine:
		return bytes.Repeat([]byte("GET "+KeyPrefix), overCommand/14)
	case InvalidUTF8:
		k := KeyPrefix + "\xff\xfe" + fmt.Sprint(rng.IntN(100))
		return fmt.Appendf(nil, "SET %s \xc3\x28\xa0\xa1\r\nGET %s\r\n*3\r\n$3\r\nSET\r\n$%d\r\n%s\xed\xa0\x80\r\n$2\r\n\xf8\x88\r\nAPPEND %s \xe2\x82\r\n",
			k, k, len(KeyPrefix)+3, KeyPrefix, k)
	case GarbagePipe:
		var b []byte
		for range 1 + rng.IntN(32) {
			switch rng.IntN(4) {
			case 0:
				b = append(b, "\r\n"...)
			case 1:
				b = fmt.Appendf(b, "*%d\r\n$%d\r\n", rng.IntN(5)-1, rng.IntN(20)-2)
			default:
				for range rng.IntN(64) {
					b = append(b, byte(rng.Uint32()))
				}
			}
		}
		return b
	default: // BadMultibulk
		cases := []string{"*1\r\n:5\r\n", "*-3\r\n", "*1\r\n$x\r\n", "*1\r\n$2\r\nabc\r\n", "*99999999999\r\n", "*2\r\n$3\r\nGET\r\n$-7\r\n", "\"unbalanced\r\n"}
		return []byte(cases[rng.IntN(len(cases))])
	}
}

// httpRequest is a garbage request: a method, a path and a body. For the
// control API (control true) the paths name no process and never the
// shutdown endpoint.
func httpRequest(rng *rand.Rand, control bool) (method, path string, body []byte) {
	bodies := []string{`{"a":[1,2,{"b":`, `{"delay":"-1s","name":null}`, "\xff\xfe{\"\xc3\x28\":1}", `[[[[[[[[[[[[[[[[[[[[`,
		`{"mapVersion":"x","units":-1e999}`, strings.Repeat(`{"k":`, 200), `null`, ""}
	body = []byte(bodies[rng.IntN(len(bodies))])
	methods := []string{http.MethodPost, http.MethodPut, http.MethodGet, http.MethodDelete, http.MethodPatch}
	method = methods[rng.IntN(len(methods))]
	name := fmt.Sprintf("%s%d", strings.TrimSuffix(KeyPrefix, ":"), rng.IntN(100))
	var paths []string
	if control {
		paths = []string{"/v1/status", "/v1/work", "/v1/processes/" + name + "/kill", "/v1/processes/" + name + "/slow?delay=%ZZ",
			"/v1/processes/" + name + "/slow?delay=-5s", "/v1/processes/" + name + "/pause", "/v1/" + name, "/v2/status", "/%2e%2e/v1/status"}
	} else {
		paths = []string{"/status", "/work", "/hotkeys", "/mrc", "/metrics", "/healthz", "/" + name, "/status?x=%ZZ"}
	}
	return method, paths[rng.IntN(len(paths))], body
}

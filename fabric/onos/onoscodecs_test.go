package onos

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
)

// codecCase is one body for the harness of onoscodecs/ (Harness.java).
type codecCase struct {
	Name  string          `json:"name"`
	Kind  string          `json:"kind"` // flows, flowIds, netcfg
	AppID string          `json:"appId,omitempty"`
	Body  json.RawMessage `json:"body"`
}

type codecVerdict struct {
	Name    string `json:"name"`
	OK      bool   `json:"ok"`
	Error   string `json:"error"`
	Encoded []Flow `json:"encoded"`
}

// runCodecs decodes every case with ONOS 2.7.0's codecs, in one JVM.
func runCodecs(t *testing.T, cases []codecCase) map[string]codecVerdict {
	t.Helper()
	cpFile := toolPath(t, "DISTCACHE_ONOS_CODECS_CLASSPATH", "onos-codecs", "classpath", "onos-codecs")
	java, err := exec.LookPath("java")
	if err != nil {
		t.Skipf("Java is missing (`make onos-codecs` installs openjdk-17-jdk-headless): %v", err)
	}
	cp, err := os.ReadFile(cpFile)
	if err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(t.TempDir(), "cases.json")
	b, err := json.Marshal(cases)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(in, b, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), java, "-cp", strings.TrimSpace(string(cp)), "org.distcache.onoscodecs.Harness", in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the ONOS codec harness failed: %v\n%s", err, stderr.String())
	}
	verdicts := map[string]codecVerdict{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var v codecVerdict
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("harness line %q: %v", sc.Text(), err)
		}
		verdicts[v.Name] = v
	}
	if len(verdicts) != len(cases) {
		t.Fatalf("the harness answered %d cases of %d:\n%s\n%s", len(verdicts), len(cases), out, stderr.String())
	}
	return verdicts
}

// TestBodiesDecodeWithONOSCodecs decodes every body the driver sends
// with ONOS 2.7.0's own JSON codecs (FlowRuleCodec and the criterion and
// instruction codecs behind it for flow rules, BasicDeviceConfig for the
// network configuration), reads ONOS's encoding of the decoded flow rules
// — what GET /flows answers — back into the same table entries, and
// checks that the harness rejects malformed bodies.
func TestBodiesDecodeWithONOSCodecs(t *testing.T) {
	var cases []codecCase
	posted := map[string][]Flow{}
	for i, r := range requestsOfAllCases(t) {
		c := codecCase{Name: fmt.Sprintf("%d %s %s", i, r.Method, r.Path), Body: r.Body}
		switch {
		case r.Method == "POST" && r.Path == "/flows":
			c.Kind, c.AppID = "flows", r.Query.Get("appId")
			var fl flowList
			if err := json.Unmarshal(r.Body, &fl); err != nil {
				t.Fatal(err)
			}
			posted[c.Name] = fl.Flows
		case r.Method == "DELETE" && r.Path == "/flows":
			c.Kind = "flowIds"
		case r.Method == "POST" && r.Path == "/network/configuration":
			c.Kind = "netcfg"
		default:
			if len(r.Body) > 0 {
				t.Fatalf("%s %s has a body the test does not check", r.Method, r.Path)
			}
			continue
		}
		cases = append(cases, c)
	}
	malformed := []codecCase{
		{Name: "bad: unknown match kind", Kind: "flows", AppID: DefaultAppID, Body: json.RawMessage(`{"flows":[{"priority":10,"isPermanent":true,
			"deviceId":"device:a","tableId":"shard","selector":{"criteria":[{"type":"PROTOCOL_INDEPENDENT","matches":[{"field":"shard","match":"exactly","value":"01"}]}]},
			"treatment":{"instructions":[{"type":"PROTOCOL_INDEPENDENT","subtype":"ACTION","actionId":"no_shim"}]}}]}`)},
		{Name: "bad: no isPermanent", Kind: "flows", AppID: DefaultAppID, Body: json.RawMessage(`{"flows":[{"priority":10,
			"deviceId":"device:a","tableId":"shard","selector":{"criteria":[]},
			"treatment":{"instructions":[{"type":"PROTOCOL_INDEPENDENT","subtype":"ACTION","actionId":"no_shim"}]}}]}`)},
		{Name: "bad: PI criterion without matches", Kind: "flows", AppID: DefaultAppID, Body: json.RawMessage(`{"flows":[{"priority":10,"isPermanent":true,
			"deviceId":"device:a","tableId":"shard","selector":{"criteria":[{"type":"PROTOCOL_INDEPENDENT","matches":[]}]},
			"treatment":{"instructions":[{"type":"PROTOCOL_INDEPENDENT","subtype":"ACTION","actionId":"no_shim"}]}}]}`)},
		{Name: "bad: flow ids without a flow id", Kind: "flowIds", Body: json.RawMessage(`{"flows":[{"deviceId":"device:a"}]}`)},
		{Name: "bad: netcfg with a field BasicDeviceConfig does not allow", Kind: "netcfg", Body: json.RawMessage(`{"devices":{"device:a":
			{"basic":{"managementAddress":"grpc://127.0.0.1:9559?device_id=1","driver":"stratum-bmv2","pipeconf":"p","p4info":"x"}}}}`)},
	}
	cases = append(cases, malformed...)
	verdicts := runCodecs(t, cases)
	tr := newTranslator(cacheSwitchInfo(t))
	for _, c := range cases[:len(cases)-len(malformed)] {
		v := verdicts[c.Name]
		if !v.OK {
			t.Errorf("ONOS's codecs reject %s: %s\n%s", c.Name, v.Error, c.Body)
			continue
		}
		flows := posted[c.Name]
		if len(v.Encoded) != len(flows) {
			t.Errorf("%s: ONOS encoded %d flows of %d", c.Name, len(v.Encoded), len(flows))
			continue
		}
		for i, enc := range v.Encoded {
			if enc.AppID != c.AppID {
				t.Errorf("%s: ONOS holds flow %d as application %q, want %q", c.Name, i, enc.AppID, c.AppID)
			}
			want, err := tr.toEntry(flows[i])
			if err != nil {
				t.Fatal(err)
			}
			got, err := tr.toEntry(enc)
			if err != nil {
				t.Errorf("%s: ONOS's encoding of flow %d does not read back: %v", c.Name, i, err)
				continue
			}
			if !proto.Equal(got, want) {
				t.Errorf("%s: ONOS's encoding of flow %d reads back as %v, want %v", c.Name, i, got, want)
			}
		}
	}
	for _, c := range malformed {
		if v := verdicts[c.Name]; v.OK {
			t.Errorf("the harness accepts %s", c.Name)
		} else {
			t.Logf("%s: %s", c.Name, v.Error)
		}
	}
}

package onos

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
)

// Flow is a flow rule as ONOS's REST API reads and writes it (ONOS's
// FlowRuleCodec): for a PI table, TableID is the P4Info table name, the
// selector holds at most one PROTOCOL_INDEPENDENT criterion and the
// treatment one PROTOCOL_INDEPENDENT instruction.
type Flow struct {
	// ID is ONOS's flow id, which ONOS computes; set only in its answers.
	ID          string          `json:"id,omitempty"`
	AppID       string          `json:"appId,omitempty"`
	DeviceID    string          `json:"deviceId"`
	TableID     json.RawMessage `json:"tableId"` // a name when written; ONOS answers a number, and the name in TableName
	TableName   string          `json:"tableName,omitempty"`
	Priority    int             `json:"priority"`
	IsPermanent bool            `json:"isPermanent"`
	Timeout     int             `json:"timeout,omitempty"`
	State       string          `json:"state,omitempty"` // of a flow entry: PENDING_ADD, ADDED, FAILED, …
	Selector    Selector        `json:"selector"`
	Treatment   Treatment       `json:"treatment"`
}

// Table is the flow's PI table name.
func (f *Flow) Table() string {
	if f.TableName != "" {
		return f.TableName
	}
	var name string
	if json.Unmarshal(f.TableID, &name) == nil {
		return name
	}
	return string(f.TableID)
}

// Selector is a flow's match.
type Selector struct {
	Criteria []Criterion `json:"criteria"`
}

// Criterion is a PROTOCOL_INDEPENDENT criterion.
type Criterion struct {
	Type    string    `json:"type"`
	Matches []PIMatch `json:"matches,omitempty"`
}

// PIMatch is one field match of a PI criterion; values are hex strings
// without separators (ONOS's HexString).
type PIMatch struct {
	Field        string `json:"field"`
	Match        string `json:"match"` // exact, lpm, ternary, range, optional
	Value        string `json:"value,omitempty"`
	PrefixLength *int   `json:"prefixLength,omitempty"`
	Mask         string `json:"mask,omitempty"`
	LowValue     string `json:"lowValue,omitempty"`
	HighValue    string `json:"highValue,omitempty"`
}

// Treatment is a flow's action.
type Treatment struct {
	Instructions []Instruction `json:"instructions"`
}

// Instruction is a PROTOCOL_INDEPENDENT instruction running a PI action.
type Instruction struct {
	Type         string            `json:"type"`
	Subtype      string            `json:"subtype,omitempty"`
	ActionID     string            `json:"actionId,omitempty"`
	ActionParams map[string]string `json:"actionParams,omitempty"`
}

// FlowRef names a flow rule ONOS holds: its device and ONOS's flow id.
type FlowRef struct {
	DeviceID string `json:"deviceId"`
	FlowID   string `json:"flowId"`
}

type flowList struct {
	Flows []Flow `json:"flows"`
}

type flowRefList struct {
	Flows []FlowRef `json:"flows"`
}

// AddFlows applies flows as the client's application (POST
// /flows?appId=…) and returns ONOS's ids of them, in order. A flow with
// the selector, priority and table of one ONOS holds replaces it. ONOS
// accepts the rules before the device installs them: Flows shows whether
// it did (state ADDED or FAILED).
func (c *Client) AddFlows(ctx context.Context, flows []Flow) ([]FlowRef, error) {
	if len(flows) == 0 {
		return nil, nil
	}
	var out flowRefList
	err := c.do(ctx, request{method: http.MethodPost, segments: []string{"flows"}, query: url.Values{"appId": {c.appID}},
		body: flowList{Flows: flows}, out: &out})
	if err != nil {
		return nil, fmt.Errorf("cannot add %d flow rules: %w", len(flows), err)
	}
	if len(out.Flows) != len(flows) {
		return nil, fmt.Errorf("cannot add %d flow rules: ONOS answered %d flow ids", len(flows), len(out.Flows))
	}
	return out.Flows, nil
}

// RemoveFlows removes flow rules by id (DELETE /flows).
func (c *Client) RemoveFlows(ctx context.Context, refs []FlowRef) error {
	if len(refs) == 0 {
		return nil
	}
	if err := c.do(ctx, request{method: http.MethodDelete, segments: []string{"flows"}, body: flowRefList{Flows: refs}}); err != nil {
		return fmt.Errorf("cannot remove %d flow rules: %w", len(refs), err)
	}
	return nil
}

// Flows returns the flow entries of a device, of every application (GET
// /flows/{deviceId}). ONOS answers 404 for a device with none, whether
// or not it knows the device: that is no flows here.
func (c *Client) Flows(ctx context.Context, deviceID string) ([]Flow, error) {
	var out flowList
	err := c.do(ctx, request{method: http.MethodGet, segments: []string{"flows", deviceID}, out: &out})
	if IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read the flow rules of %s: %w", deviceID, err)
	}
	return out.Flows, nil
}

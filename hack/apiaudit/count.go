package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"time"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// podNameKey is the user extra the API server adds for a ServiceAccount
// token bound to a pod.
const podNameKey = "authentication.kubernetes.io/pod-name"

// client is who made a request.
type client struct {
	user, pod, sourceIPs, userAgent string
}

// request is one counted request of the log.
type request struct {
	at       time.Time // when the API server received it
	client   client
	verb     string
	resource string // resource[.group][/subresource], or a non-resource path
	name     string // the object's name, if any
}

// maxLine bounds one event's line (Metadata-level events are about 2 KB).
const maxLine = 16 << 20

// read returns the requests of one audit log, each once (see the package
// documentation); name is for errors.
func read(r io.Reader, name string) ([]request, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	var reqs []request
	started := make(map[string]bool) // auditIDs of long-running requests counted at ResponseStarted
	for line := 1; sc.Scan(); line++ {
		b := sc.Bytes()
		if len(strings.TrimSpace(string(b))) == 0 {
			continue
		}
		var ev auditv1.Event
		if err := json.Unmarshal(b, &ev); err != nil {
			return nil, fmt.Errorf("cannot parse audit event at %s:%d: %w", name, line, err)
		}
		if ev.Kind != "" && ev.Kind != "Event" {
			return nil, fmt.Errorf("cannot parse audit event at %s:%d: kind %q, want Event", name, line, ev.Kind)
		}
		id := string(ev.AuditID)
		switch ev.Stage {
		case auditv1.StageResponseStarted:
			started[id] = true
		case auditv1.StageResponseComplete, auditv1.StagePanic:
			if started[id] {
				delete(started, id) // counted when it started
				continue
			}
			if ev.Verb == "watch" {
				continue // started before the logs: its start was not logged
			}
		default: // RequestReceived, or a stage this does not know
			continue
		}
		reqs = append(reqs, toRequest(&ev))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("cannot read audit log %s: %w", name, err)
	}
	return reqs, nil
}

// toRequest is what counting needs of ev.
func toRequest(ev *auditv1.Event) request {
	r := request{
		at: ev.RequestReceivedTimestamp.UTC(),
		client: client{
			user:      ev.User.Username,
			sourceIPs: strings.Join(ev.SourceIPs, ","),
			userAgent: ev.UserAgent,
		},
		verb: ev.Verb,
	}
	if pods := ev.User.Extra[podNameKey]; len(pods) > 0 {
		r.client.pod = pods[0]
	}
	if o := ev.ObjectRef; o != nil && o.Resource != "" {
		r.resource = o.Resource
		if o.APIGroup != "" {
			r.resource += "." + o.APIGroup
		}
		if o.Subresource != "" {
			r.resource += "/" + o.Subresource
		}
		r.name = o.Name
	} else {
		r.resource, _, _ = strings.Cut(ev.RequestURI, "?")
	}
	return r
}

// window is the time range of the count, [since, until).
type window struct{ since, until time.Time }

func (w window) minutes() float64 { return w.until.Sub(w.since).Minutes() }

// window resolves the options' window against the requests: the first
// request and just after the last one by default.
func (o options) window(reqs []request) (window, error) {
	w := window{since: o.since, until: o.until}
	if w.until.IsZero() || (w.since.IsZero() && o.last == 0) {
		if len(reqs) == 0 {
			return w, errors.New("cannot count requests: the audit logs hold no request")
		}
		first, last := reqs[0].at, reqs[0].at
		for _, r := range reqs {
			first, last = minTime(first, r.at), maxTime(last, r.at)
		}
		if w.until.IsZero() {
			w.until = last.Add(time.Microsecond) // the window excludes its end
		}
		if w.since.IsZero() && o.last == 0 {
			w.since = first
		}
	}
	if o.last > 0 {
		w.since = w.until.Add(-o.last)
	}
	if !w.until.After(w.since) {
		return w, fmt.Errorf("cannot count requests: the window from %s to %s is empty",
			w.since.Format(time.RFC3339Nano), w.until.Format(time.RFC3339Nano))
	}
	return w, nil
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// op is a verb on a resource (and, with -names, an object).
type op struct{ verb, resource, name string }

// clientCount is one client's requests in the window.
type clientCount struct {
	client client
	total  int
	ops    map[op]int
}

// counts are the requests in a window, by client.
type counts struct {
	window  window
	clients []*clientCount // most requests first
	total   int
}

// count counts reqs in w whose user matches user (nil: every user),
// splitting resources by object name if names.
func count(reqs []request, w window, user *regexp.Regexp, names bool) counts {
	byClient := make(map[client]*clientCount)
	c := counts{window: w}
	for _, r := range reqs {
		if r.at.Before(w.since) || !r.at.Before(w.until) {
			continue
		}
		if user != nil && !user.MatchString(r.client.user) {
			continue
		}
		cc := byClient[r.client]
		if cc == nil {
			cc = &clientCount{client: r.client, ops: make(map[op]int)}
			byClient[r.client] = cc
			c.clients = append(c.clients, cc)
		}
		k := op{verb: r.verb, resource: r.resource}
		if names {
			k.name = r.name
		}
		cc.ops[k]++
		cc.total++
		c.total++
	}
	slices.SortFunc(c.clients, func(a, b *clientCount) int {
		return cmp.Or(cmp.Compare(b.total, a.total), compareClients(a.client, b.client))
	})
	return c
}

func compareClients(a, b client) int {
	return cmp.Or(cmp.Compare(a.user, b.user), cmp.Compare(a.pod, b.pod),
		cmp.Compare(a.sourceIPs, b.sourceIPs), cmp.Compare(a.userAgent, b.userAgent))
}

// sortedOps are cc's operations, most requests first.
func (cc *clientCount) sortedOps() []op {
	ops := make([]op, 0, len(cc.ops))
	for k := range cc.ops {
		ops = append(ops, k)
	}
	slices.SortFunc(ops, func(a, b op) int {
		return cmp.Or(cmp.Compare(cc.ops[b], cc.ops[a]), cmp.Compare(a.verb, b.verb),
			cmp.Compare(a.resource, b.resource), cmp.Compare(a.name, b.name))
	})
	return ops
}

// Command apiaudit counts the requests each client of a Kubernetes API
// server made, from the server's audit log (JSON lines of audit.k8s.io/v1
// Events, as localkube writes with LOCALKUBE_AUDIT=1; docs/localkube.md),
// and prints them per minute as Markdown tables: per client, and per
// client, verb and resource.
//
// A client is a user name (a data-plane pod authenticates as its
// cluster's ServiceAccount), the pod its ServiceAccount token was bound to
// (the authentication.kubernetes.io/pod-name the API server adds to the
// user), the source addresses (which tell pods apart where tokens carry no
// pod) and the user agent.
//
// Each request counts once, at the time the API server received it: its
// ResponseComplete event, or for a long-running request (a watch, logs,
// exec) its ResponseStarted event, whose later ResponseComplete is not
// counted again. A watch thus counts once per start, however long it
// lasts; one whose ResponseStarted is not in the logs (it started before
// them) does not count. RequestReceived events, when a policy logs them,
// are ignored. The policy must log ResponseStarted (localkube's omits
// only RequestReceived).
//
//	apiaudit [-since TIME] [-until TIME] [-last DURATION] [-user REGEXP] [-names] AUDIT.LOG...
//
// The window is [since, until): RFC 3339 times, by default the first and
// the last request of the logs; -last D makes it the D before until.
// Several files (rotated logs) are read as one; "-" is standard input.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"time"
)

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "apiaudit:", err)
		os.Exit(1)
	}
}

// options are the command's flags.
type options struct {
	since, until time.Time
	last         time.Duration
	user         *regexp.Regexp
	names        bool
	files        []string
}

// timeFlag is a flag.Value of an RFC 3339 time.
type timeFlag struct{ t *time.Time }

func (f timeFlag) String() string {
	if f.t == nil || f.t.IsZero() {
		return ""
	}
	return f.t.Format(time.RFC3339Nano)
}

func (f timeFlag) Set(s string) error {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return fmt.Errorf("cannot parse time %q: want RFC 3339, as 2026-12-06T03:40:00Z", s)
	}
	*f.t = t
	return nil
}

// parse reads the command line.
func parse(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("apiaudit", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: apiaudit [-since TIME] [-until TIME] [-last DURATION] [-user REGEXP] [-names] AUDIT.LOG...")
		fs.PrintDefaults()
	}
	fs.Var(timeFlag{&o.since}, "since", "start of the window, RFC 3339 (default: the first request of the logs)")
	fs.Var(timeFlag{&o.until}, "until", "end of the window, excluded, RFC 3339 (default: just after the last request of the logs)")
	fs.DurationVar(&o.last, "last", 0, "the window is this long and ends at -until (excludes -since)")
	user := fs.String("user", "", "count only the clients whose user name matches this regular expression, e.g. ':data-plane$'")
	fs.BoolVar(&o.names, "names", false, "split the resource table by object name")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.files = fs.Args()
	if len(o.files) == 0 {
		fs.Usage()
		return o, errors.New("cannot count requests: no audit log given")
	}
	if o.last < 0 {
		return o, fmt.Errorf("cannot count requests: -last %v is negative", o.last)
	}
	if o.last > 0 && !o.since.IsZero() {
		return o, errors.New("cannot count requests: -last and -since exclude each other")
	}
	if !o.since.IsZero() && !o.until.IsZero() && !o.until.After(o.since) {
		return o, fmt.Errorf("cannot count requests: -until %s is not after -since %s",
			o.until.Format(time.RFC3339Nano), o.since.Format(time.RFC3339Nano))
	}
	if *user != "" {
		re, err := regexp.Compile(*user)
		if err != nil {
			return o, fmt.Errorf("cannot parse -user: %w", err)
		}
		o.user = re
	}
	return o, nil
}

// run is the command: args without the program name.
func run(args []string, stdin io.Reader, stdout io.Writer) error {
	o, err := parse(args, os.Stderr)
	if err != nil {
		return err
	}
	var reqs []request
	for _, name := range o.files {
		rs, err := readFile(name, stdin)
		if err != nil {
			return err
		}
		reqs = append(reqs, rs...)
	}
	w, err := o.window(reqs)
	if err != nil {
		return err
	}
	c := count(reqs, w, o.user, o.names)
	return c.writeMarkdown(stdout, o)
}

// readFile reads the requests of the audit log name ("-": stdin).
func readFile(name string, stdin io.Reader) ([]request, error) {
	if name == "-" {
		return read(stdin, "standard input")
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("cannot read audit log: %w", err)
	}
	defer f.Close()
	return read(f, name)
}

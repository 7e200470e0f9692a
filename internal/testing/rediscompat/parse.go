package rediscompat

import (
	"bufio"
	"bytes"
	"regexp"
	"strings"
)

// Result is what one unit of the suite did.
type Result struct {
	Unit string
	// Passed, Failed and Skipped count the suite's [ok], [err] and
	// [skip]/[ignore] lines of tests. A group of tests that the suite
	// leaves out as a whole (a start_server block tagged external:skip)
	// counts once in Skipped.
	Passed, Failed, Skipped int
	// CutShort counts the errors outside a test: under --durable the
	// suite reports one as [err] without a test's name and goes on with
	// the next group of tests, leaving out the rest of the group.
	CutShort int
	// Aborted reports a unit that did not run to its end: an error the
	// suite does not catch ([exception], e.g. in a group's setup), its
	// own timeout, or a kill at the run's bound. AbortReason says which.
	Aborted     bool
	AbortReason string
	// Failures are the failed tests and the errors outside a test, in
	// the order the suite reported them.
	Failures []Failure
}

// Failure is a failed test, or an error outside a test (Test empty).
type Failure struct {
	Test    string
	Message string
}

// Ran is the number of tests that ran: passed or failed.
func (r Result) Ran() int { return r.Passed + r.Failed }

var (
	ansiEscape = regexp.MustCompile("\x1b\\[[0-9;]*m")
	// record is a line the suite prints for an event: "[ok]: name (1 ms)",
	// "[err]: name in tests/unit/x.tcl", "[1/1 done]: unit/x (5 seconds)".
	record = regexp.MustCompile(`^\[([a-zA-Z]+|\d+/\d+ done)\]: ?(.*)$`)
	// inProgress is the test a client ran when the suite gave up on it:
	// "sock55d3b35f7c10 => (IN PROGRESS) Script return recursive object".
	inProgress = regexp.MustCompile(`^\S+ => \(IN PROGRESS\) (.*)$`)
)

// Parse reads the suite's output of one unit.
func Parse(unit string, output []byte) Result {
	res := Result{Unit: unit}
	lines := splitLines(ansiEscape.ReplaceAll(output, nil))
	done := false
	for i := 0; i < len(lines); i++ {
		m := record.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		kind, text := m[1], m[2]
		switch {
		case kind == "ok":
			res.Passed++
		case kind == "skip" || kind == "ignore":
			res.Skipped++
		case kind == "err":
			var detail []string
			for j := i + 1; j < len(lines) && !record.MatchString(lines[j]); j++ {
				detail = append(detail, lines[j])
			}
			res.Failures = append(res.Failures, failure(unit, text, detail))
			if res.Failures[len(res.Failures)-1].Test != "" {
				res.Failed++
			} else {
				res.CutShort++
			}
		case kind == "exception":
			res.Aborted = true
			res.AbortReason = strings.TrimSuffix(strings.TrimPrefix(text, "Executing test client: "), ".")
		case kind == "TIMEOUT":
			res.Aborted = true
			res.AbortReason = "no progress within the suite's --timeout"
			// The suite's report of its client's state follows.
			for j := i + 1; j < len(lines) && !record.MatchString(lines[j]); j++ {
				if m := inProgress.FindStringSubmatch(lines[j]); m != nil {
					res.AbortReason += ", in test " + m[1]
					break
				}
			}
		case strings.HasSuffix(kind, " done"):
			done = true
		}
	}
	if !done && !res.Aborted {
		res.Aborted, res.AbortReason = true, "the suite ended before the unit did"
	}
	return res
}

// failure reads an [err] record: its header and the lines after it. A
// failed test's header is "NAME in tests/UNIT.tcl", and its next line the
// message (an assertion's, or "Expected 'X' to equal or match 'Y'"). For
// an error that is not an assertion, the suite prints the message with
// its first ten characters cut off, then Tcl's errorInfo, whose first
// line is the whole message. An error outside a test has no name: its
// header is the cut message.
func failure(unit, header string, detail []string) Failure {
	suffix := " in tests/" + unit + ".tcl"
	if name, ok := strings.CutSuffix(header, suffix); ok {
		msg, full := "", ""
		if len(detail) > 0 {
			msg = detail[0]
		}
		if len(detail) > 1 {
			full = detail[1]
		}
		return Failure{Test: name, Message: wholeMessage(msg, full)}
	}
	full := ""
	if len(detail) > 0 {
		full = detail[0]
	}
	return Failure{Message: wholeMessage(header, full)}
}

// wholeMessage is full if cut is its end (the suite cut the message
// short), else cut.
func wholeMessage(cut, full string) string {
	if full != "" && strings.HasSuffix(full, cut) {
		return strings.TrimSpace(full)
	}
	return strings.TrimSpace(cut)
}

func splitLines(b []byte) []string {
	var lines []string
	s := bufio.NewScanner(bytes.NewReader(b))
	s.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for s.Scan() {
		lines = append(lines, strings.TrimRight(s.Text(), "\r"))
	}
	return lines
}

var (
	unknownCommand    = regexp.MustCompile(`unknown command '([^']*)'`)
	unknownSubcommand = regexp.MustCompile(`unknown subcommand '([^']*)'\. Try (\S+) HELP`)
	notSupported      = regexp.MustCompile(`ERR (.+?) is not supported by the DistCache gateway`)
	connectionLost    = regexp.MustCompile(`I/O error|broken pipe|connection reset|Connection reset|connection refused`)
	wrongReply        = regexp.MustCompile(`^Expected .* to (equal or match|be equal to|match|be|eventually)|^Expected |^assertion:`)
)

// Cause is a short name for why a failure happened, for counting: the
// command the gateway did not know, a subcommand or a command it does not
// support, a connection it closed, a blocking command that did not block,
// a test stalled waiting for a reply, a reply other than Redis's, or the
// message itself.
func Cause(message string) string {
	if m := unknownCommand.FindStringSubmatch(message); m != nil {
		return strings.ToUpper(m[1]) + ": unknown command"
	}
	if m := unknownSubcommand.FindStringSubmatch(message); m != nil {
		return strings.ToUpper(m[2]+" "+m[1]) + ": unknown subcommand"
	}
	if m := notSupported.FindStringSubmatch(message); m != nil {
		return strings.ToUpper(m[1]) + ": not supported"
	}
	if strings.HasPrefix(message, "no progress within") {
		return "a test waited for a reply that never came"
	}
	if strings.HasPrefix(message, "Timeout waiting for blocked clients") {
		return "no client blocked (blocking commands)"
	}
	if connectionLost.MatchString(message) {
		return "connection closed by the gateway"
	}
	if wrongReply.MatchString(message) {
		return "a reply other than Redis's"
	}
	return clip(message, 70)
}

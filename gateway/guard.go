package gateway

import (
	"errors"
	"fmt"
)

// Redis' limits on what a client sends (networking.c), which the gateway
// keeps.
const (
	// maxInlineBytes bounds an inline command and the header line of an
	// array or a bulk string (PROTO_INLINE_MAX_SIZE).
	maxInlineBytes = 64 << 10
	// maxBulkBytes bounds a bulk string's declared length
	// (proto-max-bulk-len's default).
	maxBulkBytes = 512 << 20
	// maxMultibulk bounds an array's declared count.
	maxMultibulk = 1 << 30
	// minElementBytes is the least an array element takes: "$0\r\n\r\n".
	minElementBytes = 6
)

// errCommandRefused ends a connection whose input the guard refused.
var errCommandRefused = errors.New("command refused")

// guardState is where a commandGuard is in a command.
type guardState uint8

const (
	atCommand   guardState = iota // the next byte begins a command
	inInline                      // an inline command's line
	inCount                       // an array's count line, after its '*'
	atElement                     // the next byte begins an element, a '$'
	inLength                      // a bulk string's length line, after its '$'
	inPayload                     // a bulk string's bytes
	atPayloadCR                   // the CR after a bulk string's bytes
	atPayloadLF                   // the LF after it
)

// commandGuard follows one connection's commands as their bytes are read,
// before the parser (redcon's) sees them, and refuses at once what can
// never become a command the gateway runs, with Redis' replies: a header
// that declares more than Redis allows or than MaxCommandBytes holds, a
// header or inline line longer than Redis reads, bytes that do not frame
// a command. It sees each byte once and skips the bytes of bulk strings,
// so what it costs a command is a pass over its headers. It frames
// commands as redcon does (an inline command ends at LF; an array's
// header lines end in CRLF), so it refuses nothing redcon would parse
// but what is over a limit; redcon's own errors, for the quoting of
// inline commands, still end a connection after the guard has let the
// bytes through.
type commandGuard struct {
	max   int // MaxCommandBytes
	state guardState
	// size counts the bytes of the current command; left, the elements
	// of its array not begun; payload, the bytes of the bulk string being
	// read still to come.
	size, left, payload int
	// The header line being read: its bytes (with its '*' or '$'), the
	// number it spells so far, and how.
	line                   int
	num                    int64
	digits, neg, bad, over bool
	cr                     bool // the last byte was a CR: the line ends if LF follows
}

// scan follows p, the next bytes read, and returns how many of them may
// go to the parser: all of them, or those before the first byte that
// makes the input refused, with the reply that refuses it.
func (g *commandGuard) scan(p []byte) (int, string) {
	for i := 0; i < len(p); i++ {
		if g.state == inPayload { // skipped, not looked at
			n := min(g.payload, len(p)-i)
			g.payload -= n
			g.size += n
			i += n - 1
			if g.payload > 0 {
				continue
			}
			g.state = atPayloadCR
			if i+2 < len(p) && p[i+1] == '\r' && p[i+2] == '\n' { // the common end, at once
				g.size += 2
				i += 2
				g.elementEnded()
			}
			continue
		}
		if end, refusal, ok := g.wholeLine(p, i); ok {
			if refusal != "" {
				return end, refusal
			}
			i = end
			continue
		}
		c := p[i]
		g.size++
		if refusal := g.step(c); refusal != "" {
			return i, refusal
		}
		if g.size > g.max && g.state != atCommand {
			return i, g.tooLarge()
		}
	}
	return len(p), ""
}

// step follows one byte, c, outside a bulk string's bytes.
func (g *commandGuard) step(c byte) string {
	switch g.state {
	case atCommand:
		if c == '*' {
			g.startLine(inCount)
			return ""
		}
		g.state, g.line = inInline, 0
		return g.inline(c)
	case inInline:
		return g.inline(c)
	case inCount:
		if !g.lineByte(c) {
			if g.line > maxInlineBytes {
				return "ERR Protocol error: too big mbulk count string"
			}
			return ""
		}
		return g.countEnded(g.number())
	case atElement:
		if c != '$' {
			return "ERR Protocol error: expected '$', got '" + string([]byte{c}) + "'"
		}
		g.left--
		g.startLine(inLength)
	case inLength:
		if !g.lineByte(c) {
			if g.line > maxInlineBytes {
				return "ERR Protocol error: too big bulk count string"
			}
			return ""
		}
		return g.lengthEnded(g.number())
	case atPayloadCR: // checked with the LF, as redcon does
		g.bad, g.state = c != '\r', atPayloadLF
	case atPayloadLF:
		if g.bad || c != '\n' {
			return "ERR Protocol error: invalid bulk length"
		}
		g.elementEnded()
	}
	return ""
}

// wholeLine is step's shortcut for the common header: a count or bulk
// length line, plain digits, whole in p from i, within MaxCommandBytes.
// It follows it and returns the index of its LF and, if it refuses it,
// the refusal; ok false when it is not such a line, for step to follow.
func (g *commandGuard) wholeLine(p []byte, i int) (end int, refusal string, ok bool) {
	count := g.state == atCommand && p[i] == '*'
	if !count && (g.state != atElement || p[i] != '$') {
		return 0, "", false
	}
	var n int64
	j := i + 1
	for ; j < len(p) && j-i <= 10; j++ { // ten digits at most: no overflow
		d := p[j] - '0'
		if d > 9 {
			break
		}
		n = n*10 + int64(d)
	}
	if j == i+1 || j+1 >= len(p) || p[j] != '\r' || p[j+1] != '\n' || g.size+j+2-i > g.max {
		return 0, "", false
	}
	g.size += j + 2 - i
	if count {
		return j + 1, g.countEnded(n, true), true
	}
	g.left--
	return j + 1, g.lengthEnded(n, true), true
}

// countEnded follows an array's count line, which spells n (ok false:
// no number).
func (g *commandGuard) countEnded(n int64, ok bool) string {
	if !ok || n <= 0 || n > maxMultibulk {
		return "ERR Protocol error: invalid multibulk length"
	}
	if int64(g.size)+n*minElementBytes > int64(g.max) {
		return g.tooLarge()
	}
	g.left, g.state = int(n), atElement
	return ""
}

// lengthEnded follows a bulk string's length line, which spells n (ok
// false: no number).
func (g *commandGuard) lengthEnded(n int64, ok bool) string {
	if !ok || n < 0 || n > maxBulkBytes {
		return "ERR Protocol error: invalid bulk length"
	}
	if int64(g.size)+n+2+int64(g.left)*minElementBytes > int64(g.max) {
		return g.tooLarge()
	}
	g.payload, g.state = int(n), inPayload
	if n == 0 {
		g.state = atPayloadCR
	}
	return ""
}

// inline follows a byte of an inline command, which ends at LF.
func (g *commandGuard) inline(c byte) string {
	if c == '\n' {
		g.endCommand()
		return ""
	}
	if g.line++; g.line > maxInlineBytes {
		return "ERR Protocol error: too big inline request"
	}
	return ""
}

func (g *commandGuard) endCommand() { g.state, g.size = atCommand, 0 }

// elementEnded follows the CRLF that ends a bulk string.
func (g *commandGuard) elementEnded() {
	g.state = atElement
	if g.left == 0 {
		g.endCommand()
	}
}

// startLine begins a header line in state s, its '*' or '$' read.
func (g *commandGuard) startLine(s guardState) {
	g.state, g.line, g.num = s, 1, 0
	g.digits, g.neg, g.bad, g.over, g.cr = false, false, false, false, false
}

// lineByte follows a byte of a header line and says whether it ended it.
func (g *commandGuard) lineByte(c byte) bool {
	if c == '\n' {
		return true
	}
	g.line++
	if g.cr { // a CR not followed by LF: not a number
		g.bad = true
	}
	g.cr = false
	switch {
	case c == '\r':
		g.cr = true
	case c >= '0' && c <= '9':
		g.digits = true
		if g.num > maxBulkBytes+maxMultibulk { // over every limit: stop counting
			g.over = true
		} else {
			g.num = g.num*10 + int64(c-'0')
		}
	case (c == '-' || c == '+') && g.line == 2:
		g.neg = c == '-'
	default:
		g.bad = true
	}
	return false
}

// number is the integer the header line just ended spells, as
// strconv.Atoi reads it (redcon's parser): ok false when it spells none
// or did not end in CRLF. A number over every limit is returned as one.
func (g *commandGuard) number() (int64, bool) {
	if g.bad || !g.digits || !g.cr {
		return 0, false
	}
	n := g.num
	if g.over {
		n = maxBulkBytes + maxMultibulk + 1
	}
	if g.neg {
		n = -n
	}
	return n, true
}

func (g *commandGuard) tooLarge() string {
	return fmt.Sprintf("ERR Protocol error: command larger than %d bytes", g.max)
}

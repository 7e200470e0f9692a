package gateway

import (
	"errors"
	"fmt"

	"github.com/distcache/distcache/dataplane/wire"
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
	// maxCountLine bounds an array's count line, '*' and CR included: a
	// count of more than 20 characters is no number to Redis (string2ll).
	// The guard holds a count line back from the parser until the line
	// is whole, and these bytes are all it holds.
	maxCountLine = 32
)

// tooLargeReply answers a command with an argument larger than a value
// may be (wire.MaxValueLen), as Redis answers a string over
// proto-max-bulk-len.
const tooLargeReply = "ERR string exceeds maximum allowed size (DistCache values are at most 1048576 bytes)"

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
// before the parser (redcon's) sees them. It refuses at once what can
// never become a command the gateway runs, with Redis' replies: a header
// that declares more than Redis allows, an array that cannot fit in
// MaxCommandBytes, a header or inline line longer than Redis reads,
// bytes that do not frame a command. It discards, as its bytes arrive, a
// command with a bulk string larger than a value may be (maxArg) or
// that makes the command larger than MaxCommandBytes: the parser never
// sees the rest of it, and the command is answered with an error once
// its last byte has been read, the connection going on. It drops the
// count lines of 0 or less, commands of nothing that Redis skips. It sees
// each byte once and skips the bytes of bulk strings, so what it costs a
// command is a pass over its headers. It frames commands as redcon does
// (an inline command ends at LF; an array's header lines end in CRLF),
// so it refuses nothing redcon would parse but what is over a limit;
// redcon's own errors, for the quoting of inline commands, still end a
// connection after the guard has let the bytes through.
type commandGuard struct {
	max    int // MaxCommandBytes
	maxArg int // the largest bulk string (wire.MaxValueLen); 0: max alone bounds them
	state  guardState
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
	// discard, while the current command's bytes are discarded, is the
	// reply the command gets; ended, that of a discarded command whose
	// last byte was just read.
	discard, ended string
	// skip: the count line just read spells 0 or less; skipped counts
	// those.
	skip    bool
	skipped int
	// doomed: the count line being read is longer than maxCountLine; its
	// bytes are dropped until it is refused.
	doomed bool
	// marked: one of the above may have just changed.
	marked bool
}

// newCommandGuard is the guard of a connection whose commands may take
// max bytes, each bulk string up to the largest value.
func newCommandGuard(max int) commandGuard {
	return commandGuard{max: max, maxArg: wire.MaxValueLen}
}

// filtered is what filter made of a chunk of input.
type filtered struct {
	// keep is the number of bytes, now at the front of the chunk, for
	// the parser; used, the number of the chunk's bytes followed. The
	// caller offers the others again.
	keep, used int
	// more: the bytes not used are an incomplete count line, to offer
	// again with the bytes that follow them.
	more bool
	// refusal, when set, refuses the input after the kept bytes.
	refusal string
	// dropped, when set, is the reply of a discarded command whose last
	// byte is the last used.
	dropped string
}

// filter follows p, the next bytes read, and moves to its front the bytes
// the parser may have. It stops after the end of a discarded command (the
// caller answers it, after the commands kept before it) and before an
// incomplete count line.
func (g *commandGuard) filter(p []byte) filtered {
	o := output{}
	if g.discard != "" || g.doomed {
		o.seg = -1
	}
	lineAt := 0 // where the count line being read began: in p, as filter holds back any other
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
				if g.ended != "" {
					return g.dropEnded(p, &o, i+1)
				}
			}
			continue
		}
		st := g.state
		if st == atCommand && p[i] == '*' {
			lineAt = i
		}
		end, refusal, whole := g.wholeLine(p, i)
		if !whole {
			end = i
			g.size++
			refusal = g.step(p[i])
			if refusal == "" && g.size > g.max && g.state != atCommand && g.discard == "" {
				refusal = g.tooLarge()
			}
		}
		if refusal != "" {
			if st == inCount || (st == atCommand && p[i] == '*') {
				end = lineAt // a count line is never let through in part
			}
			o.drop(p, end)
			return filtered{keep: o.n, used: len(p), refusal: refusal}
		}
		i = end
		if !g.marked {
			continue
		}
		g.marked = false
		switch {
		case g.skip: // a command of nothing
			g.skip = false
			o.drop(p, lineAt)
			o.resume(i + 1)
		case g.ended != "":
			return g.dropEnded(p, &o, i+1)
		case g.discard != "" && o.seg >= 0: // the rest of the command is discarded
			o.drop(p, i+1)
		case g.state == inCount && g.line > maxCountLine && !g.doomed:
			g.doomed, g.bad = true, true
			o.drop(p, lineAt)
		}
	}
	if g.state == inCount && !g.doomed { // held back until it is whole
		g.state, g.size = atCommand, 0
		o.drop(p, lineAt)
		return filtered{keep: o.n, used: lineAt, more: true}
	}
	o.drop(p, len(p))
	return filtered{keep: o.n, used: len(p)}
}

// dropEnded ends a filter whose discarded command ended before p[end].
func (g *commandGuard) dropEnded(p []byte, o *output, end int) filtered {
	o.drop(p, end)
	reply := g.ended
	g.ended = ""
	return filtered{keep: o.n, used: end, dropped: reply}
}

// output gathers the bytes filter keeps at the front of its chunk,
// moving them only once some have been dropped before them.
type output struct {
	n   int // bytes kept, at the front
	seg int // where the bytes being kept begin; -1: dropping
}

// drop ends the bytes being kept before at.
func (o *output) drop(p []byte, at int) {
	if o.seg < 0 {
		return
	}
	if o.n != o.seg {
		copy(p[o.n:], p[o.seg:at])
	}
	o.n += at - o.seg
	o.seg = -1
}

// resume keeps the bytes from at on.
func (o *output) resume(at int) {
	if o.seg < 0 {
		o.seg = at
	}
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
			g.marked = g.marked || (g.line > maxCountLine && !g.doomed)
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
// no number). A count of 0 or less is a command of nothing, skipped as
// Redis skips it.
func (g *commandGuard) countEnded(n int64, ok bool) string {
	switch {
	case !ok || n > maxMultibulk:
		return "ERR Protocol error: invalid multibulk length"
	case n <= 0:
		g.skip, g.marked = true, true
		g.skipped++
		g.endCommand()
		return ""
	case int64(g.size)+n*minElementBytes > int64(g.max):
		return g.tooLarge()
	}
	g.left, g.state = int(n), atElement
	return ""
}

// lengthEnded follows a bulk string's length line, which spells n (ok
// false: no number). A bulk string larger than maxArg, or that leaves no
// room in MaxCommandBytes for the rest of the command, has its command
// discarded.
func (g *commandGuard) lengthEnded(n int64, ok bool) string {
	if !ok || n < 0 || n > maxBulkBytes {
		return "ERR Protocol error: invalid bulk length"
	}
	switch {
	case g.discard != "":
	case g.maxArg > 0 && n > int64(g.maxArg):
		g.discard, g.marked = tooLargeReply, true
	case int64(g.size)+n+2+int64(g.left)*minElementBytes > int64(g.max):
		g.discard, g.marked = fmt.Sprintf("ERR command larger than %d bytes", g.max), true
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

// endCommand follows the last byte of a command.
func (g *commandGuard) endCommand() {
	g.state, g.size = atCommand, 0
	if g.discard != "" {
		g.ended, g.discard, g.marked = g.discard, "", true
	}
}

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
	g.digits, g.neg, g.bad, g.over, g.cr, g.doomed = false, false, false, false, false, false
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

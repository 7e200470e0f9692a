package gateway

import (
	"bytes"
	"slices"
	"strconv"
)

// The shims answer the commands of package rediscmd in RESP2. A RESP3
// client gets what Redis would send it: the reply rewritten by the
// command's shape, and every null as RESP3's null.

// resp3Shape is how a command's RESP2 reply becomes its RESP3 reply.
type resp3Shape uint8

const (
	shapeSame       resp3Shape = iota // nulls only
	shapeMap                          // an array of pairs becomes a map (HGETALL)
	shapeSet                          // an array becomes a set (SMEMBERS, SPOP with a count)
	shapeDouble                       // every bulk string, at any depth, becomes a double (ZSCORE, ZMSCORE, GEOPOS)
	shapeScorePairs                   // member, score, ... becomes an array of [member, double] (WITHSCORES)
	shapeScoreFlat                    // member, score: the score becomes a double (ZPOPMIN without a count)
	shapePairs                        // field, value, ... becomes an array of [field, value] (HRANDFIELD WITHVALUES)
	shapePopped                       // key, [[member, score], ...]: each score becomes a double (ZMPOP)
	shapeKeyScore                     // key, member, score: the score becomes a double (BZPOPMIN)
)

// resp3ShapeOf is the shape of the reply to args.
func resp3ShapeOf(args [][]byte) resp3Shape {
	name := string(bytes.ToLower(args[0]))
	has := func(option string) bool {
		for _, a := range args[2:] {
			if bytes.EqualFold(a, []byte(option)) {
				return true
			}
		}
		return false
	}
	switch name {
	case "hgetall":
		return shapeMap
	case "smembers", "sdiff", "sinter", "sunion":
		return shapeSet
	case "spop":
		if len(args) > 2 {
			return shapeSet
		}
	case "zscore", "zincrby", "zmscore", "geopos":
		return shapeDouble
	case "zadd":
		if has("incr") {
			return shapeDouble
		}
	case "zmpop", "bzmpop":
		return shapePopped
	case "bzpopmin", "bzpopmax":
		return shapeKeyScore
	case "zunion", "zinter", "zdiff":
		if slices.ContainsFunc(args[1:], func(a []byte) bool { return bytes.EqualFold(a, []byte("withscores")) }) {
			return shapeScorePairs
		}
	case "zrange", "zrevrange", "zrangebyscore", "zrevrangebyscore", "zrandmember":
		if has("withscores") {
			return shapeScorePairs
		}
	case "zpopmin", "zpopmax":
		if len(args) > 2 {
			return shapeScorePairs
		}
		return shapeScoreFlat
	case "hrandfield":
		if has("withvalues") {
			return shapePairs
		}
	}
	return shapeSame
}

// respValue is a parsed RESP2 reply.
type respValue struct {
	kind  byte   // '+', '-', ':', '$' or '*'
	data  []byte // a line's text, or a bulk string's bytes
	null  bool   // a null bulk string or array
	elems []respValue
}

// appendRESP3 appends r, a RESP2 reply, rewritten for a RESP3 client by
// shape. A reply it cannot parse is appended as it is.
func appendRESP3(dst, r []byte, shape resp3Shape) []byte {
	v, rest, ok := parseRESP2(r)
	if !ok || len(rest) != 0 || v.kind == '-' {
		return append(dst, r...)
	}
	switch {
	case v.kind != '*' || v.null:
		if shape == shapeDouble && v.kind == '$' && !v.null {
			return appendDouble(dst, v.data)
		}
		return appendValue3(dst, v, shape == shapeDouble)
	case shape == shapeMap && len(v.elems)%2 == 0:
		dst = append(dst, '%')
		dst = strconv.AppendInt(dst, int64(len(v.elems)/2), 10)
		dst = append(dst, '\r', '\n')
		return appendElems3(dst, v.elems, false)
	case shape == shapeSet:
		dst = append(dst, '~')
		dst = strconv.AppendInt(dst, int64(len(v.elems)), 10)
		dst = append(dst, '\r', '\n')
		return appendElems3(dst, v.elems, false)
	case (shape == shapeScorePairs || shape == shapePairs) && len(v.elems)%2 == 0:
		dst = appendArray(dst, len(v.elems)/2)
		for i := 0; i < len(v.elems); i += 2 {
			dst = appendArray(dst, 2)
			dst = appendValue3(dst, v.elems[i], false)
			dst = appendValue3(dst, v.elems[i+1], shape == shapeScorePairs)
		}
		return dst
	case shape == shapePopped && len(v.elems) == 2 && v.elems[1].kind == '*':
		dst = appendArray(dst, 2)
		dst = appendValue3(dst, v.elems[0], false)
		dst = appendArray(dst, len(v.elems[1].elems))
		for _, pair := range v.elems[1].elems {
			if len(pair.elems) != 2 {
				dst = appendValue3(dst, pair, false)
				continue
			}
			dst = appendArray(dst, 2)
			dst = appendValue3(dst, pair.elems[0], false)
			dst = appendValue3(dst, pair.elems[1], true)
		}
		return dst
	case shape == shapeKeyScore && len(v.elems) == 3:
		dst = appendArray(dst, 3)
		dst = appendValue3(dst, v.elems[0], false)
		dst = appendValue3(dst, v.elems[1], false)
		return appendValue3(dst, v.elems[2], true)
	case shape == shapeScoreFlat && len(v.elems) == 2:
		dst = appendArray(dst, 2)
		dst = appendValue3(dst, v.elems[0], false)
		return appendValue3(dst, v.elems[1], true)
	}
	return appendValue3(dst, v, shape == shapeDouble)
}

// appendValue3 appends v in RESP3: nulls as '_', bulk strings as doubles
// when doubles says so.
func appendValue3(dst []byte, v respValue, doubles bool) []byte {
	switch {
	case v.null:
		return append(dst, '_', '\r', '\n')
	case v.kind == '$' && doubles:
		return appendDouble(dst, v.data)
	case v.kind == '$':
		return appendBulk(dst, v.data)
	case v.kind == '*':
		dst = appendArray(dst, len(v.elems))
		return appendElems3(dst, v.elems, doubles)
	}
	dst = append(dst, v.kind)
	dst = append(dst, v.data...)
	return append(dst, '\r', '\n')
}

func appendElems3(dst []byte, elems []respValue, doubles bool) []byte {
	for _, e := range elems {
		dst = appendValue3(dst, e, doubles)
	}
	return dst
}

// appendDouble appends RESP3's double of text, as Redis formats it.
func appendDouble(dst, text []byte) []byte {
	dst = append(dst, ',')
	dst = append(dst, text...)
	return append(dst, '\r', '\n')
}

// parseRESP2 parses the first reply of r and returns what follows it.
func parseRESP2(r []byte) (v respValue, rest []byte, ok bool) {
	end := bytes.Index(r, []byte("\r\n"))
	if len(r) == 0 || end < 0 {
		return v, nil, false
	}
	v.kind, rest = r[0], r[end+2:]
	switch v.kind {
	case '+', '-', ':':
		v.data = r[1:end]
		return v, rest, true
	case '$', '*':
	default:
		return v, nil, false
	}
	n, err := strconv.Atoi(string(r[1:end]))
	switch {
	case err != nil || n < -1 || strconv.Itoa(n) != string(r[1:end]):
		return v, nil, false
	case n == -1:
		v.null = true
		return v, rest, true
	case v.kind == '$':
		if len(rest) < n+2 || rest[n] != '\r' || rest[n+1] != '\n' {
			return v, nil, false
		}
		v.data = rest[:n]
		return v, rest[n+2:], true
	}
	if n > len(rest)/3 { // an element takes 3 bytes at least ("+\r\n")
		return v, nil, false
	}
	v.elems = make([]respValue, n)
	for i := range n {
		if v.elems[i], rest, ok = parseRESP2(rest); !ok {
			return v, nil, false
		}
	}
	return v, rest, true
}

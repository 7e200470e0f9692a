package gateway

import (
	"strconv"

	"github.com/tidwall/redcon"
)

// Replies are appended to a byte slice in the connection's protocol: RESP2
// unless HELLO 3 chose RESP3, where nulls and maps have their own types.

func appendOK(b []byte) []byte                   { return redcon.AppendOK(b) }
func appendError(b []byte, msg string) []byte    { return redcon.AppendError(b, msg) }
func appendBulk(b, v []byte) []byte              { return redcon.AppendBulk(b, v) }
func appendBulkString(b []byte, v string) []byte { return redcon.AppendBulkString(b, v) }
func appendInt(b []byte, n int64) []byte         { return redcon.AppendInt(b, n) }
func appendArray(b []byte, n int) []byte         { return redcon.AppendArray(b, n) }
func appendSimple(b []byte, s string) []byte     { return redcon.AppendString(b, s) }

// appendNull appends a null: RESP2's null bulk string, RESP3's null.
func appendNull(b []byte, resp3 bool) []byte {
	if resp3 {
		return append(b, "_\r\n"...)
	}
	return redcon.AppendNull(b)
}

// appendMap appends the header of a map of n pairs: RESP3's map, RESP2's
// flat array of 2n elements.
func appendMap(b []byte, n int, resp3 bool) []byte {
	if resp3 {
		b = append(b, '%')
		b = strconv.AppendInt(b, int64(n), 10)
		return append(b, '\r', '\n')
	}
	return redcon.AppendArray(b, 2*n)
}

// appendVerbatim appends text: RESP3's verbatim string of format txt,
// RESP2's bulk string.
func appendVerbatim(b []byte, text string, resp3 bool) []byte {
	if !resp3 {
		return redcon.AppendBulkString(b, text)
	}
	b = append(b, '=')
	b = strconv.AppendInt(b, int64(len(text)+4), 10)
	b = append(b, "\r\ntxt:"...)
	b = append(b, text...)
	return append(b, '\r', '\n')
}

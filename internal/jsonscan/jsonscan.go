// Package jsonscan finds the parts of JSON text without decoding it: the primitives of the
// runtime's hand-written scanners (the JSON-RPC envelope, tools/call params, tool results,
// _meta), which read the messages MCP clients and servers send without encoding/json's
// reflection. Each works on text already known to be valid JSON, which Valid checks.
package jsonscan

import (
	"bytes"
	"strconv"
)

// SkipSpace returns the index of the first byte at or after i that is not JSON white space.
func SkipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// StringEnd returns the index just past the string that starts at b[i] ('"'), or -1.
func StringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

// ValueEnd returns the index just past the (valid) JSON value that starts at b[i], or -1.
func ValueEnd(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return StringEnd(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				e := StringEnd(b, j)
				if e < 0 {
					return -1
				}
				j = e - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	default:
		j := i
		for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\t' && b[j] != '\n' && b[j] != '\r' {
			j++
		}
		if j == i {
			return -1
		}
		return j
	}
}

// IsInt64 reports whether b is a JSON integer that fits an int64, as ID.UnmarshalJSON wants.
func IsInt64(b []byte) bool {
	n := len(b)
	if n > 0 && b[0] == '-' {
		n--
	}
	if n == 0 || n > 19 {
		return false
	}
	for _, c := range b[len(b)-n:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	if n < 19 {
		return true
	}
	_, err := strconv.ParseInt(string(b), 10, 64)
	return err == nil
}

// The one loop over the members of a JSON object, for the runtime's scanners: FirstMember
// finds the first member, NextMember reads one and finds the next, without a callback or any
// state but an index, so that the scanners of the hot path keep their speed.
//
//	for i := jsonscan.FirstMember(obj); i >= 0; {
//		var key, val []byte
//		if key, val, i = jsonscan.NextMember(obj, i); i == jsonscan.Bad {
//			break
//		}
//		use(key, val)
//	}
//	// i == jsonscan.End: obj was one well-formed object, read to its end
//
// Keys come as the text between their quotes, escapes included: a caller that matches keys
// checks for a backslash (HasEscape) and decides. NextMember trusts that obj is valid JSON
// and only finds where things end; NextValidMember checks each key and value as it goes, so
// that End also means that obj is valid JSON.
const (
	// End is the index after the last member: the object's closing brace was read, and only
	// white space follows it.
	End = -1
	// Bad is the index after a member that is not followed by a comma or the closing brace,
	// and FirstMember's and NextMember's answer for text that is not one well-formed object.
	Bad = -2
)

// FirstMember returns the index of the first member of the JSON object obj (white space
// around it allowed), End for an empty object, or Bad when obj does not start one.
func FirstMember(obj []byte) int {
	i := SkipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return Bad
	}
	i = SkipSpace(obj, i+1)
	if i < len(obj) && obj[i] == '}' {
		return objectEnd(obj, i)
	}
	return i
}

// objectEnd is End when only white space follows the closing brace at obj[i], else Bad.
func objectEnd(obj []byte, i int) int {
	if SkipSpace(obj, i+1) == len(obj) {
		return End
	}
	return Bad
}

// NextMember reads the member that starts at obj[i] and returns its key (the text between its
// quotes), its value and the index of the next member, or End after the last one. It returns
// Bad, and no member, when obj[i] does not start one; and Bad with the member when what
// follows it is neither a comma nor the closing brace.
func NextMember(obj []byte, i int) (key, val []byte, next int) {
	return nextMember(obj, i, false)
}

// NextValidMember is NextMember that checks the member's key and value as it reads them: Bad
// for invalid JSON.
func NextValidMember(obj []byte, i int) (key, val []byte, next int) {
	return nextMember(obj, i, true)
}

func nextMember(b []byte, i int, valid bool) (key, val []byte, next int) {
	if i >= len(b) || b[i] != '"' {
		return nil, nil, Bad
	}
	var kEnd int
	if valid {
		kEnd = ValidStringEnd(b, i)
	} else {
		kEnd = StringEnd(b, i)
	}
	if kEnd < 0 {
		return nil, nil, Bad
	}
	key = b[i+1 : kEnd-1]
	i = SkipSpace(b, kEnd)
	if i >= len(b) || b[i] != ':' {
		return nil, nil, Bad
	}
	i = SkipSpace(b, i+1)
	var vEnd int
	if valid {
		vEnd = ValidValueEnd(b, i)
	} else {
		vEnd = ValueEnd(b, i)
	}
	if vEnd < 0 {
		return nil, nil, Bad
	}
	val = b[i:vEnd]
	i = SkipSpace(b, vEnd)
	switch {
	case i < len(b) && b[i] == ',':
		return key, val, SkipSpace(b, i+1)
	case i < len(b) && b[i] == '}':
		return key, val, objectEnd(b, i)
	}
	return key, val, Bad
}

// HasEscape reports whether a key (or string content) holds a backslash escape.
func HasEscape(b []byte) bool { return bytes.IndexByte(b, '\\') >= 0 }

// Members calls fn with the key (the text between its quotes) and the value of each member of
// the JSON object obj, in order, until fn returns false. It reports whether it read the whole
// object: false when fn stopped it, when obj is not one object (white space around it aside),
// and for a key with an escape, which it leaves to the caller's decoder. It is NextMember's
// loop, for callers that keep their state in a closure.
func Members(obj []byte, fn func(key, val []byte) bool) bool {
	i := FirstMember(obj)
	for i >= 0 {
		var key, val []byte
		// A member followed by neither a comma nor the brace still goes to fn, then Bad ends.
		if key, val, i = NextMember(obj, i); val == nil || HasEscape(key) || !fn(key, val) {
			return false
		}
	}
	return i == End
}

// Package jsonscan finds the parts of JSON text without decoding it: the primitives of the
// runtime's hand-written scanners (the JSON-RPC envelope, tools/call params, tool results,
// _meta), which read the messages MCP clients and servers send without encoding/json's
// reflection. Each works on text already known to be valid JSON, which Valid checks.
package jsonscan

import "strconv"

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

// Members calls fn with the key (the text between its quotes) and the value of each member of
// the JSON object obj, in order, until fn returns false. It reports whether it read the whole
// object: false when fn stopped it, when obj is not one object (white space around it aside),
// and for a key with an escape, which it leaves to the caller's decoder.
func Members(obj []byte, fn func(key, val []byte) bool) bool {
	i := SkipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return false
	}
	i = SkipSpace(obj, i+1)
	if i < len(obj) && obj[i] == '}' {
		return SkipSpace(obj, i+1) == len(obj)
	}
	for i < len(obj) && obj[i] == '"' {
		kEnd := StringEnd(obj, i)
		if kEnd < 0 {
			return false
		}
		key := obj[i+1 : kEnd-1]
		for _, c := range key {
			if c == '\\' {
				return false
			}
		}
		i = SkipSpace(obj, kEnd)
		if i >= len(obj) || obj[i] != ':' {
			return false
		}
		i = SkipSpace(obj, i+1)
		vEnd := ValueEnd(obj, i)
		if vEnd < 0 || !fn(key, obj[i:vEnd]) {
			return false
		}
		i = SkipSpace(obj, vEnd)
		if i >= len(obj) {
			return false
		}
		switch obj[i] {
		case ',':
			i = SkipSpace(obj, i+1)
		case '}':
			return SkipSpace(obj, i+1) == len(obj)
		default:
			return false
		}
	}
	return false
}

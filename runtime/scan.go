package runtime

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// This file reads tools/call params without a second encoding/json pass. By the time a
// handler sees its params, decodeMessage has validated the whole body as JSON, so a scanner
// only has to find where values end. It handles the shapes clients send; anything else (escaped
// keys, keys that match a field only without regard to case, a name that is not a string,
// _meta that does not decode) makes it give up, and the caller decodes with encoding/json,
// whose error messages then apply.

// scanCallToolParams extracts name, arguments (a sub-slice of params) and _meta.
func scanCallToolParams(params []byte) (p CallToolParams, ok bool) {
	i := skipSpace(params, 0)
	if i >= len(params) || params[i] != '{' {
		return p, false
	}
	i = skipSpace(params, i+1)
	if i < len(params) && params[i] == '}' {
		return p, true
	}
	for i < len(params) {
		if params[i] != '"' {
			return p, false
		}
		kEnd := stringEnd(params, i)
		if kEnd < 0 {
			return p, false
		}
		key := params[i+1 : kEnd-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			return p, false
		}
		i = skipSpace(params, kEnd)
		if i >= len(params) || params[i] != ':' {
			return p, false
		}
		i = skipSpace(params, i+1)
		vEnd := valueEnd(params, i)
		if vEnd < 0 {
			return p, false
		}
		val := params[i:vEnd]
		switch string(key) {
		case "name":
			if val[0] != '"' {
				return p, false
			}
			if bytes.IndexByte(val, '\\') >= 0 || !utf8.Valid(val) {
				// Escapes, or bytes encoding/json would replace with U+FFFD.
				if json.Unmarshal(val, &p.Name) != nil {
					return p, false
				}
			} else {
				p.Name = string(val[1 : len(val)-1])
			}
		case "arguments":
			if string(val) == "null" {
				p.Arguments = nil
			} else {
				p.Arguments = val
			}
		case "_meta":
			// Decoded once, by runHandler (requestMeta), for every method: not again here.
		default:
			// encoding/json matches field names without regard to case.
			k := string(key)
			if strings.EqualFold(k, "name") || strings.EqualFold(k, "arguments") || strings.EqualFold(k, "_meta") {
				return p, false
			}
		}
		i = skipSpace(params, vEnd)
		if i >= len(params) {
			return p, false
		}
		switch params[i] {
		case ',':
			i = skipSpace(params, i+1)
		case '}':
			return p, true
		default:
			return p, false
		}
	}
	return p, false
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index just past the string that starts at b[i] ('"'), or -1.
func stringEnd(b []byte, i int) int {
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

// valueEnd returns the index just past the (valid) JSON value that starts at b[i], or -1.
func valueEnd(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				e := stringEnd(b, j)
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

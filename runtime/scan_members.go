package runtime

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/protomcp/protomcp/internal/jsonscan"
)

// eachMember calls fn with the key (still quoted-free, unescaped only when it holds no
// escape) and the value of each top-level member of obj, a JSON object from a message
// decodeMessage has validated, in order. It reports false for shapes it leaves to
// encoding/json: an escaped key, or anything but an object; fn may have seen some members by
// then.
func eachMember(obj []byte, fn func(key, val []byte)) bool {
	i := jsonscan.SkipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return false
	}
	i = jsonscan.SkipSpace(obj, i+1)
	if i < len(obj) && obj[i] == '}' {
		return true
	}
	for i < len(obj) {
		if obj[i] != '"' {
			return false
		}
		kEnd := jsonscan.StringEnd(obj, i)
		if kEnd < 0 {
			return false
		}
		key := obj[i+1 : kEnd-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			return false
		}
		i = jsonscan.SkipSpace(obj, kEnd)
		if i >= len(obj) || obj[i] != ':' {
			return false
		}
		i = jsonscan.SkipSpace(obj, i+1)
		vEnd := jsonscan.ValueEnd(obj, i)
		if vEnd < 0 {
			return false
		}
		fn(key, obj[i:vEnd])
		i = jsonscan.SkipSpace(obj, vEnd)
		if i >= len(obj) {
			return false
		}
		switch obj[i] {
		case ',':
			i = jsonscan.SkipSpace(obj, i+1)
		case '}':
			return true
		default:
			return false
		}
	}
	return false
}

// rawMembers decodes a JSON object into a map of its members, as json.Unmarshal into a
// map[string]json.RawMessage does (the last of duplicate keys wins), with values that are
// views of obj rather than copies, each capped at its own length: an append to one (a
// handler's, to RequestMeta.Other or ProgressToken) copies it, as it would encoding/json's
// copy, rather than writing over the rest of obj. It reports false for what it leaves to
// encoding/json.
func rawMembers(obj []byte) (map[string]json.RawMessage, bool) {
	n := 0
	if !eachMember(obj, func(_, _ []byte) { n++ }) {
		return nil, false
	}
	m := make(map[string]json.RawMessage, n)
	eachMember(obj, func(k, v []byte) {
		v = v[:len(v):len(v)]
		switch {
		case string(k) == metaProtocolVersion: // the keys every 2026-07-28 request sends
			m[metaProtocolVersion] = v
		case string(k) == metaClientCaps:
			m[metaClientCaps] = v
		case string(k) == metaClientInfo:
			m[metaClientInfo] = v
		case utf8.Valid(k):
			m[string(k)] = v
		default:
			n = -1 // encoding/json would replace the invalid bytes
		}
	})
	return m, n >= 0
}

// jsonString decodes v, a JSON value, as a string; ok is false when v is not a string. A
// string with no escape and valid UTF-8 is decoded without encoding/json.
func jsonString(v []byte) (s string, ok bool) {
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		in := v[1 : len(v)-1]
		if bytes.IndexByte(in, '\\') < 0 && utf8.Valid(in) {
			return string(in), true
		}
	}
	return s, json.Unmarshal(v, &s) == nil && len(v) > 0 && v[0] == '"'
}

// equalFoldASCII reports whether key equals name without regard to case, as encoding/json
// matches member names to fields (name is ASCII; a key with other bytes matches only by
// strings.EqualFold's own rules, which it asks).
func equalFoldASCII(key []byte, name string) bool {
	if len(key) != len(name) {
		return utf8.RuneCount(key) == len(name) && strings.EqualFold(string(key), name)
	}
	for i := range len(key) {
		a, b := key[i], name[i]
		if a >= 0x80 {
			return strings.EqualFold(string(key), name)
		}
		if a|0x20 != b|0x20 || (a|0x20 < 'a' || a|0x20 > 'z') && a != b {
			return false
		}
	}
	return true
}

package runtime

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/protomcp/protomcp/internal/jsonscan"
)

// rawMembers decodes a JSON object into a map of its members, as json.Unmarshal into a
// map[string]json.RawMessage does (the last of duplicate keys wins), with values that are
// views of obj rather than copies, each capped at its own length: an append to one (a
// handler's, to RequestMeta.Other or ProgressToken) copies it, as it would encoding/json's
// copy, rather than writing over the rest of obj. It reports false for what it leaves to
// encoding/json.
func rawMembers(obj []byte) (map[string]json.RawMessage, bool) {
	n := 0
	if !jsonscan.Members(obj, func(_, _ []byte) bool { n++; return true }) {
		return nil, false
	}
	m := make(map[string]json.RawMessage, n)
	jsonscan.Members(obj, func(k, v []byte) bool {
		if !putMember(m, k, v) {
			n = -1
		}
		return true
	})
	return m, n >= 0
}

// putMember sets m[k] to v, capped at its own length (rawMembers), and reports false for a key
// that is not valid UTF-8, which encoding/json would decode with its invalid bytes replaced.
// The keys every 2026-07-28 request's _meta carries are stored without a new string.
func putMember(m map[string]json.RawMessage, k, v []byte) bool {
	v = v[:len(v):len(v)]
	switch {
	case string(k) == metaProtocolVersion:
		m[metaProtocolVersion] = v
	case string(k) == metaClientCaps:
		m[metaClientCaps] = v
	case string(k) == metaClientInfo:
		m[metaClientInfo] = v
	case utf8.Valid(k):
		m[string(k)] = v
	default:
		return false
	}
	return true
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
	return decodeJSONString(v)
}

// decodeJSONString is jsonString with encoding/json, for strings with escapes or bytes it
// replaces with U+FFFD. Its own function, so that only this rare path moves a string to the heap.
func decodeJSONString(v []byte) (string, bool) {
	var s string
	ok := json.Unmarshal(v, &s) == nil && len(v) > 0 && v[0] == '"'
	return s, ok
}

// foldsToAny reports whether key equals one of names without regard to case, as encoding/json
// matches member names to fields.
func foldsToAny(key []byte, names ...string) bool {
	for _, name := range names {
		if equalFoldASCII(key, name) {
			return true
		}
	}
	return false
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

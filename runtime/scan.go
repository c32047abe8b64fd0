package runtime

import (
	"bytes"

	"github.com/protomcp/protomcp/internal/jsonscan"
)

// This file reads tools/call params without a second encoding/json pass. By the time a
// handler sees its params, decodeMessage has validated the whole body as JSON, so a scanner
// only has to find where values end. It handles the shapes clients send; anything else (escaped
// keys, keys that match a field only without regard to case, a name that is not a string,
// _meta that does not decode) makes it give up, and the caller decodes with encoding/json,
// whose error messages then apply.

// scanCallToolParams extracts name, arguments (a sub-slice of params) and _meta.
func scanCallToolParams(params []byte) (p CallToolParams, ok bool) {
	i := jsonscan.FirstMember(params)
	for i >= 0 {
		var key, val []byte
		if key, val, i = jsonscan.NextMember(params, i); i == jsonscan.Bad || !p.scanMember(key, val) {
			return p, false
		}
	}
	return p, i == jsonscan.End
}

// scanMember takes one member of tools/call params into p; false gives up.
func (p *CallToolParams) scanMember(key, val []byte) bool {
	if jsonscan.HasEscape(key) {
		return false
	}
	switch string(key) {
	case "name":
		if val[0] != '"' {
			return false
		}
		name, ok := jsonString(val) // escapes, and bytes encoding/json would replace with U+FFFD, included
		p.Name = name
		return ok
	case "arguments":
		if string(val) == "null" {
			p.Arguments = nil
		} else {
			p.Arguments = val
		}
	case "_meta":
		// Decoded once, by runHandler (requestMeta), for every method: not again here.
	default:
		return !foldsToAny(key, "name", "arguments", "_meta")
	}
	return true
}

// scanMessage decodes a JSON-RPC envelope without encoding/json's reflection, checking that
// data is valid JSON as it goes (one pass: ok is false for invalid text). It handles the messages clients and servers send: the
// members under their exact names, each once, a string or integer id, an unescaped jsonrpc
// and method; anything else (escaped or duplicate keys, keys that match a member only without
// regard to case, a null or fractional id, an error member) makes it give up, and the caller
// decodes with encoding/json, whose behaviour and error messages then apply. params and result
// are sub-slices of data, not copies.
func scanMessage(data []byte) (*wireMessage, bool) {
	i := jsonscan.FirstMember(data)
	// One allocation for the message and its ID.
	sm := new(struct {
		m  wireMessage
		id ID
	})
	var seen [len(envelopeMembers)]bool
	for i >= 0 {
		var key, val []byte
		if key, val, i = jsonscan.NextValidMember(data, i); i == jsonscan.Bad {
			return nil, false
		}
		member, ok := sm.m.scanMember(key, val, &sm.id)
		if !ok {
			return nil, false
		}
		if member >= 0 {
			if seen[member] {
				return nil, false // encoding/json keeps the last of duplicates
			}
			seen[member] = true
		}
	}
	if i != jsonscan.End {
		return nil, false
	}
	return &sm.m, true
}

// scanMember takes one member of a JSON-RPC envelope into m (its ID into id), and returns
// which of envelopeMembers it is (-1 for another); false gives up.
func (m *wireMessage) scanMember(key, val []byte, id *ID) (member int, ok bool) {
	if jsonscan.HasEscape(key) {
		return -1, false
	}
	switch string(key) {
	case "jsonrpc":
		s, ok := unescapedString(val)
		if ok && string(s) == jsonrpcVersion {
			m.JSONRPC = jsonrpcVersion
		} else {
			m.JSONRPC = string(s)
		}
		return 0, ok
	case "id":
		id.raw = string(val)
		m.ID = id
		return 1, scannableID(val)
	case "method":
		s, ok := unescapedString(val)
		m.Method = internMethod(s)
		return 2, ok
	case "params":
		m.Params = val[:len(val):len(val)]
		return 3, true
	case "result":
		m.Result = val[:len(val):len(val)]
		return 4, true
	}
	return -1, !foldsToEnvelopeMember(key) // "error", or a member in another case, gives up
}

// unescapedString returns the text of val, a JSON value, when it is a string without escapes;
// ok is false for anything else, which scanMessage leaves to encoding/json.
func unescapedString(val []byte) (s []byte, ok bool) {
	if val[0] != '"' || bytes.IndexByte(val, '\\') >= 0 {
		return nil, false
	}
	return val[1 : len(val)-1], true
}

// foldsToEnvelopeMember reports whether key names one of envelopeMembers without regard to
// case, as encoding/json would match it.
func foldsToEnvelopeMember(key []byte) bool {
	for _, em := range envelopeMembers {
		if bytes.EqualFold(key, em) {
			return true
		}
	}
	return false
}

// scannableID reports whether an id's value is one scanMessage takes: a string (whose JSON
// text ID.UnmarshalJSON keeps as it came, escapes included) or an integer that fits an int64.
// null, or anything else, is left to encoding/json's path, which words the error.
func scannableID(val []byte) bool {
	switch {
	case val[0] == '"':
		return true
	case val[0] == '-' || val[0] >= '0' && val[0] <= '9':
		return jsonscan.IsInt64(val)
	}
	return false
}

// internedMethods holds the method names of MCP, each as the one string internMethod returns
// for it.
var internedMethods = func() map[string]string {
	names := []string{
		methodToolsCall, methodToolsList, methodInitialize, methodPing,
		methodResourcesList, methodResourceTemplates, methodResourcesRead,
		methodResourcesSubscribe, methodResourcesUnsub, methodPromptsList, methodPromptsGet,
		methodComplete, methodSetLevel, methodCreateMessage, methodElicit, methodListRoots,
		notifInitialized, notifCancelled, notifProgress, notifMessage,
	}
	m := make(map[string]string, len(names))
	for _, n := range names {
		m[n] = n
	}
	return m
}()

// internMethod returns the method name, without an allocation for the methods of MCP.
func internMethod(b []byte) string {
	if s, ok := internedMethods[string(b)]; ok { // the conversion does not allocate
		return s
	}
	return string(b)
}

// scanToolResult finds structuredContent (a sub-slice) and isError in a tools/call result that
// decodeMessage has validated, in one pass. ok is false for shapes it does not handle (escaped
// keys, keys that match only without regard to case, an isError that is not a boolean): the
// caller then asks encoding/json. As with encoding/json, the last of duplicate members wins.
func scanToolResult(obj []byte) (structured []byte, isError, ok bool) {
	i := jsonscan.FirstMember(obj)
	for i >= 0 {
		var key, val []byte
		if key, val, i = jsonscan.NextMember(obj, i); i == jsonscan.Bad || jsonscan.HasEscape(key) {
			return nil, false, false
		}
		switch string(key) {
		case "structuredContent":
			structured = val[:len(val):len(val)]
		case "isError":
			if isError, ok = scanBool(val, isError); !ok {
				return nil, false, false
			}
		default:
			if foldsToAny(key, "structuredContent", "isError") {
				return nil, false, false
			}
		}
	}
	if i != jsonscan.End {
		return nil, false, false
	}
	return structured, isError, true
}

// scanBool is what encoding/json makes of val, a JSON value, decoded into a bool that holds
// prev: null leaves it alone; ok is false for a value that is not a boolean.
func scanBool(val []byte, prev bool) (b, ok bool) {
	switch string(val) {
	case "true":
		return true, true
	case "false":
		return false, true
	case "null":
		return prev, true
	}
	return prev, false
}

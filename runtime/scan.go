package runtime

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"

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
	i := jsonscan.SkipSpace(params, 0)
	if i >= len(params) || params[i] != '{' {
		return p, false
	}
	i = jsonscan.SkipSpace(params, i+1)
	if i < len(params) && params[i] == '}' {
		return p, true
	}
	for i < len(params) {
		if params[i] != '"' {
			return p, false
		}
		kEnd := jsonscan.StringEnd(params, i)
		if kEnd < 0 {
			return p, false
		}
		key := params[i+1 : kEnd-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			return p, false
		}
		i = jsonscan.SkipSpace(params, kEnd)
		if i >= len(params) || params[i] != ':' {
			return p, false
		}
		i = jsonscan.SkipSpace(params, i+1)
		vEnd := jsonscan.ValueEnd(params, i)
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
				var name string // declared here: only this rare path moves it to the heap
				if json.Unmarshal(val, &name) != nil {
					return p, false
				}
				p.Name = name
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
		i = jsonscan.SkipSpace(params, vEnd)
		if i >= len(params) {
			return p, false
		}
		switch params[i] {
		case ',':
			i = jsonscan.SkipSpace(params, i+1)
		case '}':
			return p, true
		default:
			return p, false
		}
	}
	return p, false
}

// scanMessage decodes a JSON-RPC envelope without encoding/json's reflection, checking that
// data is valid JSON as it goes (one pass: ok is false for invalid text). It handles the messages clients and servers send: the
// members under their exact names, each once, a string or integer id, an unescaped jsonrpc
// and method; anything else (escaped or duplicate keys, keys that match a member only without
// regard to case, a null or fractional id, an error member) makes it give up, and the caller
// decodes with encoding/json, whose behaviour and error messages then apply. params and result
// are sub-slices of data, not copies.
func scanMessage(data []byte) (*wireMessage, bool) {
	i := jsonscan.SkipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return nil, false
	}
	// One allocation for the message and its ID.
	sm := new(struct {
		m  wireMessage
		id ID
	})
	m := &sm.m
	var seen [len(envelopeMembers)]bool
	i = jsonscan.SkipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return m, jsonscan.SkipSpace(data, i+1) == len(data)
	}
	for i < len(data) {
		if data[i] != '"' {
			return nil, false
		}
		kEnd := jsonscan.ValidStringEnd(data, i)
		if kEnd < 0 {
			return nil, false
		}
		key := data[i+1 : kEnd-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			return nil, false
		}
		i = jsonscan.SkipSpace(data, kEnd)
		if i >= len(data) || data[i] != ':' {
			return nil, false
		}
		i = jsonscan.SkipSpace(data, i+1)
		vEnd := jsonscan.ValidValueEnd(data, i)
		if vEnd < 0 {
			return nil, false
		}
		val := data[i:vEnd]
		member := -1
		switch string(key) {
		case "jsonrpc":
			member = 0
			if val[0] != '"' || bytes.IndexByte(val, '\\') >= 0 {
				return nil, false
			}
			if s := val[1 : len(val)-1]; string(s) == jsonrpcVersion {
				m.JSONRPC = jsonrpcVersion
			} else {
				m.JSONRPC = string(s)
			}
		case "id":
			member = 1
			switch {
			case val[0] == '"':
				// ID.UnmarshalJSON keeps a string's JSON text as it came, escapes included.
			case val[0] == '-' || val[0] >= '0' && val[0] <= '9':
				if !jsonscan.IsInt64(val) {
					return nil, false
				}
			default: // null, or not an ID: encoding/json's path words the error
				return nil, false
			}
			sm.id.raw = string(val)
			m.ID = &sm.id
		case "method":
			member = 2
			if val[0] != '"' || bytes.IndexByte(val, '\\') >= 0 {
				return nil, false
			}
			m.Method = internMethod(val[1 : len(val)-1])
		case "params":
			member = 3
			m.Params = val[:len(val):len(val)]
		case "result":
			member = 4
			m.Result = val[:len(val):len(val)]
		default:
			for _, em := range envelopeMembers {
				if bytes.EqualFold(key, em) {
					return nil, false // "error", or a member in another case
				}
			}
		}
		if member >= 0 {
			if seen[member] {
				return nil, false // encoding/json keeps the last of duplicates
			}
			seen[member] = true
		}
		i = jsonscan.SkipSpace(data, vEnd)
		if i >= len(data) {
			return nil, false
		}
		switch data[i] {
		case ',':
			i = jsonscan.SkipSpace(data, i+1)
		case '}':
			if jsonscan.SkipSpace(data, i+1) != len(data) {
				return nil, false // more than one value
			}
			return m, true
		default:
			return nil, false
		}
	}
	return nil, false
}

// internMethod returns the method name, without an allocation for the methods of MCP.
func internMethod(b []byte) string {
	switch string(b) {
	case methodToolsCall:
		return methodToolsCall
	case methodToolsList:
		return methodToolsList
	case methodInitialize:
		return methodInitialize
	case methodPing:
		return methodPing
	case methodResourcesList:
		return methodResourcesList
	case methodResourceTemplates:
		return methodResourceTemplates
	case methodResourcesRead:
		return methodResourcesRead
	case methodResourcesSubscribe:
		return methodResourcesSubscribe
	case methodResourcesUnsub:
		return methodResourcesUnsub
	case methodPromptsList:
		return methodPromptsList
	case methodPromptsGet:
		return methodPromptsGet
	case methodComplete:
		return methodComplete
	case methodSetLevel:
		return methodSetLevel
	case methodCreateMessage:
		return methodCreateMessage
	case methodElicit:
		return methodElicit
	case methodListRoots:
		return methodListRoots
	case notifInitialized:
		return notifInitialized
	case notifCancelled:
		return notifCancelled
	case notifProgress:
		return notifProgress
	case notifMessage:
		return notifMessage
	}
	return string(b)
}

// scanToolResult finds structuredContent (a sub-slice) and isError in a tools/call result that
// decodeMessage has validated, in one pass. ok is false for shapes it does not handle (escaped
// keys, keys that match only without regard to case, an isError that is not a boolean): the
// caller then asks encoding/json. As with encoding/json, the last of duplicate members wins.
func scanToolResult(obj []byte) (structured []byte, isError, ok bool) {
	i := jsonscan.SkipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return nil, false, false
	}
	i = jsonscan.SkipSpace(obj, i+1)
	if i < len(obj) && obj[i] == '}' {
		return nil, false, true
	}
	for i < len(obj) {
		if obj[i] != '"' {
			return nil, false, false
		}
		kEnd := jsonscan.StringEnd(obj, i)
		if kEnd < 0 {
			return nil, false, false
		}
		key := obj[i+1 : kEnd-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			return nil, false, false
		}
		i = jsonscan.SkipSpace(obj, kEnd)
		if i >= len(obj) || obj[i] != ':' {
			return nil, false, false
		}
		i = jsonscan.SkipSpace(obj, i+1)
		vEnd := jsonscan.ValueEnd(obj, i)
		if vEnd < 0 {
			return nil, false, false
		}
		val := obj[i:vEnd]
		switch string(key) {
		case "structuredContent":
			structured = val[:len(val):len(val)]
		case "isError":
			switch string(val) {
			case "true":
				isError = true
			case "false", "null": // encoding/json leaves a bool alone for null
				isError = isError && string(val) == "null"
			default:
				return nil, false, false
			}
		default:
			k := string(key)
			if strings.EqualFold(k, "structuredContent") || strings.EqualFold(k, "isError") {
				return nil, false, false
			}
		}
		i = jsonscan.SkipSpace(obj, vEnd)
		if i >= len(obj) {
			return nil, false, false
		}
		switch obj[i] {
		case ',':
			i = jsonscan.SkipSpace(obj, i+1)
		case '}':
			return structured, isError, true
		default:
			return nil, false, false
		}
	}
	return nil, false, false
}

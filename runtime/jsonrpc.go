package runtime

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"unicode/utf8"

	"github.com/protomcp/protomcp/internal/protojsonfast"
)

// jsonrpcVersion is the only JSON-RPC version MCP speaks.
const jsonrpcVersion = "2.0"

// ID is a JSON-RPC request ID: a string or an integer, kept as its JSON text so that it is
// echoed back exactly as it came. The zero ID is "no ID" (a notification).
type ID struct {
	raw string
}

// StringID returns an ID holding the string s.
func StringID(s string) ID {
	b, _ := json.Marshal(s)
	return ID{raw: string(b)}
}

// IntID returns an ID holding the integer n.
func IntID(n int64) ID { return ID{raw: strconv.FormatInt(n, 10)} }

// IsZero reports whether id is absent.
func (id ID) IsZero() bool { return id.raw == "" }

// String returns the ID's JSON text, e.g. `"abc"` or `7`.
func (id ID) String() string { return id.raw }

// MarshalJSON implements json.Marshaler.
func (id ID) MarshalJSON() ([]byte, error) {
	if id.raw == "" {
		return []byte("null"), nil
	}
	return []byte(id.raw), nil
}

// UnmarshalJSON implements json.Unmarshaler. It accepts strings and integers only; MCP forbids
// null IDs, and fractions or objects are not IDs.
func (id *ID) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return fmt.Errorf("empty id")
	}
	switch b[0] {
	case '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return fmt.Errorf("id: %w", err)
		}
		id.raw = string(b)
		return nil
	case 'n':
		return fmt.Errorf("id must be a string or an integer, not null")
	default:
		if _, err := strconv.ParseInt(string(b), 10, 64); err != nil {
			return fmt.Errorf("id must be a string or an integer, got %s", truncate(string(b), 40))
		}
		id.raw = string(b)
		return nil
	}
}

// wireMessage is any JSON-RPC 2.0 message as it travels: a request (method and id), a
// notification (method, no id), or a response (id and result or error).
type wireMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      *ID             `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}

func (m *wireMessage) isRequest() bool      { return m.Method != "" && m.ID != nil }
func (m *wireMessage) isNotification() bool { return m.Method != "" && m.ID == nil }
func (m *wireMessage) isResponse() bool     { return m.Method == "" && m.ID != nil }

// validate checks the JSON-RPC envelope, returning an *Error with CodeInvalidRequest.
func (m *wireMessage) validate() *Error {
	if m.JSONRPC != jsonrpcVersion {
		if m.JSONRPC == "" {
			return NewError(CodeInvalidRequest, `missing "jsonrpc": "2.0"`)
		}
		return Errorf(CodeInvalidRequest, `unsupported jsonrpc version %q: must be "2.0"`, truncate(m.JSONRPC, 20))
	}
	switch {
	case m.Method != "":
		return m.validateCall()
	case m.ID != nil:
		if (m.Result == nil) == (m.Error == nil) {
			return NewError(CodeInvalidRequest, "a response must carry exactly one of result and error")
		}
		return nil
	default:
		return NewError(CodeInvalidRequest, `a message needs a "method" (request or notification) or an "id" (response)`)
	}
}

// validateCall checks the envelope of a request or notification: no result or error, and
// params, when present, an object (or null).
func (m *wireMessage) validateCall() *Error {
	if m.Result != nil || m.Error != nil {
		return NewError(CodeInvalidRequest, "a message with a method must not carry a result or an error")
	}
	if len(m.Params) == 0 {
		return nil
	}
	if p := bytes.TrimSpace(m.Params); len(p) == 0 || (p[0] != '{' && string(p) != "null") {
		return NewError(CodeInvalidRequest, `"params" must be an object`)
	}
	return nil
}

// decodeMessage decodes one JSON-RPC message. It distinguishes malformed JSON (CodeParseError)
// from well-formed JSON that is not a valid message (CodeInvalidRequest); the ID is returned
// whenever it could be read, so that the error response can carry it.
func decodeMessage(data []byte) (*wireMessage, *Error) {
	if !utf8.Valid(data) {
		// encoding/json would replace bad bytes in strings with U+FFFD but hand them on
		// untouched inside raw params and arguments (Transports: messages MUST be UTF-8 encoded).
		return nil, NewError(CodeParseError, "parse error: the message is not valid UTF-8")
	}
	if m, ok := scanMessage(data); ok { // valid JSON, checked in the same pass
		if e := m.validate(); e != nil {
			return m, e
		}
		return m, nil
	}
	return decodeMessageJSON(data)
}

// decodeMessageJSON is decodeMessage with encoding/json, for the messages scanMessage leaves.
func decodeMessageJSON(data []byte) (*wireMessage, *Error) {
	var m wireMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return undecodable(data, &m, err)
	}
	if m.ID == nil && m.Method != "" && hasNullID(data) {
		// encoding/json leaves a null id as a nil pointer, which would make a request with
		// "id": null pass for a notification that is never answered (Base Protocol, Requests: an ID MUST NOT be null).
		return &m, NewError(CodeInvalidRequest, "invalid request: id must be a string or an integer, not null")
	}
	if e := checkMemberCase(data, &m); e != nil {
		return &m, e
	}
	return &m, m.validate()
}

// undecodable is decodeMessageJSON's answer for data that encoding/json could not decode into
// m (err): a parse error for text that is not JSON; for valid JSON of the wrong shape, an
// invalid request with the ID recovered, so that the error response can carry it.
func undecodable(data []byte, m *wireMessage, err error) (*wireMessage, *Error) {
	if _, ok := err.(*json.SyntaxError); ok || !json.Valid(data) {
		return nil, Errorf(CodeParseError, "parse error: %v", err)
	}
	m.ID = probeID(data)
	return m, Errorf(CodeInvalidRequest, "invalid request: %v", err)
}

// probeID reads the id of data, valid JSON that is not a valid message, so that the error
// response can carry it; nil when there is none to read.
func probeID(data []byte) *ID {
	var probe struct {
		ID *ID `json:"id"`
	}
	if json.Unmarshal(data, &probe) != nil {
		return nil
	}
	return probe.ID
}

// hasNullID reports whether data, a JSON object, has an id member whose value is null.
func hasNullID(data []byte) bool {
	if !bytes.Contains(data, []byte(`"id"`)) {
		return false
	}
	var probe struct {
		ID json.RawMessage `json:"id"`
	}
	return json.Unmarshal(data, &probe) == nil && string(probe.ID) == "null"
}

// encodeResponse encodes a JSON-RPC response carrying result (already JSON) or err.
func encodeResponse(id *ID, result json.RawMessage, err *Error) []byte {
	var buf bytes.Buffer
	buf.Grow(len(result) + 64)
	buf.WriteString(`{"jsonrpc":"2.0","id":`)
	if id == nil || id.IsZero() {
		buf.WriteString("null")
	} else {
		buf.WriteString(id.raw)
	}
	if err != nil {
		buf.WriteString(`,"error":`)
		b, mErr := json.Marshal(err)
		if mErr != nil {
			b, _ = json.Marshal(&Error{Code: CodeInternalError, Message: "could not encode error: " + mErr.Error()})
		}
		buf.Write(b)
	} else {
		buf.WriteString(`,"result":`)
		if len(result) == 0 {
			buf.WriteString("{}")
		} else {
			buf.Write(result)
		}
	}
	buf.WriteByte('}')
	return buf.Bytes()
}

// encodeRequest encodes a JSON-RPC request (id set) or notification (id nil).
//
// The envelope is written around the marshalled params rather than marshalling a wireMessage
// that holds them, which would make encoding/json validate and copy the params a second time.
func encodeRequest(id *ID, method string, params any) ([]byte, error) {
	raw, err := marshalParams(method, params)
	if err != nil {
		return nil, err
	}
	buf := make([]byte, 0, len(raw)+len(method)+64)
	buf = appendRequestHead(buf, id, method)
	if raw != nil && string(raw) != "null" {
		buf = append(buf, `,"params":`...)
		buf = append(buf, raw...)
	}
	return append(buf, '}'), nil
}

// appendRequestHead appends a request's envelope up to its method: jsonrpc, the id (none for
// a notification) and the method, leaving the object open for its params.
func appendRequestHead(buf []byte, id *ID, method string) []byte {
	buf = append(buf, `{"jsonrpc":"2.0"`...)
	if id != nil && !id.IsZero() {
		buf = append(buf, `,"id":`...)
		buf = append(buf, id.raw...)
	}
	buf = append(buf, `,"method":`...)
	return appendMethod(buf, method)
}

// encodeRequestMeta is encodeRequest with params, a JSON object without a _meta member, and
// mb as their _meta, spliced in as the body is written (spliceMeta's result, not copied).
func encodeRequestMeta(id *ID, method string, params, mb []byte) []byte {
	inner := bytes.TrimSpace(params[1 : len(params)-1])
	buf := make([]byte, 0, len(inner)+len(mb)+len(method)+80)
	buf = appendRequestHead(buf, id, method)
	buf = append(buf, `,"params":{`...)
	buf = append(buf, inner...)
	if len(inner) > 0 {
		buf = append(buf, ',')
	}
	buf = append(buf, `"_meta":`...)
	buf = append(buf, mb...)
	return append(buf, "}}"...)
}

// marshalParams encodes a request's params; json.RawMessage is already JSON and is taken as
// it is, without a second validation pass.
func marshalParams(method string, params any) ([]byte, error) {
	if r, ok := params.(json.RawMessage); ok {
		return r, nil
	}
	if params == nil {
		return nil, nil
	}
	b, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("encode %s params: %w", method, err)
	}
	return b, nil
}

// appendMethod appends method as a JSON string, as encoding/json writes it: U+FFFD for bytes
// that are not UTF-8.
func appendMethod(buf []byte, method string) []byte {
	if utf8.ValidString(method) {
		return protojsonfast.AppendString(buf, method)
	}
	m, _ := json.Marshal(method)
	return append(buf, m...)
}

// truncate cuts s to n bytes, marking the cut with "...".
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// withMeta returns params (a JSON object, or empty for none) with meta's entries as its
// _meta member, merged into a _meta it already has.
func withMeta(params json.RawMessage, meta *RequestMeta) (json.RawMessage, error) {
	if meta == nil || (len(meta.ProgressToken) == 0 && len(meta.Other) == 0) {
		return params, nil
	}
	p, err := metaCarrier(params)
	if err != nil {
		return nil, err
	}
	if bytes.Contains(p, []byte(`"_meta"`)) {
		return mergeMeta(p, meta)
	}
	mb, err := json.Marshal(meta)
	if err != nil {
		return nil, err
	}
	return spliceMeta(p, mb)
}

// metaCarrier returns params trimmed, as the object that is to carry a _meta member: {} for
// none, an error for params that are not a JSON object.
func metaCarrier(params json.RawMessage) ([]byte, error) {
	p := bytes.TrimSpace(params)
	if len(p) == 0 || string(p) == "null" {
		p = []byte("{}")
	}
	if p[0] != '{' || p[len(p)-1] != '}' {
		return nil, fmt.Errorf("params must be a JSON object to carry _meta")
	}
	return p, nil
}

// mergeMeta returns p, a JSON object that may have a _meta member, with meta's entries merged
// into that member (meta's win) or as a new one.
func mergeMeta(p []byte, meta *RequestMeta) (json.RawMessage, error) {
	var all map[string]json.RawMessage
	if err := json.Unmarshal(p, &all); err != nil {
		return nil, err
	}
	if old, ok := all["_meta"]; ok {
		var merged RequestMeta
		if err := json.Unmarshal(old, &merged); err != nil {
			return nil, fmt.Errorf("_meta: %w", err)
		}
		merged.override(meta)
		meta = &merged
	}
	mb, err := json.Marshal(meta)
	if err != nil {
		return nil, err
	}
	all["_meta"] = mb
	return json.Marshal(all)
}

// override sets m's progress token and entries to those meta has.
func (m *RequestMeta) override(meta *RequestMeta) {
	if len(meta.ProgressToken) > 0 {
		m.ProgressToken = meta.ProgressToken
	}
	if len(meta.Other) > 0 && m.Other == nil {
		m.Other = make(map[string]json.RawMessage, len(meta.Other))
	}
	maps.Copy(m.Other, meta.Other)
}

// spliceMeta returns params (a JSON object without a _meta member, or empty for none) with
// mb, an encoded _meta, as its _meta member.
func spliceMeta(params json.RawMessage, mb []byte) (json.RawMessage, error) {
	p, err := metaCarrier(params)
	if err != nil {
		return nil, err
	}
	inner := bytes.TrimSpace(p[1 : len(p)-1])
	out := make([]byte, 0, len(p)+len(mb)+10)
	out = append(out, '{')
	out = append(out, inner...)
	if len(inner) > 0 {
		out = append(out, ',')
	}
	out = append(out, `"_meta":`...)
	out = append(out, mb...)
	return append(out, '}'), nil
}

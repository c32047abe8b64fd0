package runtime

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// ProtocolVersion20260728 is MCP 2026-07-28, the first modern (stateless) protocol version:
// no initialize and no sessions; every request carries its version, capabilities and client
// identity in params._meta (spec 2026-07-28, Versioning).
const ProtocolVersion20260728 = "2026-07-28"

// modernVersions are the modern protocol versions this runtime speaks, newest first.
var modernVersions = []string{ProtocolVersion20260728}

func isModernVersion(v string) bool {
	for _, m := range modernVersions {
		if m == v {
			return true
		}
	}
	return false
}

// Era selects which protocol eras a Server serves or a Client speaks (spec 2026-07-28,
// Versioning, Backward Compatibility with Initialization-Based Versions).
type Era int

const (
	// EraAuto serves both eras on one endpoint, choosing per request (a Server), or probes
	// with server/discover and falls back to initialize (a Client). It is the default.
	EraAuto Era = iota
	// EraLegacy speaks only the session era: initialize, Mcp-Session-Id, 2025-11-25 and
	// earlier. A Server answers modern requests as a 2025-11-25 server does (400, no
	// session); a Client never sends server/discover.
	EraLegacy
	// EraModern speaks only the stateless era (2026-07-28). A Server keeps no session table:
	// it refuses initialize, answers GET and DELETE with 405 and ignores Mcp-Session-Id; a
	// Client fails rather than fall back to initialize.
	EraModern
)

// String returns "auto", "legacy" or "modern".
func (e Era) String() string {
	switch e {
	case EraLegacy:
		return "legacy"
	case EraModern:
		return "modern"
	default:
		return "auto"
	}
}

// MCP error codes of the modern era (spec 2026-07-28, schema, MCP error codes).
const (
	// CodeHeaderMismatch: the HTTP headers do not match the body, or a required header is
	// missing or malformed. Answered with 400.
	CodeHeaderMismatch Code = -32020
	// CodeMissingClientCapability: serving the request needs a client capability that the
	// request's clientCapabilities does not declare. data.requiredCapabilities names it.
	CodeMissingClientCapability Code = -32021
	// CodeUnsupportedProtocolVersion: the request's protocol version is not one the server
	// speaks. data.supported lists those it does.
	CodeUnsupportedProtocolVersion Code = -32022
)

func init() {
	codeNames[CodeHeaderMismatch] = "header_mismatch"
	codeNames[CodeMissingClientCapability] = "missing_required_client_capability"
	codeNames[CodeUnsupportedProtocolVersion] = "unsupported_protocol_version"
}

// Method names, headers and _meta keys of the modern era.
const (
	methodDiscover    = "server/discover"
	methodListen      = "subscriptions/listen"
	notifAcknowledged = "notifications/subscriptions/acknowledged"

	headerMethod = "Mcp-Method"
	headerName   = "Mcp-Name"

	metaProtocolVersion = "io.modelcontextprotocol/protocolVersion"
	metaClientInfo      = "io.modelcontextprotocol/clientInfo"
	metaClientCaps      = "io.modelcontextprotocol/clientCapabilities"
	metaLogLevel        = "io.modelcontextprotocol/logLevel"
	metaSubscriptionID  = "io.modelcontextprotocol/subscriptionId"
	metaServerInfo      = "io.modelcontextprotocol/serverInfo"

	resultTypeComplete      = "complete"
	resultTypeInputRequired = "input_required"
)

// namedMethod reports whether a method needs the Mcp-Name header, and which params member
// it mirrors (spec 2026-07-28, Streamable HTTP, Standard Request Headers).
func namedMethod(method string) (field string, ok bool) {
	switch method {
	case methodToolsCall, methodPromptsGet:
		return "name", true
	case methodResourcesRead:
		return "uri", true
	}
	return "", false
}

// base64 sentinel of header values (spec 2026-07-28, Streamable HTTP, Value Encoding).
const (
	sentinelPrefix = "=?base64?"
	sentinelSuffix = "?="
)

// encodeHeaderValue returns v as a header value: as is when it is plain visible ASCII (and
// spaces inside), else in the Base64 sentinel form.
func encodeHeaderValue(v string) string {
	// A plain value that looks like a sentinel is encoded too, overlapping ends included.
	if plainHeaderValue(v) && !(strings.HasPrefix(v, sentinelPrefix) && strings.HasSuffix(v, sentinelSuffix)) {
		return v
	}
	return sentinelPrefix + base64.StdEncoding.EncodeToString([]byte(v)) + sentinelSuffix
}

// plainHeaderValue reports whether v can travel as a header value as it is: empty, or visible
// ASCII with spaces and tabs inside but not at either end (which HTTP would trim).
func plainHeaderValue(v string) bool {
	if v == "" {
		return true
	}
	if isHeaderSpace(v[0]) || isHeaderSpace(v[len(v)-1]) {
		return false
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < 0x20 || c > 0x7e) && c != '\t' {
			return false
		}
	}
	return true
}

// isHeaderSpace reports whether c is whitespace that HTTP trims around a header value.
func isHeaderSpace(c byte) bool { return c == ' ' || c == '\t' }

// isSentinel reports whether v has the form of the Base64 sentinel (room for both ends),
// whether or not its payload decodes.
func isSentinel(v string) bool {
	return len(v) >= len(sentinelPrefix)+len(sentinelSuffix) && strings.HasPrefix(v, sentinelPrefix) && strings.HasSuffix(v, sentinelSuffix)
}

// decodeHeaderValue undoes encodeHeaderValue. It fails for a sentinel whose payload is not
// Base64 of UTF-8 text.
func decodeHeaderValue(v string) (string, bool) {
	if !isSentinel(v) {
		return v, true
	}
	b, err := base64.StdEncoding.DecodeString(v[len(sentinelPrefix) : len(v)-len(sentinelSuffix)])
	if err != nil || !utf8.Valid(b) {
		return "", false
	}
	return string(b), true
}

// hasMetaVersion reports whether params carry _meta's protocolVersion key: a modern request.
// The key elsewhere (in a tool's arguments) does not count.
func hasMetaVersion(params json.RawMessage) bool {
	if !bytes.Contains(params, []byte(`"`+metaProtocolVersion+`"`)) {
		return false
	}
	if meta, found, ok := scanMember(params, "_meta"); ok {
		if !found {
			return false
		}
		if _, found, ok := scanMember(trimSpace(meta), metaProtocolVersion); ok {
			return found
		}
	}
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil {
		return true // a modern request whose _meta is malformed: checkModern says how
	}
	_, ok := p.Meta[metaProtocolVersion]
	return ok
}

// insertResultType returns body, a JSON-RPC response, with resultType "complete" as the first
// member of its result object unless the result already starts with a resultType (spec
// 2026-07-28, schema, Result: servers MUST include it). Error responses are returned as they
// are.
func insertResultType(body []byte, id *ID) []byte {
	return insertResultMembers(body, id, `"resultType":"complete"`)
}

// insertResultMembers is insertResultType with other members besides resultType.
func insertResultMembers(body []byte, id *ID, member string) []byte {
	n, ok := resultStart(body, id)
	if !ok || bytes.HasPrefix(body[n:], []byte(`"resultType"`)) {
		return body
	}
	out := make([]byte, 0, len(body)+len(member)+1)
	out = append(out, body[:n]...)
	out = append(out, member...)
	if body[n] != '}' {
		out = append(out, ',')
	}
	return append(out, body[n:]...)
}

// resultStart returns the offset in body of its result object's first member (or closing
// brace), deciding whether body is a result response to id as encodeResponse writes one.
func resultStart(body []byte, id *ID) (int, bool) {
	idText := "null"
	if id != nil && !id.IsZero() {
		idText = id.raw
	}
	const head, mid = `{"jsonrpc":"2.0","id":`, `,"result":{`
	n := len(head) + len(idText) + len(mid)
	if len(body) < n+1 || string(body[:len(head)]) != head || string(body[len(head)+len(idText):n]) != mid {
		return 0, false
	}
	return n, true
}

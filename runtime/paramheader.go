package runtime

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"strings"
)

// Custom headers from tool parameters (spec 2026-07-28, Streamable HTTP, Custom Headers from
// Tool Parameters): a property of a tool's inputSchema marked "x-mcp-header": "Name" is
// mirrored by clients into the header Mcp-Param-Name, which servers check against the body.

const headerParamPrefix = "Mcp-Param-"

// paramHeader is one x-mcp-header annotation of an inputSchema.
type paramHeader struct {
	name string   // the header is Mcp-Param-<name>
	path []string // the chain of properties keys that leads to the parameter
	typ  string   // "string", "integer" or "boolean"
}

// paramHeaders returns the x-mcp-header annotations of an inputSchema, or an error naming why
// they make the tool definition invalid (spec 2026-07-28, Streamable HTTP, Schema Extension).
func paramHeaders(schema []byte) ([]paramHeader, error) {
	total := bytes.Count(schema, []byte(`"x-mcp-header"`))
	if total == 0 {
		return nil, nil
	}
	var root map[string]any
	if err := json.Unmarshal(schema, &root); err != nil {
		return nil, fmt.Errorf("inputSchema: %w", err)
	}
	c := headerCollector{seen: map[string]bool{}}
	if err := c.walk(root, nil); err != nil {
		return nil, err
	}
	if len(c.out) != total {
		return nil, fmt.Errorf("x-mcp-header appears outside a chain of properties (under items, a composition, a condition or a $ref)")
	}
	return c.out, nil
}

// headerCollector gathers the x-mcp-header annotations found along chains of properties, and
// the header names (lower-cased) already taken.
type headerCollector struct {
	out  []paramHeader
	seen map[string]bool
}

// walk visits the properties of node (reached by path), collecting their annotations and
// those below them; the first invalid one ends the walk.
func (c *headerCollector) walk(node map[string]any, path []string) error {
	props, _ := node["properties"].(map[string]any)
	for key, v := range props {
		prop, ok := v.(map[string]any)
		if !ok {
			continue
		}
		p := append(append([]string(nil), path...), key)
		if err := c.annotation(prop, p); err != nil {
			return err
		}
		if err := c.walk(prop, p); err != nil {
			return err
		}
	}
	return nil
}

// mirrorableTypes are the parameter types a header may mirror (spec 2026-07-28, Streamable
// HTTP, Schema Extension).
var mirrorableTypes = map[string]bool{"string": true, "integer": true, "boolean": true}

// annotation collects the x-mcp-header of prop (at path p), if it has one, deciding whether it
// is valid: an HTTP field-name token, not used twice (case-insensitively), on a parameter of a
// type that may be mirrored.
func (c *headerCollector) annotation(prop map[string]any, p []string) error {
	h, ok := prop["x-mcp-header"]
	if !ok {
		return nil
	}
	name, _ := h.(string)
	if name == "" || !isToken(name) {
		return fmt.Errorf("property %s: x-mcp-header %v is not an HTTP field-name token", strings.Join(p, "."), h)
	}
	if c.seen[strings.ToLower(name)] {
		return fmt.Errorf("property %s: x-mcp-header %q is used twice", strings.Join(p, "."), name)
	}
	c.seen[strings.ToLower(name)] = true
	typ, _ := prop["type"].(string)
	if !mirrorableTypes[typ] {
		return fmt.Errorf("property %s: x-mcp-header on a parameter of type %v; only string, integer and boolean may be mirrored", strings.Join(p, "."), prop["type"])
	}
	c.out = append(c.out, paramHeader{name: name, path: p, typ: typ})
	return nil
}

// isToken reports whether s is an HTTP field-name token (RFC 9110, 1*tchar).
func isToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// argumentAt returns the value at path in a tools/call's arguments, if there is one (null
// counts as none).
func argumentAt(args json.RawMessage, path []string) (json.RawMessage, bool) {
	cur := args
	for _, k := range path {
		var obj map[string]json.RawMessage
		if json.Unmarshal(cur, &obj) != nil {
			return nil, false
		}
		v, ok := obj[k]
		if !ok {
			return nil, false
		}
		cur = v
	}
	if t := bytes.TrimSpace(cur); len(t) == 0 || string(t) == "null" {
		return nil, false
	}
	return cur, true
}

// headerText is the header form of a parameter's JSON value (spec 2026-07-28, Streamable HTTP,
// Value Encoding): strings as they are, integers in decimal, booleans as true or false.
func headerText(raw json.RawMessage, typ string) (string, bool) {
	switch typ {
	case "string":
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return "", false
		}
		return s, true
	case "integer", "boolean":
		t := strings.TrimSpace(string(raw))
		if t == "" || t[0] == '"' || t[0] == '{' || t[0] == '[' {
			return "", false
		}
		return t, true
	}
	return "", false
}

// sameParam compares a decoded header value with the body's, integers numerically.
func sameParam(header, body, typ string) bool {
	if typ != "integer" {
		return header == body
	}
	h, ok1 := new(big.Float).SetString(header)
	b, ok2 := new(big.Float).SetString(body)
	return ok1 && ok2 && h.Cmp(b) == 0
}

// checkParamHeaders checks the Mcp-Param-* headers of a tools/call against its arguments:
// every annotated parameter present in the body must be mirrored, and match after decoding
// (spec 2026-07-28, Streamable HTTP, Server Behavior for Custom Headers).
func checkParamHeaders(h http.Header, anns []paramHeader, args json.RawMessage) *modernError {
	for _, a := range anns {
		if me := checkParamHeader(h, a, args); me != nil {
			return me
		}
	}
	return nil
}

// checkParamHeader checks the Mcp-Param-* header of one annotated parameter: it decides that a
// parameter absent from the body (or not of its type) needs no header, and that a present one
// is mirrored exactly once, validly encoded, with the body's value.
func checkParamHeader(h http.Header, a paramHeader, args json.RawMessage) *modernError {
	header := headerParamPrefix + a.name
	raw, present := argumentAt(args, a.path)
	hv := h.Values(header)
	if !present {
		return nil // the client must omit the header; the server must not expect it
	}
	body, ok := headerText(raw, a.typ)
	if !ok {
		return nil // the arguments' own validation says what is wrong with them
	}
	switch {
	case len(hv) == 0:
		return headerMismatch("missing %s header: the tool mirrors arguments.%s into it (list the tools to learn which headers they need)", header, strings.Join(a.path, "."))
	case len(hv) > 1:
		return headerMismatch("more than one %s header", header)
	}
	v, ok := decodeHeaderValue(hv[0])
	if !ok {
		return headerMismatch("%s header value %q is not valid =?base64?...?= encoding of UTF-8 text", header, truncate(hv[0], 100))
	}
	if !sameParam(v, body, a.typ) {
		return headerMismatch("%s header value %q does not match body value %q", header, truncate(v, 100), truncate(body, 100))
	}
	return nil
}

// setParamHeaders sets the Mcp-Param-* headers of a tools/call from its params' arguments.
func setParamHeaders(req *http.Request, anns []paramHeader, params json.RawMessage) {
	var p struct {
		Arguments json.RawMessage `json:"arguments"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	for _, a := range anns {
		raw, ok := argumentAt(p.Arguments, a.path)
		if !ok {
			continue
		}
		if v, ok := headerText(raw, a.typ); ok {
			req.Header.Set(headerParamPrefix+a.name, encodeHeaderValue(v))
		}
	}
}

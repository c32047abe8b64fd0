package runtime

import (
	"fmt"
	"github.com/stretchr/testify/assert"
	"strings"
	"testing"
)

// The constraints on x-mcp-header values (spec 2026-07-28, Streamable HTTP, Schema Extension).
func TestParamHeadersConstraints(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		schema, err string
		n           int
	}{
		{`{"type":"object","properties":{"a":{"type":"string"}}}`, "", 0},
		{`{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"A"},"b":{"type":"object","properties":{"c":{"type":"boolean","x-mcp-header":"C"}}}}}`, "", 2},
		{`{"type":"object","properties":{"a":{"type":"string","x-mcp-header":""}}}`, "not an HTTP field-name token", 0},
		{`{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"A B"}}}`, "not an HTTP field-name token", 0},
		{`{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"A"},"b":{"type":"string","x-mcp-header":"a"}}}`, "used twice", 0},
		{`{"type":"object","properties":{"a":{"type":"number","x-mcp-header":"A"}}}`, "only string, integer and boolean", 0},
		{`{"type":"object","properties":{"a":{"type":"array","items":{"type":"string","x-mcp-header":"A"}}}}`, "outside a chain of properties", 0},
		{`{"type":"object","oneOf":[{"properties":{"a":{"type":"string","x-mcp-header":"A"}}}]}`, "outside a chain of properties", 0},
	} {
		anns, err := paramHeaders([]byte(tc.schema))
		switch {
		case tc.err == "" && err != nil:
			assert.Fail(t, fmt.Sprintf("%s: %v", tc.schema, err))
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			assert.Fail(t, fmt.Sprintf("%s: error %v, want one containing %q", tc.schema, err, tc.err))
		case tc.err == "" && len(anns) != tc.n:
			assert.Fail(t, fmt.Sprintf("%s: %d annotations, want %d", tc.schema, len(anns), tc.n))
		}
	}
}

// Header values are encoded as the spec's Value Encoding table shows, and decoded back.
func TestHeaderValueEncoding(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]string{
		"us-west1":           "us-west1",
		"Hello, 世界":          "=?base64?SGVsbG8sIOS4lueVjA==?=",
		" padded ":           "=?base64?IHBhZGRlZCA=?=",
		"line1\nline2":       "=?base64?bGluZTEKbGluZTI=?=",
		"=?base64?literal?=": "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=",
	} {
		if got := encodeHeaderValue(v); got != want {
			assert.Fail(t, fmt.Sprintf("encode %q = %q, want %q", v, got, want))
		}
		if back, ok := decodeHeaderValue(want); !ok || back != v {
			assert.Fail(t, fmt.Sprintf("decode %q = %q, %v; want %q", want, back, ok, v))
		}
	}
}

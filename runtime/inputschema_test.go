package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRawToolInputSchema calls a raw tool over loopback HTTP with the runtime client and
// checks that arguments breaking its input schema come back as a tool error naming the path
// and the reason, without the handler running, and that conforming arguments reach it.
func TestRawToolInputSchema(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	var calls atomic.Int32
	const schema = `{"type":"object",
		"properties":{
			"a":{"type":"number"},
			"b":{"type":"number"},
			"items":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string","minLength":1}},"required":["name"]}},
			"labels":{"type":"object","additionalProperties":{"type":"integer"}}
		},
		"required":["a","b"],
		"additionalProperties":false}`
	ts.srv.AddTool(ToolSpec{Name: "add", InputSchema: schema}, func(_ context.Context, req *CallToolRequest) (*CallToolResult, error) {
		calls.Add(1)
		var in struct{ A, B float64 }
		if err := json.Unmarshal(req.Arguments, &in); err != nil {
			return nil, err
		}
		return &CallToolResult{Content: []Content{TextContent(fmt.Sprint(in.A + in.B))}}, nil
	})
	ctx := testCtx(t)
	c := ts.newClient(t)
	require.NoError(t, c.Connect(ctx))

	res, err := c.CallTool(ctx, "add", json.RawMessage(`{"a":1,"b":2.5,"items":[{"name":"x"}],"labels":{"k":3}}`))
	require.NoError(t, err, "valid arguments")
	require.False(t, res.IsError, "valid arguments: %s", res.Text())
	require.Equal(t, "3.5", res.Text(), "valid arguments")
	require.EqualValues(t, 1, calls.Load(), "handler runs for valid arguments")

	bad := []struct{ name, args, want string }{
		{"invalid type", `{"a":"1","b":2}`, "invalid arguments for tool add: a: got string, want number"},
		{"missing required", `{"a":1}`, "invalid arguments for tool add: missing property 'b'"},
		{"no arguments at all", ``, "missing properties 'a', 'b'"},
		{"extra property", `{"a":1,"b":2,"c":3}`, "additional properties 'c' not allowed"},
		{"nested path in an array", `{"a":1,"b":2,"items":[{"name":"x"},{"name":""}]}`, "items[1].name: minLength: got 0, want 1"},
		{"nested required", `{"a":1,"b":2,"items":[{}]}`, "items[0]: missing property 'name'"},
		{"map key that is no identifier", `{"a":1,"b":2,"labels":{"a b":1.5}}`, `labels["a b"]: got number, want integer`},
		{"several problems", `{"a":true,"b":null}`, "a: got boolean, want number; b: got null, want number"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			var args json.RawMessage
			if tc.args != "" {
				args = json.RawMessage(tc.args)
			}
			res, err := c.CallTool(ctx, "add", args)
			require.NoError(t, err, "want a tool error result, not a call error")
			assert.True(t, res.IsError, "isError of %q", res.Text())
			assert.Contains(t, res.Text(), tc.want)
		})
	}
	assert.EqualValues(t, 1, calls.Load(), "handler runs: only for the valid call")

	// Many problems with long names: the message is bounded whatever the arguments hold.
	var b strings.Builder
	b.WriteString(`{"a":1,"b":2,"labels":{`)
	for i := range 200 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"%s%d":"x"`, strings.Repeat("k", 5000), i)
	}
	b.WriteString(`}}`)
	res, err = c.CallTool(ctx, "add", json.RawMessage(b.String()))
	require.NoError(t, err, "200 bad labels")
	require.True(t, res.IsError, "200 bad labels")
	assert.LessOrEqual(t, len(res.Text()), 2048, "bytes of the error text: the input must not be echoed without bound")
	assert.Contains(t, res.Text(), "and 195 more", "the error text counts the problems left out")
}

// TestRawToolInputSchemaRegistration checks that a schema that does not compile, or refers to
// another document, is refused when the tool is registered, with a message saying so.
func TestRawToolInputSchemaRegistration(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, schema, want string }{
		{"unknown type", `{"type":"object","properties":{"a":{"type":"nosuchtype"}}}`, `tool "t": input schema does not compile`},
		{"keyword of the wrong type", `{"type":"object","required":"a"}`, `tool "t": input schema does not compile`},
		{"bad pattern", `{"type":"object","properties":{"a":{"type":"string","pattern":"("}}}`, `tool "t": input schema does not compile`},
		{"reference to a file", `{"type":"object","properties":{"a":{"$ref":"file:///etc/passwd"}}}`, "must be self-contained"},
		{"reference to a URL", `{"$ref":"https://example.com/schema.json"}`, "must be self-contained"},
		{"not an object", `[1]`, "input schema is not a JSON object"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := NewServer(Implementation{Name: "t", Version: "0"}, WithLogger(discardLogger()))
			var panicked any
			func() {
				defer func() { panicked = recover() }()
				s.AddTool(ToolSpec{Name: "t", InputSchema: tc.schema}, func(context.Context, *CallToolRequest) (*CallToolResult, error) {
					return &CallToolResult{}, nil
				})
			}()
			require.NotNil(t, panicked, "AddTool accepted the schema")
			assert.Contains(t, fmt.Sprint(panicked), tc.want)
			_, registered := s.tools.get("t")
			assert.False(t, registered, "the tool was registered anyway")
		})
	}
	// A reference inside the schema resolves.
	s := NewServer(Implementation{Name: "t", Version: "0"}, WithLogger(discardLogger()))
	s.AddTool(ToolSpec{Name: "t", InputSchema: `{"type":"object","$defs":{"n":{"type":"integer"}},"properties":{"a":{"$ref":"#/$defs/n"}}}`},
		func(context.Context, *CallToolRequest) (*CallToolResult, error) { return &CallToolResult{}, nil })
	e, _ := s.tools.get("t")
	assert.Contains(t, checkInputSchema(e.schema, json.RawMessage(`{"a":"x"}`)), "a: got string, want integer", "a local $ref")
}

// BenchmarkCheckInputSchema measures the check of a raw tool's arguments against a schema
// with a few typed, required properties: what a raw tool call costs beyond its handler.
func BenchmarkCheckInputSchema(b *testing.B) {
	schema := compileInputSchema("bench", json.RawMessage(`{"type":"object","properties":{"city":{"type":"string","minLength":1},"days":{"type":"integer","minimum":1,"maximum":14},"units":{"enum":["metric","imperial"]}},"required":["city"],"additionalProperties":false}`))
	args := json.RawMessage(`{"city":"Paris","days":3,"units":"metric"}`)
	b.ReportAllocs()
	for b.Loop() {
		if msg := checkInputSchema(schema, args); msg != "" {
			require.Fail(b, msg) // a benchmark of the valid path
		}
	}
}

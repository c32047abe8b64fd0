package runtime

import (
	"encoding/json"
	"sync/atomic"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	mcpv1 "github.com/protomcp/protomcp/gen/mcp/v1"
)

// TestMessageResultEncoding checks the pre-encoded typed result: valid JSON whose
// structuredContent is the protojson of the message and whose text mirrors it exactly,
// whatever the characters, and whose size hint does not change the bytes.
func TestMessageResultEncoding(t *testing.T) {
	var hint atomic.Int64
	for _, text := range []string{"", "plain", `quote " backslash \ slash /`, "ctl \x00\x01\x1f\t\r\n end", "ünïcødé ✓ \u2028 <&>", string(make([]byte, 5000))} {
		msg := &mcpv1.TextContent{Text: text}
		for range 2 { // the second time with the hint of the first
			res, err := messageResult(msg, &hint)
			if err != nil {
				t.Fatal(err)
			}
			raw, err := encodeToolResult(res)
			if err != nil {
				t.Fatal(err)
			}
			var got CallToolResult
			if err := json.Unmarshal(raw, &got); err != nil {
				t.Fatalf("%q: invalid JSON %s: %v", text, raw, err)
			}
			if len(got.Content) != 1 || got.Content[0].Type != "text" || got.Content[0].Text != string(got.StructuredContent) {
				t.Fatalf("%q: text does not mirror structuredContent: %s", text, raw)
			}
			if string(res.StructuredContent) != string(got.StructuredContent) {
				t.Fatalf("%q: StructuredContent view %s, wire %s", text, res.StructuredContent, got.StructuredContent)
			}
			back := &mcpv1.TextContent{}
			if err := protojson.Unmarshal(got.StructuredContent, back); err != nil || !proto.Equal(back, msg) {
				t.Fatalf("%q: structuredContent %s decodes to %v (%v)", text, got.StructuredContent, back, err)
			}
		}
	}
}

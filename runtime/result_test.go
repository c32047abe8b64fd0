package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/structpb"

	mcpv1 "github.com/protomcp/protomcp/gen/mcp/v1"
	weatherv1 "github.com/protomcp/protomcp/gen/weather/v1"
	"github.com/protomcp/protomcp/internal/protojsonfast"
)

// TestMessageResultEncoding checks the pre-encoded typed result: valid JSON whose
// structuredContent is the protojson of the message and whose text mirrors it exactly,
// whatever the characters, and whose size hint does not change the bytes.
func TestMessageResultEncoding(t *testing.T) {
	t.Parallel()
	var enc resultEncoding
	for _, text := range []string{"", "plain", `quote " backslash \ slash /`, "ctl \x00\x01\x1f\t\r\n end", "ünïcødé ✓ \u2028 <&>", string(make([]byte, 5000))} {
		msg := &mcpv1.TextContent{Text: text}
		for range 2 { // the second time with the hint of the first
			res, err := messageResult(msg, &enc)
			require.NoError(t, err)
			raw, err := encodeToolResult(res)
			require.NoError(t, err)
			var got CallToolResult
			require.NoError(t, json.Unmarshal(raw, &got), "%q: invalid JSON %s", text, raw)
			require.Len(t, got.Content, 1, "%q: %s", text, raw)
			assert.Equal(t, "text", got.Content[0].Type, "%q: %s", text, raw)
			assert.Equal(t, string(got.StructuredContent), got.Content[0].Text, "%q: text does not mirror structuredContent", text)
			assert.Equal(t, string(got.StructuredContent), string(res.StructuredContent), "%q: StructuredContent view differs from the wire", text)
			back := &mcpv1.TextContent{}
			require.NoError(t, protojson.Unmarshal(got.StructuredContent, back), "%q: structuredContent %s", text, got.StructuredContent)
			if diff := cmp.Diff(msg, back, protocmp.Transform()); diff != "" {
				require.Fail(t, fmt.Sprintf("%q: structuredContent %s decodes to another message (-want +got):\n%s", text, got.StructuredContent, diff))
			}
		}
	}
}

// TestPooledResultsUnderConcurrency checks that reused result buffers never leak one call's
// answer into another's: concurrent calls of different sizes each get exactly their own.
func TestPooledResultsUnderConcurrency(t *testing.T) {
	t.Parallel()
	s := NewServer(Implementation{Name: "pool", Version: "1"})
	AddTypedTool(s, ToolSpec{Name: "echo", InputSchema: `{"type":"object"}`, OutputSchema: `{"type":"object"}`},
		func(_ context.Context, in *mcpv1.TextContent) (*mcpv1.TextContent, error) {
			return &mcpv1.TextContent{Text: strings.Repeat(in.GetText(), len(in.GetText()))}, nil
		})
	hs := httptest.NewServer(s)
	defer hs.Close()
	defer s.Shutdown(context.Background())
	c := NewClient(hs.URL)
	ctx := context.Background()
	defer c.Close(ctx)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Go(func() {
			for i := range 40 {
				text := strings.Repeat(string(rune('a'+w)), 1+(i*7+w*13)%90)
				res, err := CallTypedTool[mcpv1.TextContent](ctx, c, "echo", &mcpv1.TextContent{Text: text})
				want := strings.Repeat(text, len(text))
				if err != nil || res.GetText() != want {
					errs <- fmt.Errorf("caller %d call %d: got %.40q (%v), want %.40q", w, i, res.GetText(), err, want)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		assert.NoError(t, err)
	}
}

// TestResultEncodingFollowsTheResultType checks that the per-tool memory of whether
// protojsonfast writes a result type follows the type: an interceptor may replace a tool's
// result with another type, which must not be written with the first type's answer.
func TestResultEncodingFollowsTheResultType(t *testing.T) {
	t.Parallel()
	var enc resultEncoding
	fast := &weatherv1.GetForecastResponse{}
	slow, err := structpb.NewStruct(map[string]any{"a": 1})
	require.NoError(t, err)
	require.NotEqual(t, protojsonfast.Supported(fast.ProtoReflect().Descriptor()), protojsonfast.Supported(slow.ProtoReflect().Descriptor()),
		"the test needs one type that protojsonfast writes and one that it leaves to protojson")
	for _, m := range []proto.Message{fast, slow, fast, slow} {
		md := m.ProtoReflect().Descriptor()
		assert.Equal(t, protojsonfast.Supported(md), enc.fast(md), "%s", md.FullName())
		var er encodedResult
		_, err := encodeMessageResult(&er, m, &enc)
		require.NoError(t, err)
		want, err := protojson.Marshal(m)
		require.NoError(t, err)
		var got struct {
			StructuredContent json.RawMessage `json:"structuredContent"`
		}
		require.NoError(t, json.Unmarshal(er.buf[er.off:], &got))
		assert.JSONEq(t, string(want), string(got.StructuredContent), "%s", md.FullName())
	}
}

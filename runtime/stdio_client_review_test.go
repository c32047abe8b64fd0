package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	mcpv1 "github.com/protomcp/protomcp/gen/mcp/v1"
	"github.com/protomcp/protomcp/runtime"
)

// bigElicitServer is a stdio server whose tool "ask" elicits with a message larger than 64
// KiB, after a small elicitation when first is set, and reports what its elicitation returned
// on elicitErr.
func bigElicitServer(first bool, elicitErr chan<- error) *runtime.Server {
	srv := newStdioServer(runtime.WithCallerRequestTimeout(testTimeout))
	runtime.AddTypedTool(srv, runtime.ToolSpec{Name: "ask"}, func(ctx context.Context, in *mcpv1.TextContent) (*mcpv1.TextContent, error) {
		c := runtime.CallerFrom(ctx)
		if first {
			if _, err := c.Elicit(ctx, &runtime.ElicitParams{Message: "small"}); err != nil {
				return nil, err
			}
		}
		_, err := c.Elicit(ctx, &runtime.ElicitParams{Message: strings.Repeat("x", 100<<10)})
		elicitErr <- err
		if err != nil {
			return nil, err
		}
		return &mcpv1.TextContent{Text: "ok"}, nil
	})
	return srv
}

// TestStdioClientAnswersOversizeServerRequest checks that a server request larger than the
// client's maximum event size is answered with an error naming the limit (a request gets a
// response, spec 2025-11-25, Basic, Requests), so that the server's handler goes on and the
// call ends with its outcome rather than with the caller's deadline.
func TestStdioClientAnswersOversizeServerRequest(t *testing.T) {
	for _, first := range []bool{false, true} {
		elicitErr := make(chan error, 2)
		c, _ := stdioPair(t, bigElicitServer(first, elicitErr),
			runtime.WithMaxEventSize(64<<10),
			runtime.WithElicitationHandler(func(context.Context, *runtime.ElicitParams) (*runtime.ElicitResult, error) {
				return &runtime.ElicitResult{Action: "decline"}, nil
			}))
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		_, err := c.CallTool(ctx, "ask", json.RawMessage(`{}`))
		cancel()
		require.NotErrorIs(t, err, context.DeadlineExceeded, "first=%v", first)
		var herr error
		select {
		case herr = <-elicitErr:
		default:
			t.Fatalf("first=%v: the handler's elicitation has not returned though the call has", first)
		}
		require.Error(t, herr)
		assert.Contains(t, herr.Error(), "larger than the client's limit of 65536 bytes", "first=%v", first)
		var rpcErr *runtime.Error
		if errors.As(herr, &rpcErr) {
			assert.Equal(t, runtime.CodeInvalidRequest, rpcErr.Code)
		}
	}
}

package runtime_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	mcpv1 "github.com/protomcp/protomcp/gen/mcp/v1"
	"github.com/protomcp/protomcp/runtime"
)

// A client's answer to a request of the server's that is over the server's size limit fails
// that request at once; it is not answered as if it were a request (a response gets no
// response), which would reach a call of the client's with the same id.
func TestStdioOversizeClientAnswerFailsTheServersRequest(t *testing.T) {
	srv := newStdioServer(runtime.WithMaxBodyBytes(64<<10), runtime.WithCallerRequestTimeout(20*time.Second))
	handlerErr := make(chan error, 1)
	runtime.AddTypedTool(srv, runtime.ToolSpec{Name: "ask"}, func(ctx context.Context, in *mcpv1.TextContent) (*mcpv1.TextContent, error) {
		c := runtime.CallerFrom(ctx)
		_, err := c.Elicit(ctx, &runtime.ElicitParams{Message: "one"})
		if err == nil {
			_, err = c.Elicit(ctx, &runtime.ElicitParams{Message: "two"})
		}
		handlerErr <- err
		if err != nil {
			return nil, err
		}
		return &mcpv1.TextContent{Text: "ok"}, nil
	})
	var n atomic.Int64
	c, _ := stdioPair(t, srv, runtime.WithElicitationHandler(func(ctx context.Context, p *runtime.ElicitParams) (*runtime.ElicitResult, error) {
		if n.Add(1) == 2 {
			return &runtime.ElicitResult{Action: "accept", Content: map[string]any{"x": strings.Repeat("y", 100<<10)}}, nil
		}
		return &runtime.ElicitResult{Action: "decline"}, nil
	}))
	ctx := testCtx(t)
	_, err := c.CallTool(ctx, "ask", json.RawMessage(`{}`))
	require.Error(t, err, "the tool's second elicitation got an answer over the limit")
	assert.Contains(t, err.Error(), "the client's response exceeds the server's limit", "the call fails with the server's request's error, not one about its own size")
	select {
	case herr := <-handlerErr:
		require.Error(t, herr)
		assert.Contains(t, herr.Error(), "exceeds the server's limit")
	case <-time.After(5 * time.Second):
		require.Fail(t, "the server's elicitation still waits for an answer the server refused")
	}
}

// A stdio session is not ended by the handshake timeout however long the client waits before
// its next message: the connection is its handshake.
func TestStdioSessionOutlivesTheHandshakeTimeout(t *testing.T) {
	srv := newStdioServer(runtime.WithHandshakeTimeout(100 * time.Millisecond))
	h := newHandStdio(t, srv)
	h.initialize(t)
	time.Sleep(400 * time.Millisecond) // the reaper runs at least once past the timeout
	h.send(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`)
	got := h.readMessage(t)
	assert.Nil(t, got["error"], "the call after a pause: %v", got)
	assert.NotNil(t, got["result"], "the call after a pause: %v", got)
	h.finish(t)
}

// A client that closes its input while a request runs makes no error-level log: the
// cancelled request's response has nobody to go to.
func TestStdioEOFWithRequestInFlightLogsNoError(t *testing.T) {
	var log logBuffer
	srv := newStdioServer(runtime.WithLogger(slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelInfo}))))
	started := make(chan struct{})
	runtime.AddTypedTool(srv, runtime.ToolSpec{Name: "slow"}, func(ctx context.Context, in *mcpv1.TextContent) (*mcpv1.TextContent, error) {
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	h := newHandStdio(t, srv)
	h.initialize(t)
	h.send(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","arguments":{}}}`)
	<-started
	h.finish(t)
	assert.NotContains(t, log.String(), "level=ERROR", "log:\n%s", log.String())
}

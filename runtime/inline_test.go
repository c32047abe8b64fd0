package runtime_test

// Tests of handlers that run on their HTTP request's goroutine (inline.go) where the server
// cannot end a response before the handler returns by taking its connection: HTTP/2 and the
// stdio transport's in-memory exchanges.

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/protomcp/protomcp/runtime"
)

// pollThenElicit is a tool that closes its SSE stream (SSE polling) and then asks the client
// for input: the elicitation goes out on the connection the client resumes with, so the
// client must be able to resume while the handler still runs.
func pollThenElicit(s *runtime.Server) {
	s.AddTool(runtime.ToolSpec{Name: "poll-elicit"}, func(ctx context.Context, _ *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		c := runtime.CallerFrom(ctx)
		if err := c.CloseSSEStream(); err != nil {
			return nil, err
		}
		res, err := c.Elicit(ctx, &runtime.ElicitParams{Message: "name?"})
		if err != nil {
			return nil, err
		}
		return &runtime.CallToolResult{Content: []runtime.Content{runtime.TextContent(res.Action)}}, nil
	})
}

func acceptAll(context.Context, *runtime.ElicitParams) (*runtime.ElicitResult, error) {
	return &runtime.ElicitResult{Action: "accept"}, nil
}

// TestCloseSSEStreamThenElicitOverHTTP2: over HTTP/2 the server cannot take a connection to
// end a response while the handler runs on its goroutine; a handler that closes its stream and
// then waits for an answer from the client must still get it (the client resumes and receives
// the elicitation), within the caller request timeout rather than failing at it.
func TestCloseSSEStreamThenElicitOverHTTP2(t *testing.T) {
	srv := runtime.NewServer(runtime.Implementation{Name: "h2", Version: "1"}, runtime.WithLogger(discardLogger()),
		runtime.WithRetryInterval(10*time.Millisecond), runtime.WithCallerRequestTimeout(5*time.Second))
	pollThenElicit(srv)
	hs := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor != 2 {
			t.Errorf("request over %s, want HTTP/2", r.Proto)
		}
		srv.ServeHTTP(w, r)
	}))
	hs.EnableHTTP2 = true
	hs.StartTLS()
	t.Cleanup(func() {
		shutdownServer(srv)
		hs.Close()
	})
	c := runtime.NewClient(hs.URL, runtime.WithEra(runtime.EraLegacy), runtime.WithHTTPClient(hs.Client()),
		runtime.WithElicitationHandler(acceptAll), runtime.WithLogger(discardLogger()))
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	res, err := c.CallTool(testCtx(t), "poll-elicit", nil)
	require.NoError(t, err)
	assert.Equal(t, "accept", res.Text())
}

// TestStdioCloseSSEStreamThenElicit: the same over stdio, whose in-memory exchanges cannot be
// taken either: the stdio connection resumes the closed stream at once, and the elicitation
// the handler sends after the close reaches the client.
func TestStdioCloseSSEStreamThenElicit(t *testing.T) {
	srv := newStdioServer(runtime.WithRetryInterval(10*time.Millisecond), runtime.WithCallerRequestTimeout(5*time.Second))
	pollThenElicit(srv)
	c, done := stdioPair(t, srv, runtime.WithElicitationHandler(acceptAll))
	res, err := c.CallTool(testCtx(t), "poll-elicit", nil)
	require.NoError(t, err)
	assert.Equal(t, "accept", res.Text())
	require.NoError(t, c.Close(testCtx(t)))
	waitServer(t, done)
}

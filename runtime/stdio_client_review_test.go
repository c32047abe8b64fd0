package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

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

// fortyServer is a server whose streaming tool "forty" sends forty messages, closes sent
// (when not nil), then waits for its context to end when hold is set, else returns.
func fortyServer(hold bool, sent chan struct{}) *runtime.Server {
	srv := newStdioServer()
	runtime.AddStreamTool(srv, runtime.ToolSpec{Name: "forty"}, func(ctx context.Context, in *mcpv1.TextContent, st *runtime.ServerStream[mcpv1.TextContent]) error {
		for range 40 {
			if err := st.Send(&mcpv1.TextContent{Text: "m"}); err != nil {
				return err
			}
		}
		if sent != nil {
			close(sent)
		}
		if hold {
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	})
	return srv
}

// httpClient returns a client of srv over Streamable HTTP, closed at the test's end.
func httpClient(t *testing.T, srv *runtime.Server, opts ...runtime.ClientOption) *runtime.Client {
	t.Helper()
	ts := httptest.NewServer(srv)
	c := runtime.NewClient(ts.URL, append([]runtime.ClientOption{runtime.WithLogger(discardLogger())}, opts...)...)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		_ = c.Close(ctx)
		ts.Close()
		shutdownServer(srv)
	})
	return c
}

// TestToolStreamCancelledEndsWithContextError checks that a stream whose caller cancels it,
// while messages wait in its buffer, ends with context.Canceled (after some of those
// messages), on stdio as over HTTP: not with the gap in the sequence the cancellation leaves.
func TestToolStreamCancelledEndsWithContextError(t *testing.T) {
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			sent := make(chan struct{})
			var c *runtime.Client
			if transport == "stdio" {
				c, _ = stdioPair(t, fortyServer(false, sent))
			} else {
				c = httpClient(t, fortyServer(false, sent))
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			s := runtime.CallToolStream[mcpv1.TextContent](ctx, c, "forty", &mcpv1.TextContent{})
			defer s.Close()
			// The server has sent every message; the stream's buffer holds StreamBuffer of
			// them, and the rest wait.
			select {
			case <-sent:
			case <-time.After(testTimeout):
				t.Fatal("the server did not send its messages")
			}
			cancel()
			n := 0
			var err error
			for {
				if _, err = s.Recv(); err != nil {
					break
				}
				n++
			}
			require.ErrorIs(t, err, context.Canceled, "after %d messages", n)
			assert.Less(t, n, 40)
		})
	}
}

// TestClientCloseEndsUnreadToolStream checks that Close of a client with a ToolStream its
// caller does not read, whose messages wait for room in its buffer, ends the stream with
// ErrClosed and does not wait for it as for a handler that ignores its context, on stdio as
// over HTTP.
func TestClientCloseEndsUnreadToolStream(t *testing.T) {
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			var log logBuffer
			logger := runtime.WithLogger(slog.New(slog.NewTextHandler(&log, nil)))
			var c *runtime.Client
			if transport == "stdio" {
				c, _ = stdioPair(t, fortyServer(true, nil), logger)
			} else {
				c = httpClient(t, fortyServer(true, nil), logger)
			}
			// The caller's progress callback sees each message before the stream does: once it
			// has seen one more than the buffer holds, that one waits for room.
			var seen atomic.Int64
			s := runtime.CallToolStream[mcpv1.TextContent](context.Background(), c, "forty", &mcpv1.TextContent{},
				runtime.WithProgress(func(*runtime.ProgressParams) { seen.Add(1) }))
			defer s.Close()
			require.True(t, waitFor(testTimeout, func() bool { return seen.Load() > runtime.StreamBuffer }))
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			require.NoError(t, c.Close(ctx))
			assert.NotContains(t, log.String(), "handlers still running")
			n := 0
			var err error
			for {
				if _, err = s.Recv(); err != nil {
					break
				}
				n++
			}
			assert.Less(t, n, 40)
			assert.NotErrorIs(t, err, io.EOF, "after %d messages", n)
			if transport == "stdio" {
				assert.ErrorIs(t, err, runtime.ErrClosed, "after %d messages", n)
			}
		})
	}
}

// floodServer is a server whose streaming tool "flood" sends messages of 1 KiB: for "a",
// StreamBuffer+13 of them, then it waits for its context to end; for anything else, 5.
func floodServer() *runtime.Server {
	srv := newStdioServer()
	runtime.AddStreamTool(srv, runtime.ToolSpec{Name: "flood"}, func(ctx context.Context, in *mcpv1.TextContent, st *runtime.ServerStream[mcpv1.TextContent]) error {
		n := 5
		if in.GetText() == "a" {
			n = runtime.StreamBuffer + 13
		}
		for range n {
			if err := st.Send(&mcpv1.TextContent{Text: strings.Repeat("f", 1<<10)}); err != nil {
				return err
			}
		}
		if in.GetText() == "a" {
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	})
	return srv
}

// TestStdioUnreadStreamDoesNotStarveOthers checks that a stream its caller does not read,
// whose messages spend the client's notification budget, fails with an error naming that
// budget, while another stream, read promptly, gets all its messages.
func TestStdioUnreadStreamDoesNotStarveOthers(t *testing.T) {
	c, _ := stdioPair(t, floodServer(), runtime.WithNotificationBudget(16<<10))
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	// a's caller reads nothing: its buffer fills, then its next messages wait in the budget,
	// which they spend, with b's, whichever arrive first.
	var seen atomic.Int64
	actx, acancel := context.WithCancel(ctx)
	defer acancel()
	a := runtime.CallToolStream[mcpv1.TextContent](actx, c, "flood", &mcpv1.TextContent{Text: "a"},
		runtime.WithProgress(func(*runtime.ProgressParams) { seen.Add(1) }))
	defer a.Close()
	require.True(t, waitFor(testTimeout, func() bool { return seen.Load() > 0 }))
	b := runtime.CallToolStream[mcpv1.TextContent](ctx, c, "flood", &mcpv1.TextContent{Text: "b"})
	n := 0
	for _, err := range b.All() {
		require.NoError(t, err, "stream b after %d messages", n)
		n++
	}
	assert.Equal(t, 5, n)
	// a failed for spending the budget, unless its messages and b's happened to fit in it.
	acancel()
	var err error
	for {
		if _, err = a.Recv(); err != nil {
			break
		}
	}
	if !errors.Is(err, context.Canceled) {
		assert.Contains(t, err.Error(), "WithNotificationBudget")
	}
}

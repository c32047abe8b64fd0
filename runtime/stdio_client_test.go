package runtime_test

// Tests of the client's message connection: NewCommandClient and NewStdioClient over real
// processes and pipes, and NewInMemoryClient.

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	mcpv1 "github.com/protomcp/protomcp/gen/mcp/v1"
	"github.com/protomcp/protomcp/runtime"
)

// A child that exits fails the calls with how it exited and what it last wrote to stderr, not
// with an error about streams.
func TestCommandClientReportsChildExit(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	cmd := childCommand(t, "exit-early")
	c, err := runtime.NewCommandClient(cmd, runtime.WithLogger(discardLogger()))
	require.NoError(t, err)
	ctx := testCtx(t)
	err = c.Connect(ctx)
	require.Error(t, err, "Connect to a child that exits")
	msg := err.Error()
	assert.Contains(t, msg, "the stdio server "+cmd.Path)
	assert.Contains(t, msg, "exited (exit status 3)")
	assert.Contains(t, msg, "child started in mode exit-early", "the end of the child's stderr")
	assert.NotContains(t, msg, "event ID")
	var exit *exec.ExitError
	if assert.ErrorAs(t, err, &exit) {
		assert.Equal(t, 3, exit.ExitCode())
	}
	// Later calls fail at once, the same way.
	start := time.Now()
	_, err = echo(ctx, c, "x")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "exited (exit status 3)")
	assert.Less(t, time.Since(start), 5*time.Second)
	require.NoError(t, c.Close(ctx))
	goleak.VerifyNone(t, leaks)
}

// A child that writes no JSON-RPC at all (a server not started in its stdio mode) fails
// initialize at its deadline with a question about its mode, quoting what it wrote.
func TestCommandClientChildNotSpeakingStdio(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	c, err := runtime.NewCommandClient(childCommand(t, "banner"), runtime.WithLogger(discardLogger()))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(testCtx(t), time.Second)
	defer cancel()
	err = c.Connect(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), "was it started in its stdio mode?")
	assert.Contains(t, err.Error(), "listening on http://127.0.0.1:8080/mcp", "the line it wrote")
	assert.Contains(t, err.Error(), "child started in mode banner", "its stderr")
	require.NoError(t, c.Close(testCtx(t)))
	goleak.VerifyNone(t, leaks)
}

// A call whose context ends returns at once, and the server is told: its handler's context is
// cancelled (notifications/cancelled); the connection goes on.
func TestStdioClientCancelTellsServer(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	srv := newStdioServer()
	started, cancelled := make(chan struct{}), make(chan struct{})
	runtime.AddTypedTool(srv, runtime.ToolSpec{Name: "wait"}, func(ctx context.Context, in *mcpv1.TextContent) (*mcpv1.TextContent, error) {
		close(started)
		select {
		case <-ctx.Done():
			close(cancelled)
			return nil, ctx.Err()
		case <-time.After(time.Minute):
			return &mcpv1.TextContent{}, nil
		}
	})
	c, done := stdioPair(t, srv)
	ctx := testCtx(t)
	callCtx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		_, err := runtime.CallTypedTool[mcpv1.TextContent](callCtx, c, "wait", &mcpv1.TextContent{})
		errc <- err
	}()
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("the tool did not start")
	}
	cancel()
	select {
	case err := <-errc:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(5 * time.Second):
		t.Fatal("a cancelled call did not return")
	}
	select {
	case <-cancelled:
	case <-ctx.Done():
		t.Fatal("the server's handler was not cancelled")
	}
	got, err := echo(ctx, c, "after")
	require.NoError(t, err)
	assert.Equal(t, "after", got)
	require.NoError(t, c.Close(ctx))
	waitServer(t, done)
	goleak.VerifyNone(t, leaks)
}

// A response longer than the client's limit fails its call, saying so, and the connection
// goes on.
func TestStdioClientMessageOverLimit(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	c, done := stdioPair(t, newStdioServer(), runtime.WithMaxEventSize(64<<10))
	ctx := testCtx(t)
	_, err := echo(ctx, c, strings.Repeat("x", 20<<10)) // twice in the result: text and structured content
	require.NoError(t, err, "within the limit")
	_, err = echo(ctx, c, strings.Repeat("x", 100<<10))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "larger than the client's limit of 65536 bytes")
	got, err := echo(ctx, c, "still here")
	require.NoError(t, err)
	assert.Equal(t, "still here", got)
	require.NoError(t, c.Close(ctx))
	waitServer(t, done)
	goleak.VerifyNone(t, leaks)
}

// A typed stream read slowly over stdio slows only its own call: another call made from the
// loop that reads it is answered (the one reader never waits for the stream's reader).
func TestStdioClientStreamDoesNotBlockOtherCalls(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	srv := newStdioServer()
	runtime.AddStreamTool(srv, runtime.ToolSpec{Name: "count"}, func(ctx context.Context, _ *mcpv1.TextContent, st *runtime.ServerStream[mcpv1.TextContent]) error {
		for i := range 3 * runtime.StreamBuffer {
			if err := st.Send(&mcpv1.TextContent{Text: strings.Repeat("n", i%7)}); err != nil {
				return err
			}
		}
		return nil
	})
	c, done := stdioPair(t, srv)
	ctx := testCtx(t)
	stream := runtime.CallToolStream[mcpv1.TextContent](ctx, c, "count", &mcpv1.TextContent{})
	n := 0
	for msg, err := range stream.All() {
		require.NoError(t, err)
		if n == 0 {
			time.Sleep(100 * time.Millisecond) // the stream's buffer fills
		}
		if n%runtime.StreamBuffer == 0 {
			got, err := echo(ctx, c, "inside")
			require.NoError(t, err, "a call made while reading a stream")
			assert.Equal(t, "inside", got)
		}
		_ = msg
		n++
	}
	assert.Equal(t, 3*runtime.StreamBuffer, n, "every streamed message")
	require.NoError(t, c.Close(ctx))
	waitServer(t, done)
	goleak.VerifyNone(t, leaks)
}

// NewInMemoryClient: a server's whole surface in the same process, and Close ends the
// session, cancelling what still runs, and waits for the server to be done with it.
func TestInMemoryClient(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	srv := newStdioServer()
	handlerDone := make(chan error, 2)
	started := make(chan struct{}, 2)
	runtime.AddTypedTool(srv, runtime.ToolSpec{Name: "ask"}, func(ctx context.Context, in *mcpv1.TextContent) (*mcpv1.TextContent, error) {
		caller := runtime.CallerFrom(ctx)
		if err := caller.Log(ctx, runtime.LevelWarning, "ask", "asking"); err != nil {
			return nil, err
		}
		for i := 1; i <= 2; i++ {
			if err := caller.NotifyProgress(ctx, float64(i), 2, "asking"); err != nil {
				return nil, err
			}
		}
		res, err := caller.Elicit(ctx, &runtime.ElicitParams{Message: "city?", RequestedSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)})
		if err != nil {
			return nil, err
		}
		sample, err := caller.CreateMessage(ctx, &runtime.CreateMessageParams{MaxTokens: 10, Messages: []runtime.SamplingMessage{{Role: "user", Content: runtime.TextContent("hi")}}})
		if err != nil {
			return nil, err
		}
		return &mcpv1.TextContent{Text: res.Content["city"].(string) + "/" + sample.Model}, nil
	})
	runtime.AddTypedTool(srv, runtime.ToolSpec{Name: "hang"}, func(ctx context.Context, in *mcpv1.TextContent) (*mcpv1.TextContent, error) {
		started <- struct{}{}
		<-ctx.Done()
		handlerDone <- ctx.Err()
		return nil, ctx.Err()
	})
	ctx := testCtx(t)
	var logged atomic.Value
	c, err := runtime.NewInMemoryClient(ctx, srv,
		runtime.WithLogger(discardLogger()),
		runtime.WithLogHandler(func(_ context.Context, p *runtime.LogMessageParams) { logged.Store(p.Data) }),
		runtime.WithElicitationHandler(func(context.Context, *runtime.ElicitParams) (*runtime.ElicitResult, error) {
			return &runtime.ElicitResult{Action: "accept", Content: map[string]any{"city": "Lima"}}, nil
		}),
		runtime.WithSamplingHandler(func(context.Context, *runtime.CreateMessageParams) (*runtime.CreateMessageResult, error) {
			return &runtime.CreateMessageResult{Model: "m1", Role: "assistant", Content: runtime.TextContent("ok")}, nil
		}))
	require.NoError(t, err)
	var mu sync.Mutex
	var progress []float64
	out, err := runtime.CallTypedTool[mcpv1.TextContent](ctx, c, "ask", &mcpv1.TextContent{}, runtime.WithProgress(func(p *runtime.ProgressParams) {
		mu.Lock()
		progress = append(progress, p.Progress)
		mu.Unlock()
	}))
	require.NoError(t, err)
	assert.Equal(t, "Lima/m1", out.GetText())
	mu.Lock()
	assert.Equal(t, []float64{1, 2}, progress)
	mu.Unlock()
	info, _, _ := c.ServerInfo()
	assert.Equal(t, "stdio-test", info.Name)
	assert.Eventually(t, func() bool { return logged.Load() == "asking" }, testTimeout, 5*time.Millisecond, "the log message")

	// A call whose context is cancelled returns, and the server's handler is cancelled.
	callCtx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-started:
		case <-ctx.Done():
		}
		cancel()
	}()
	_, err = echoTool(callCtx, c, "hang")
	require.ErrorIs(t, err, context.Canceled)
	select {
	case err := <-handlerDone:
		assert.ErrorIs(t, err, context.Canceled)
	case <-ctx.Done():
		t.Fatal("the server's handler was not cancelled")
	}

	// Close while a call runs: the call fails, and the server's handler is cancelled.
	var callErr atomic.Value
	callDone := make(chan struct{})
	go func() {
		defer close(callDone)
		_, err := echoTool(ctx, c, "hang")
		callErr.Store(err)
	}()
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("the hanging tool did not start")
	}
	require.NoError(t, c.Close(ctx))
	select {
	case err := <-handlerDone:
		assert.ErrorIs(t, err, context.Canceled)
	case <-ctx.Done():
		t.Fatal("the server's handler was not cancelled")
	}
	select {
	case <-callDone:
		err, _ := callErr.Load().(error)
		assert.Error(t, err, "a call cut by Close")
	case <-ctx.Done():
		t.Fatal("the call did not end at Close")
	}
	_, err = echo(ctx, c, "closed")
	assert.ErrorIs(t, err, runtime.ErrClosed)
	shutdownServer(srv)
	goleak.VerifyNone(t, leaks)
}

// The server's context ends the in-memory session: calls then fail, saying why.
func TestInMemoryClientServerContextEnds(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	srv := newStdioServer()
	ctx := testCtx(t)
	sctx, stop := context.WithCancel(ctx)
	c, err := runtime.NewInMemoryClient(sctx, srv, runtime.WithLogger(discardLogger()))
	require.NoError(t, err)
	got, err := echo(ctx, c, "one")
	require.NoError(t, err)
	assert.Equal(t, "one", got)
	stop()
	require.Eventually(t, func() bool {
		_, err := echo(ctx, c, "two")
		return err != nil && strings.Contains(err.Error(), "the in-memory server closed its output")
	}, testTimeout, 10*time.Millisecond)
	require.NoError(t, c.Close(ctx))
	shutdownServer(srv)
	goleak.VerifyNone(t, leaks)

	_, err = runtime.NewInMemoryClient(sctx, srv)
	assert.True(t, errors.Is(err, context.Canceled), "a cancelled context: %v", err)
}

func echoTool(ctx context.Context, c *runtime.Client, name string) (string, error) {
	out, err := runtime.CallTypedTool[mcpv1.TextContent](ctx, c, name, &mcpv1.TextContent{})
	return out.GetText(), err
}

// A server that does not read its input blocks the client's writes: a call still returns at
// its deadline, and Close still ends the connection.
func TestStdioClientServerNotReading(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	inR, inW := io.Pipe() // nobody reads what the client writes
	outR, outW := io.Pipe()
	c := runtime.NewStdioClient(outR, inW, runtime.WithLogger(discardLogger()), runtime.WithCloseTimeout(time.Second))
	for range 2 {
		ctx, cancel := context.WithTimeout(testCtx(t), 200*time.Millisecond)
		start := time.Now()
		err := c.Connect(ctx)
		cancel()
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Less(t, time.Since(start), 5*time.Second)
	}
	outW.Close()
	require.NoError(t, c.Close(testCtx(t)))
	inR.Close()
	goleak.VerifyNone(t, leaks)
}

// Params a caller wrote over several lines go out as one line: a message is one line.
func TestStdioClientMultilineParams(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	c, done := stdioPair(t, newStdioServer())
	ctx := testCtx(t)
	raw, err := c.Call(ctx, "tools/call", json.RawMessage("{\n  \"name\": \"echo\",\n  \"arguments\": {\"text\": \"two\\nlines\"}\r\n}\n"))
	require.NoError(t, err)
	var res runtime.CallToolResult
	require.NoError(t, json.Unmarshal(raw, &res))
	assert.JSONEq(t, `{"text":"two\nlines"}`, res.Text())
	require.NoError(t, c.Close(ctx))
	waitServer(t, done)
	goleak.VerifyNone(t, leaks)
}

// BenchmarkStdioCommandEcho is one small typed call from a command client to a real child
// process (the test binary serving stdio): the client's cost plus a process boundary each way.
func BenchmarkStdioCommandEcho(b *testing.B) {
	exe, err := os.Executable()
	require.NoError(b, err)
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), "PROTOMCP_TEST_CHILD=serve")
	c, err := runtime.NewCommandClient(cmd, runtime.WithLogger(discardLogger()))
	require.NoError(b, err)
	ctx := context.Background()
	req := &mcpv1.TextContent{Text: "hello"}
	_, err = runtime.CallTypedTool[mcpv1.TextContent](ctx, c, "echo", req)
	require.NoError(b, err)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := runtime.CallTypedTool[mcpv1.TextContent](ctx, c, "echo", req); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	require.NoError(b, c.Close(ctx))
}

// A typed stream read too slowly over stdio fails its call once what it has not taken passes
// the notification budget: it loses no message silently.
func TestStdioClientStreamOverBudget(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	srv := newStdioServer()
	cancelled := make(chan struct{})
	runtime.AddStreamTool(srv, runtime.ToolSpec{Name: "flood"}, func(ctx context.Context, _ *mcpv1.TextContent, st *runtime.ServerStream[mcpv1.TextContent]) error {
		defer close(cancelled)
		for range 200 {
			if err := st.Send(&mcpv1.TextContent{Text: strings.Repeat("f", 1<<10)}); err != nil {
				return err
			}
		}
		<-ctx.Done() // the client, failing the call, cancels it
		return ctx.Err()
	})
	c, done := stdioPair(t, srv, runtime.WithNotificationBudget(16<<10))
	ctx := testCtx(t)
	stream := runtime.CallToolStream[mcpv1.TextContent](ctx, c, "flood", &mcpv1.TextContent{})
	select { // read nothing until the client has failed the call and told the server
	case <-cancelled:
	case <-ctx.Done():
		t.Fatal("the stream's call was not cancelled while nothing read it")
	}
	n := 0
	var err error
	for _, err = range stream.All() {
		if err != nil {
			break
		}
		n++
	}
	require.Error(t, err)
	assert.Contains(t, err.Error(), "see WithNotificationBudget")
	assert.Less(t, n, 200, "messages read before the error")
	got, err := echo(ctx, c, "after")
	require.NoError(t, err, "the connection goes on")
	assert.Equal(t, "after", got)
	require.NoError(t, c.Close(ctx))
	waitServer(t, done)
	goleak.VerifyNone(t, leaks)
}

package runtime_test

// Tests of the stdio server's message core: what a client that does not read, messages over
// the size limit and messages before initialize do to it, driven by hand over pipes.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	mcpv1 "github.com/protomcp/protomcp/gen/mcp/v1"
	"github.com/protomcp/protomcp/runtime"
)

// handStdio serves srv over pipes whose output the test reads only when it asks (readLine):
// until then, the server's writes block, as they do on a client that stopped reading.
type handStdio struct {
	in   *io.PipeWriter
	outR *io.PipeReader
	out  *bufio.Reader
	done chan error
}

func newHandStdio(t *testing.T, srv *runtime.Server) *handStdio {
	t.Helper()
	c2sR, c2sW := io.Pipe()
	s2cR, s2cW := io.Pipe()
	h := &handStdio{in: c2sW, outR: s2cR, out: bufio.NewReaderSize(s2cR, 1<<20), done: make(chan error, 1)}
	go func() {
		err := srv.ServeStdio(context.Background(), c2sR, s2cW)
		s2cW.Close()
		c2sR.Close()
		shutdownServer(srv)
		h.done <- err
	}()
	return h
}

// send writes one line to the server; the write returns once the server has read it.
func (h *handStdio) send(t *testing.T, line string) {
	t.Helper()
	_, err := io.WriteString(h.in, line+"\n")
	require.NoError(t, err)
}

// readMessage reads the server's next line, within the test's bound.
func (h *handStdio) readMessage(t *testing.T) map[string]any {
	t.Helper()
	type result struct {
		line []byte
		err  error
	}
	got := make(chan result, 1)
	go func() {
		line, err := h.out.ReadBytes('\n')
		got <- result{line, err}
	}()
	select {
	case r := <-got:
		require.NoError(t, r.err)
		var m map[string]any
		require.NoError(t, json.Unmarshal(r.line, &m), "a line that is not JSON: %q", r.line)
		return m
	case <-testCtx(t).Done():
		require.FailNow(t, "no message from the server")
		return nil
	}
}

// initialize starts the session and reads its answer.
func (h *handStdio) initialize(t *testing.T) {
	t.Helper()
	h.send(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"hand","version":"1"}}}`)
	m := h.readMessage(t)
	require.NotNil(t, m["result"], "initialize: %v", m)
	h.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// finish ends the input, drains the output and checks that ServeStdio returned nil.
func (h *handStdio) finish(t *testing.T) {
	t.Helper()
	require.NoError(t, h.in.Close())
	drained := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, h.out)
		close(drained)
	}()
	select {
	case err := <-h.done:
		assert.NoError(t, err, "ServeStdio")
	case <-testCtx(t).Done():
		require.FailNow(t, "ServeStdio did not return at EOF")
	}
	<-drained
}

// A client that stops reading blocks the goroutine writing to it, not the requests: a handler
// whose answer cannot be written yet has its answer queued and is done, so it holds none of
// the session's in-flight slots, and requests go on being served however long the client
// does not read. Everything is written once it reads again.
func TestStdioStalledOutputHoldsNoRequestSlots(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	srv := newStdioServer(runtime.WithMaxInflight(2))
	var ran atomic.Int64
	big := strings.Repeat("x", 4<<10)
	runtime.AddTypedTool(srv, runtime.ToolSpec{Name: "mark"}, func(ctx context.Context, in *mcpv1.TextContent) (*mcpv1.TextContent, error) {
		ran.Add(1)
		return &mcpv1.TextContent{Text: big}, nil
	})
	h := newHandStdio(t, srv)
	h.initialize(t)

	const calls = 30
	for i := 1; i <= calls; i++ {
		h.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"mark","arguments":{}}}`, i))
		require.True(t, waitFor(testTimeout, func() bool { return ran.Load() == int64(i) }),
			"call %d did not run while the client was not reading (a handler waiting for the client holds its slot?)", i)
	}
	got := map[float64]bool{}
	for len(got) < calls {
		m := h.readMessage(t)
		require.Nil(t, m["error"], "a call was refused: %v", m)
		got[m["id"].(float64)] = true
	}
	h.finish(t)
	goleak.VerifyNone(t, leaks)
}

// The messages queued for a client that does not read are bounded by the session's budget: a
// handler that sends more gets an error instead of growing the queue, and its response still
// goes out.
func TestStdioQueueBoundedByBudget(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	const budget = 256 << 10
	srv := newStdioServer(runtime.WithSessionBudget(budget))
	flooded := make(chan struct{})
	runtime.AddTypedTool(srv, runtime.ToolSpec{Name: "flood"}, func(ctx context.Context, in *mcpv1.TextContent) (*mcpv1.TextContent, error) {
		defer close(flooded)
		for i := range 10000 {
			if err := runtime.CallerFrom(ctx).Log(ctx, runtime.LevelWarning, "flood", strings.Repeat("x", 1<<10)); err != nil {
				return &mcpv1.TextContent{Text: fmt.Sprintf("%d sent, then: %v", i, err)}, nil
			}
		}
		return &mcpv1.TextContent{Text: "never refused"}, nil
	})
	h := newHandStdio(t, srv)
	h.initialize(t)
	h.send(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"flood","arguments":{}}}`)
	// The client reads nothing until the handler is done.
	select {
	case <-flooded:
	case <-testCtx(t).Done():
		require.FailNow(t, "the flood was never refused: its handler blocks on a client that does not read")
	}

	logs, answer := 0, ""
	for answer == "" {
		m := h.readMessage(t)
		if m["method"] == "notifications/message" {
			logs++
			continue
		}
		require.Equal(t, float64(1), m["id"], "an unexpected message: %v", m)
		sc, _ := m["result"].(map[string]any)["structuredContent"].(map[string]any)
		answer, _ = sc["text"].(string)
	}
	assert.Contains(t, answer, "memory budget", "the flood's answer")
	// What was queued fits the budget: one message is being written (not charged), the rest
	// waited within 256 KiB.
	assert.LessOrEqual(t, logs, budget/(1<<10)+1, "log messages written")
	assert.Greater(t, logs, 16, "log messages written before the budget ran out")
	h.finish(t)
	goleak.VerifyNone(t, leaks)
}

// A message over the size limit is refused with its id when the id comes before the cut, and
// without one otherwise; the connection goes on.
func TestStdioTooLongMessageID(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	srv := newStdioServer(runtime.WithMaxBodyBytes(1 << 10))
	h := newHandStdio(t, srv)
	h.initialize(t)
	long := strings.Repeat("x", 4<<10)

	h.send(t, `{"jsonrpc":"2.0","id":"first","method":"tools/call","params":{"name":"echo","arguments":{"text":"`+long+`"}}}`)
	m := h.readMessage(t)
	assert.Equal(t, "first", m["id"])
	require.NotNil(t, m["error"])
	assert.Contains(t, m["error"].(map[string]any)["message"], "exceeds the limit")

	h.send(t, `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo","arguments":{"text":"`+long+`"}},"id":7}`)
	m = h.readMessage(t)
	assert.Nil(t, m["id"], "an id the message's first bytes do not name")
	assert.NotNil(t, m["error"])

	// Longer than the reader's buffer too.
	h.send(t, `{"id":9,"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo","arguments":{"text":"`+strings.Repeat("y", 200<<10)+`"}}}`)
	m = h.readMessage(t)
	assert.Equal(t, float64(9), m["id"])

	h.send(t, `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"echo","arguments":{"text":"ok"}}}`)
	m = h.readMessage(t)
	assert.Equal(t, float64(10), m["id"])
	assert.NotNil(t, m["result"], "a call after the refusals: %v", m)
	h.finish(t)
	goleak.VerifyNone(t, leaks)
}

// Before initialize, a ping is answered and other requests get an error with their id (spec
// 2025-11-25, Lifecycle, Initialization); a second initialize is refused.
func TestStdioBeforeAndAfterInitialize(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	h := newHandStdio(t, newStdioServer())
	h.send(t, `{"jsonrpc":"2.0","id":"p","method":"ping"}`)
	m := h.readMessage(t)
	assert.Equal(t, "p", m["id"])
	assert.Equal(t, map[string]any{}, m["result"])

	h.send(t, `{"jsonrpc":"2.0","id":"l","method":"tools/list"}`)
	m = h.readMessage(t)
	assert.Equal(t, "l", m["id"])
	require.NotNil(t, m["error"])
	assert.Contains(t, m["error"].(map[string]any)["message"], "initialize")

	h.initialize(t)
	h.send(t, `{"jsonrpc":"2.0","id":"again","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"hand","version":"1"}}}`)
	m = h.readMessage(t)
	assert.Equal(t, "again", m["id"])
	assert.NotNil(t, m["error"])
	h.finish(t)
	goleak.VerifyNone(t, leaks)
}

// A handler that runs on without sending anything has the reading handed over: a request sent
// after it is answered while it runs, and a notifications/cancelled reaches it, after which it
// gets no response (spec 2025-11-25, Utilities, Cancellation).
func TestStdioSlowHandlerAndCancellation(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	srv := newStdioServer()
	started, cancelled := make(chan struct{}), make(chan struct{})
	runtime.AddTypedTool(srv, runtime.ToolSpec{Name: "block"}, func(ctx context.Context, in *mcpv1.TextContent) (*mcpv1.TextContent, error) {
		close(started)
		<-ctx.Done()
		close(cancelled)
		return nil, ctx.Err()
	})
	h := newHandStdio(t, srv)
	h.initialize(t)
	h.send(t, `{"jsonrpc":"2.0","id":"slow","method":"tools/call","params":{"name":"block","arguments":{}}}`)
	select {
	case <-started:
	case <-testCtx(t).Done():
		require.FailNow(t, "the block tool did not start")
	}
	h.send(t, `{"jsonrpc":"2.0","id":"quick","method":"tools/call","params":{"name":"echo","arguments":{"text":"meanwhile"}}}`)
	m := h.readMessage(t)
	require.Equal(t, "quick", m["id"], "the answer while the slow handler runs: %v", m)

	h.send(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"slow","reason":"test"}}`)
	select {
	case <-cancelled:
	case <-testCtx(t).Done():
		require.FailNow(t, "notifications/cancelled did not reach the handler")
	}
	// The next line is the ping's answer: the cancelled request has none.
	h.send(t, `{"jsonrpc":"2.0","id":"after","method":"ping"}`)
	m = h.readMessage(t)
	assert.Equal(t, "after", m["id"], "the line after the cancellation: %v", m)
	h.finish(t)
	goleak.VerifyNone(t, leaks)
}

// After Server.Shutdown, a stdio connection's requests and a new initialize get errors with
// their ids, and the connection still ends cleanly at EOF.
func TestStdioAfterShutdown(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	srv := newStdioServer()
	h := newHandStdio(t, srv)
	h.initialize(t)
	shutdownServer(srv)
	h.send(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"late"}}}`)
	m := h.readMessage(t)
	assert.Equal(t, float64(1), m["id"])
	assert.NotNil(t, m["error"], "a call after Shutdown: %v", m)

	h2 := newHandStdio(t, srv)
	h2.send(t, `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"hand","version":"1"}}}`)
	m = h2.readMessage(t)
	assert.Equal(t, "init", m["id"])
	require.NotNil(t, m["error"], "initialize after Shutdown: %v", m)
	assert.Contains(t, m["error"].(map[string]any)["message"], "shutting down")
	h.finish(t)
	h2.finish(t)
	goleak.VerifyNone(t, leaks)
}

// A tool that needs OAuth scopes is refused over stdio, which carries no access token; the
// others are served.
func TestStdioScopedToolRefused(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	srv := newStdioServer()
	runtime.AddTypedTool(srv, runtime.ToolSpec{Name: "secret", Scopes: []string{"secret:read"}}, func(ctx context.Context, in *mcpv1.TextContent) (*mcpv1.TextContent, error) {
		return &mcpv1.TextContent{Text: "leaked"}, nil
	})
	h := newHandStdio(t, srv)
	h.initialize(t)
	h.send(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"secret","arguments":{}}}`)
	m := h.readMessage(t)
	assert.Equal(t, float64(1), m["id"])
	require.NotNil(t, m["error"], "a scoped tool over stdio: %v", m)
	assert.Contains(t, m["error"].(map[string]any)["message"], "secret:read")
	h.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"ok"}}}`)
	m = h.readMessage(t)
	assert.NotNil(t, m["result"], "an unscoped tool: %v", m)
	h.finish(t)
	goleak.VerifyNone(t, leaks)
}

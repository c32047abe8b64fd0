package runtime_test

// Tests of the stdio transport: a runtime.Server served with ServeStdio and a runtime.Client
// from NewStdioClient over in-process pipes, and NewCommandClient launching the test binary
// itself as a real child process (see stdio_child_test.go for its modes).

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	mcpv1 "github.com/protomcp/protomcp/gen/mcp/v1"
	"github.com/protomcp/protomcp/runtime"
)

// stdioPair serves srv over pipes and returns a client of it; serverDone receives what
// ServeStdio returned.
func stdioPair(t *testing.T, srv *runtime.Server, opts ...runtime.ClientOption) (c *runtime.Client, serverDone <-chan error) {
	t.Helper()
	c2sR, c2sW := io.Pipe()
	s2cR, s2cW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := srv.ServeStdio(context.Background(), c2sR, s2cW)
		s2cW.Close()
		c2sR.Close()
		shutdownServer(srv)
		done <- err
	}()
	opts = append([]runtime.ClientOption{runtime.WithLogger(discardLogger())}, opts...)
	c = runtime.NewStdioClient(s2cR, c2sW, opts...)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		_ = c.Close(ctx)
	})
	return c, done
}

// shutdownServer stops a server's background work once its stdio connection has ended.
func shutdownServer(srv *runtime.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	_ = srv.Shutdown(ctx)
}

func newStdioServer(opts ...runtime.ServerOption) *runtime.Server {
	opts = append([]runtime.ServerOption{runtime.WithLogger(discardLogger())}, opts...)
	s := runtime.NewServer(runtime.Implementation{Name: "stdio-test", Version: "1"}, opts...)
	runtime.AddTypedTool(s, runtime.ToolSpec{Name: "echo"}, func(ctx context.Context, in *mcpv1.TextContent) (*mcpv1.TextContent, error) {
		return &mcpv1.TextContent{Text: in.GetText()}, nil
	})
	return s
}

func waitServer(t *testing.T, done <-chan error) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("ServeStdio: %v", err)
		}
	case <-time.After(testTimeout):
		t.Fatal("ServeStdio did not return after the client closed its input")
	}
}

func TestStdioFeatures(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	srv := newStdioServer()
	runtime.AddTypedTool(srv, runtime.ToolSpec{Name: "steps"}, func(ctx context.Context, in *mcpv1.TextContent) (*mcpv1.TextContent, error) {
		caller := runtime.CallerFrom(ctx)
		for i := 1; i <= 3; i++ {
			if err := caller.NotifyProgress(ctx, float64(i), 3, "step"); err != nil {
				return nil, err
			}
		}
		if err := caller.Log(ctx, runtime.LevelWarning, "steps", "halfway"); err != nil {
			return nil, err
		}
		res, err := caller.Elicit(ctx, &runtime.ElicitParams{Message: "name?", RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`)})
		if err != nil {
			return nil, err
		}
		return &mcpv1.TextContent{Text: res.Action + ":" + res.Content["name"].(string)}, nil
	})
	var (
		mu      sync.Mutex
		logs    []string
		changed = make(chan struct{}, 1)
	)
	c, done := stdioPair(t, srv,
		runtime.WithElicitationHandler(func(ctx context.Context, p *runtime.ElicitParams) (*runtime.ElicitResult, error) {
			return &runtime.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
		}),
		runtime.WithLogHandler(func(_ context.Context, p *runtime.LogMessageParams) {
			mu.Lock()
			logs = append(logs, p.Data.(string))
			mu.Unlock()
		}),
		runtime.WithNotificationHandler(func(_ context.Context, method string, _ json.RawMessage) {
			if method == "notifications/tools/list_changed" {
				select {
				case changed <- struct{}{}:
				default:
				}
			}
		}))
	ctx := testCtx(t)
	if got, err := echo(ctx, c, "over stdio"); err != nil || got != "over stdio" {
		t.Fatalf("echo = %q, %v", got, err)
	}
	var progress []float64
	out, err := runtime.CallTypedTool[mcpv1.TextContent](ctx, c, "steps", &mcpv1.TextContent{}, runtime.WithProgress(func(p *runtime.ProgressParams) {
		progress = append(progress, p.Progress)
	}))
	if err != nil || out.GetText() != "accept:Ada" {
		t.Fatalf("steps = %v, %v", out, err)
	}
	if len(progress) != 3 || progress[2] != 3 {
		t.Errorf("progress = %v; want 1, 2, 3", progress)
	}
	// Over stdio the log message travels apart from the call's own messages: its callback may
	// run just after the call returned (docs/stdio.md).
	gotLog := waitFor(5*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(logs) > 0
	})
	mu.Lock()
	if !gotLog || len(logs) != 1 || logs[0] != "halfway" {
		t.Errorf("logs = %v", logs)
	}
	mu.Unlock()
	// A tool added now is announced on the standalone stream.
	srv.AddTool(runtime.ToolSpec{Name: "late"}, func(context.Context, *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		return &runtime.CallToolResult{}, nil
	})
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatal("no tools/list_changed over stdio")
	}
	n := 0
	for _, err := range c.Tools(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 3 {
		t.Errorf("listed %d tools; want 3", n)
	}
	if err := c.Close(ctx); err != nil {
		t.Errorf("Close: %v", err)
	}
	waitServer(t, done)
	goleak.VerifyNone(t, leaks)
}

func TestStdioLargeMessages(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	big := strings.Repeat("x", 10<<20)
	// Within the limit, a 10 MB message goes both ways.
	c, done := stdioPair(t, newStdioServer(runtime.WithMaxBodyBytes(16<<20)))
	// 10 MB each way through protojson is slow under the race detector on a busy machine:
	// this test's bound is its own, longer than the others'.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if got, err := echo(ctx, c, big); err != nil || got != big {
		t.Fatalf("10 MB echo: %d bytes, %v", len(got), err)
	}
	_ = c.Close(ctx)
	waitServer(t, done)

	// Past the server's limit, the message is refused with an error and the connection goes on.
	c, done = stdioPair(t, newStdioServer())
	if _, err := echo(ctx, c, "warm up"); err != nil {
		t.Fatal(err)
	}
	_, err := echo(ctx, c, big)
	if runtime.CodeOf(err) != runtime.CodeInvalidRequest || !strings.Contains(err.Error(), "exceeds the limit") {
		t.Fatalf("a message over the server's limit: %v; want an error that says so", err)
	}
	if got, err := echo(ctx, c, "still here"); err != nil || got != "still here" {
		t.Fatalf("after an oversized message: %q, %v", got, err)
	}
	_ = c.Close(ctx)
	waitServer(t, done)
	goleak.VerifyNone(t, leaks)
}

// rawStdio serves srv over pipes driven by hand: the test writes lines and reads the server's.
type rawStdio struct {
	in    *io.PipeWriter
	out   *bufio.Reader
	done  chan error
	outR  *io.PipeReader
	lines chan []byte
}

func newRawStdio(srv *runtime.Server) *rawStdio {
	c2sR, c2sW := io.Pipe()
	s2cR, s2cW := io.Pipe()
	r := &rawStdio{in: c2sW, out: bufio.NewReader(s2cR), done: make(chan error, 1), outR: s2cR, lines: make(chan []byte, 100)}
	go func() {
		err := srv.ServeStdio(context.Background(), c2sR, s2cW)
		s2cW.Close()
		c2sR.Close()
		shutdownServer(srv)
		r.done <- err
	}()
	go func() {
		defer close(r.lines)
		for {
			line, err := r.out.ReadBytes('\n')
			if len(line) > 0 {
				r.lines <- line
			}
			if err != nil {
				return
			}
		}
	}()
	return r
}

func (r *rawStdio) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(r.in, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

func (r *rawStdio) next(t *testing.T) map[string]any {
	t.Helper()
	select {
	case line, ok := <-r.lines:
		if !ok {
			t.Fatal("the server's output ended")
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("the server wrote a line that is not JSON: %q", line)
		}
		return m
	case <-time.After(testTimeout):
		t.Fatal("no message from the server")
		return nil
	}
}

func (r *rawStdio) initialize(t *testing.T) {
	t.Helper()
	r.send(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if m := r.next(t); m["result"] == nil {
		t.Fatalf("initialize: %v", m)
	}
	r.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

func TestStdioBadInputAndEOFMidRequest(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	srv := newStdioServer()
	started, cancelled := make(chan struct{}), make(chan struct{})
	runtime.AddTypedTool(srv, runtime.ToolSpec{Name: "wait"}, func(ctx context.Context, in *mcpv1.TextContent) (*mcpv1.TextContent, error) {
		close(started)
		<-ctx.Done()
		close(cancelled)
		return nil, ctx.Err()
	})
	r := newRawStdio(srv)
	r.initialize(t)

	// Invalid JSON gets a parse error, and the server goes on.
	r.send(t, `{"jsonrpc":"2.0","id":1,"method":`)
	if m := r.next(t); m["error"] == nil || m["error"].(map[string]any)["code"].(float64) != float64(runtime.CodeParseError) {
		t.Errorf("invalid JSON: %v", m)
	}
	r.send(t, `{"jsonrpc":"2.0","id":2,"method":"no/such/method"}`)
	if m := r.next(t); m["error"] == nil || m["id"].(float64) != 2 {
		t.Errorf("unknown method: %v", m)
	}
	r.send(t, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"ok"}}}`)
	if m := r.next(t); m["result"] == nil {
		t.Errorf("echo after bad input: %v", m)
	}

	// stdin ends while a request runs: its handler is cancelled and ServeStdio returns.
	r.send(t, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"wait","arguments":{}}}`)
	select {
	case <-started:
	case <-time.After(testTimeout):
		t.Fatal("the wait tool did not start")
	}
	r.in.Close()
	select {
	case <-cancelled:
	case <-time.After(testTimeout):
		t.Fatal("the running handler was not cancelled at EOF")
	}
	select {
	case err := <-r.done:
		if err != nil {
			t.Errorf("ServeStdio at EOF: %v", err)
		}
	case <-time.After(testTimeout):
		t.Fatal("ServeStdio did not return at EOF")
	}
	for range r.lines {
	}
	goleak.VerifyNone(t, leaks)
}

func TestStdioContextCancel(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	srv := newStdioServer()
	c2sR, c2sW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- srv.ServeStdio(ctx, c2sR, io.Discard)
		shutdownServer(srv)
	}()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("ServeStdio after cancel = %v; want context.Canceled", err)
		}
	case <-time.After(testTimeout):
		t.Fatal("ServeStdio did not return when its context was cancelled")
	}
	c2sW.Close() // ends the read that was blocked
	c2sR.Close()
	goleak.VerifyNone(t, leaks)
}

// childCommand returns a command that runs this test binary as a stdio server child in mode.
func childCommand(t *testing.T, mode string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), "PROTOMCP_TEST_CHILD="+mode)
	return cmd
}

// logBuffer is a concurrency-safe log destination.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestCommandClient(t *testing.T) {
	for _, mode := range []string{"serve", "junk"} {
		t.Run(mode, func(t *testing.T) {
			leaks := goleak.IgnoreCurrent()
			var log logBuffer
			c, err := runtime.NewCommandClient(childCommand(t, mode), runtime.WithLogger(slog.New(slog.NewTextHandler(&log, nil))))
			if err != nil {
				t.Fatal(err)
			}
			ctx := testCtx(t)
			for i := range 20 {
				text := strings.Repeat("ab", i*1000)
				if got, err := echo(ctx, c, text); err != nil || got != text {
					t.Fatalf("echo %d: %d bytes, %v", i, len(got), err)
				}
			}
			// A call cancelled by its context returns, and the connection goes on.
			callCtx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			_, err = echo(callCtx, c, "slow")
			cancel()
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("slow call: %v; want its deadline", err)
			}
			if got, err := echo(ctx, c, "after"); err != nil || got != "after" {
				t.Errorf("after a cancelled call: %q, %v", got, err)
			}
			if err := c.Close(ctx); err != nil {
				t.Errorf("Close: %v", err)
			}
			out := log.String()
			if !strings.Contains(out, "child started in mode "+mode) {
				t.Errorf("the child's stderr was not logged:\n%s", out)
			}
			if mode == "junk" && !strings.Contains(out, "this is not JSON") {
				t.Errorf("junk on the child's stdout was not reported:\n%s", out)
			}
			goleak.VerifyNone(t, leaks)
		})
	}
}

func TestCommandClientChildExitsEarly(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	c, err := runtime.NewCommandClient(childCommand(t, "exit-early"), runtime.WithLogger(discardLogger()))
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	if err := c.Connect(ctx); err == nil {
		t.Fatal("Connect to a child that exits succeeded")
	}
	if _, err := echo(ctx, c, "x"); err == nil {
		t.Fatal("a call to an exited child succeeded")
	}
	_ = c.Close(ctx)
	goleak.VerifyNone(t, leaks)
}

func TestCommandClientKillsChildThatIgnoresSIGTERM(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	c, err := runtime.NewCommandClient(childCommand(t, "ignore-term"), runtime.WithLogger(discardLogger()),
		runtime.WithStdioShutdown(300*time.Millisecond, 300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	if got, err := echo(ctx, c, "hi"); err != nil || got != "hi" {
		t.Fatalf("echo: %q, %v", got, err)
	}
	err = c.Close(ctx)
	if err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("Close = %v; want the report that the child was killed", err)
	}
	goleak.VerifyNone(t, leaks)
}

// A client that stops reading the server's output blocks neither the server's reading of its
// input nor its handlers: a handler that floods notifications gets an error once the bounded
// queue is full, other requests are still read and run, and everything queued is written
// once the client reads again.
func TestStdioStalledReaderDoesNotBlockServer(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	srv := newStdioServer(runtime.WithMaxQueuedEvents(50))
	var marked atomic.Bool
	runtime.AddTypedTool(srv, runtime.ToolSpec{Name: "flood"}, func(ctx context.Context, in *mcpv1.TextContent) (*mcpv1.TextContent, error) {
		for i := range 100000 {
			if err := runtime.CallerFrom(ctx).Log(ctx, runtime.LevelWarning, "flood", strings.Repeat("x", 1000)); err != nil {
				return &mcpv1.TextContent{Text: fmt.Sprintf("queue full after %d", i)}, nil
			}
		}
		return &mcpv1.TextContent{Text: "never full"}, nil
	})
	runtime.AddTypedTool(srv, runtime.ToolSpec{Name: "mark"}, func(ctx context.Context, in *mcpv1.TextContent) (*mcpv1.TextContent, error) {
		marked.Store(true)
		return &mcpv1.TextContent{Text: "marked"}, nil
	})
	r := newRawStdio(srv)
	r.initialize(t)
	r.send(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"flood","arguments":{}}}`)
	// The test reads nothing now: r.lines fills up and the server's writes block.
	r.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"mark","arguments":{}}}`)
	if !waitFor(testTimeout, marked.Load) {
		t.Fatal("a request sent while the client was not reading was never run")
	}
	// Now read: both answers arrive, the flood's saying its queue filled.
	got := map[float64]string{}
	for len(got) < 2 {
		m := r.next(t)
		if id, ok := m["id"].(float64); ok {
			res, _ := m["result"].(map[string]any)
			sc, _ := res["structuredContent"].(map[string]any)
			got[id], _ = sc["text"].(string)
		}
	}
	if !strings.HasPrefix(got[1], "queue full after") || got[2] != "marked" {
		t.Errorf("answers: %v", got)
	}
	r.in.Close()
	if err := <-r.done; err != nil {
		t.Errorf("ServeStdio: %v", err)
	}
	for range r.lines {
	}
	goleak.VerifyNone(t, leaks)
}

// A client whose notification handler stalls still gets its calls' responses: the transport
// routes responses apart from notifications and never waits for a handler.
func TestStdioStalledHandlerDoesNotBlockClient(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	srv := newStdioServer()
	runtime.AddTypedTool(srv, runtime.ToolSpec{Name: "chatty"}, func(ctx context.Context, in *mcpv1.TextContent) (*mcpv1.TextContent, error) {
		for range 200 {
			if err := runtime.CallerFrom(ctx).Log(ctx, runtime.LevelWarning, "chatty", "hello"); err != nil {
				return nil, err
			}
		}
		return &mcpv1.TextContent{Text: "done"}, nil
	})
	release := make(chan struct{})
	var logs atomic.Int64
	c, done := stdioPair(t, srv, runtime.WithLogHandler(func(context.Context, *runtime.LogMessageParams) {
		logs.Add(1)
		<-release
	}))
	ctx := testCtx(t)
	out, err := runtime.CallTypedTool[mcpv1.TextContent](ctx, c, "chatty", &mcpv1.TextContent{})
	if err != nil || out.GetText() != "done" {
		t.Fatalf("chatty with a stalled log handler: %v, %v", out, err)
	}
	if got, err := echo(ctx, c, "still"); err != nil || got != "still" {
		t.Fatalf("echo with a stalled log handler: %q, %v", got, err)
	}
	// The log messages travel apart from the responses: the handler gets (and stalls on) the
	// first one, however late.
	if !waitFor(testTimeout, func() bool { return logs.Load() != 0 }) {
		t.Error("no log notification reached the handler")
	}
	close(release)
	if err := c.Close(ctx); err != nil {
		t.Errorf("Close: %v", err)
	}
	waitServer(t, done)
	goleak.VerifyNone(t, leaks)
}

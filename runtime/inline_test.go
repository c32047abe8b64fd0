package runtime_test

// Tests of handlers that run on their HTTP request's goroutine (inline.go) where the server
// cannot end a response before the handler returns by taking its connection: HTTP/2 and the
// stdio transport's in-memory exchanges.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

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

// TestCloseSSEStreamThenElicitOverHTTP11: the same over HTTP/1.1, where the handler runs on its
// request's goroutine and the close takes the connection from net/http.
func TestCloseSSEStreamThenElicitOverHTTP11(t *testing.T) {
	srv := runtime.NewServer(runtime.Implementation{Name: "h1", Version: "1"}, runtime.WithLogger(discardLogger()),
		runtime.WithRetryInterval(10*time.Millisecond), runtime.WithCallerRequestTimeout(5*time.Second))
	pollThenElicit(srv)
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		shutdownServer(srv)
		hs.Close()
	})
	c := runtime.NewClient(hs.URL, runtime.WithEra(runtime.EraLegacy), runtime.WithElicitationHandler(acceptAll), runtime.WithLogger(discardLogger()))
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	for range 3 {
		res, err := c.CallTool(testCtx(t), "poll-elicit", nil)
		require.NoError(t, err)
		assert.Equal(t, "accept", res.Text())
	}
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

// TestModernStalledStreamCancelsHandler: in 2026-07-28, closing a request's response stream
// cancels the request (Streamable HTTP, Cancellation). When the server gives up on a client
// that stopped reading (the write timeout) and ends the response while the handler runs on
// its request's goroutine, the handler's context must end too, as it did when the response
// ended by ServeHTTP returning; not at the handler timeout.
func TestModernStalledStreamCancelsHandler(t *testing.T) {
	cancelled := make(chan struct{})
	srv := runtime.NewServer(runtime.Implementation{Name: "stall", Version: "1"}, runtime.WithLogger(discardLogger()),
		runtime.WithWriteTimeout(200*time.Millisecond), runtime.WithHandlerTimeout(time.Minute))
	msg := strings.Repeat("x", 16<<10)
	srv.AddTool(runtime.ToolSpec{Name: "flood"}, func(ctx context.Context, _ *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		c := runtime.CallerFrom(ctx)
		for i := 1; ctx.Err() == nil; i++ {
			_ = c.NotifyProgress(ctx, float64(i), 0, msg) // errors (a full stream) are expected
			time.Sleep(time.Millisecond)
		}
		close(cancelled)
		return nil, ctx.Err()
	})
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		hs.CloseClientConnections()
		shutdownServer(srv)
		hs.Close()
	})
	conn, err := net.Dial("tcp", hs.Listener.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	_ = conn.(*net.TCPConn).SetReadBuffer(4 << 10)
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"flood","arguments":{},"_meta":{"progressToken":"p",` +
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"stall","version":"1"}}}}`
	req := "POST / HTTP/1.1\r\nHost: " + hs.Listener.Addr().String() + "\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n" +
		"MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: flood\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
	_, err = io.WriteString(conn, req)
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	// The client reads nothing more and keeps its connection open.
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the handler was not cancelled after the server ended its stalled response stream")
	}
}

// TestInlineHandlerRacesItsWriter: a handler that runs on its request's goroutine, with SSE
// answers (the priming timer), and a goroutine of its own that sends a notification at about
// the time the handler returns, before or after its response, or as the priming timer fires.
// Every call gets its result, none hangs, nothing is sent twice, and no goroutine is left.
func TestInlineHandlerRacesItsWriter(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	var spawned sync.WaitGroup
	srv := runtime.NewServer(runtime.Implementation{Name: "race", Version: "1"}, runtime.WithLogger(discardLogger()), runtime.WithSSEResponses())
	srv.AddTool(runtime.ToolSpec{Name: "race"}, func(ctx context.Context, req *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		var d struct{ Handler, Sender int }
		if err := json.Unmarshal(req.Arguments, &d); err != nil {
			return nil, err
		}
		c := runtime.CallerFrom(ctx)
		spawned.Add(1)
		go func() {
			defer spawned.Done()
			time.Sleep(time.Duration(d.Sender) * time.Millisecond / 4)
			_ = c.NotifyProgress(ctx, 1, 1, "late") // after the response: an error, ignored
		}()
		time.Sleep(time.Duration(d.Handler) * time.Millisecond / 4)
		return &runtime.CallToolResult{Content: []runtime.Content{runtime.TextContent("ok")}}, nil
	})
	hs := httptest.NewServer(srv)
	c := runtime.NewClient(hs.URL, runtime.WithEra(runtime.EraLegacy), runtime.WithLogger(discardLogger()))
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 40 {
				// Around the priming delay (5 ms) and around each other, in quarter milliseconds.
				h, s := (i*7+w*3)%28, (i*11+w*5)%28
				var progress int
				res, err := c.CallTool(testCtx(t), "race", json.RawMessage(fmt.Sprintf(`{"handler":%d,"sender":%d}`, h, s)),
					runtime.WithProgress(func(*runtime.ProgressParams) { progress++ }))
				switch {
				case err != nil:
					errs <- fmt.Errorf("call %d/%d (%d, %d): %w", w, i, h, s, err)
				case res.Text() != "ok":
					errs <- fmt.Errorf("call %d/%d: result %q", w, i, res.Text())
				case progress > 1:
					errs <- fmt.Errorf("call %d/%d: %d progress notifications", w, i, progress)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	require.NoError(t, c.Close(testCtx(t)))
	spawned.Wait()
	shutdownServer(srv)
	hs.Close()
	goleak.VerifyNone(t, leaks)
}

// rawRequest writes one HTTP/1.x request (a POST of body, or a GET when body is empty, with
// extra header lines) on a new connection to addr and returns the
// connection and the response's head, its body left to read.
func rawRequest(t *testing.T, addr, proto, sid, body string, extra ...string) (net.Conn, *http.Response) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	require.NoError(t, conn.SetDeadline(time.Now().Add(testTimeout)))
	method := "POST"
	if body == "" {
		method = "GET"
	}
	head := method + " / " + proto + "\r\nHost: " + addr + "\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n" +
		"Mcp-Protocol-Version: " + runtime.ProtocolVersion20251125 + "\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n"
	if sid != "" {
		head += "Mcp-Session-Id: " + sid + "\r\n"
	}
	for _, h := range extra {
		head += h + "\r\n"
	}
	_, err = io.WriteString(conn, head+"\r\n"+body)
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	return conn, resp
}

// TestCloseSSEStreamOverHTTP10: an HTTP/1.0 request's response has no chunked encoding; when
// its handler closes the stream (CloseSSEStream) while it runs on, the connection closes and
// the client reads the end of the body then, with the event before the close and a retry
// interval, while the handler still runs.
func TestCloseSSEStreamOverHTTP10(t *testing.T) {
	release := make(chan struct{})
	srv := runtime.NewServer(runtime.Implementation{Name: "h10", Version: "1"}, runtime.WithLogger(discardLogger()), runtime.WithRetryInterval(time.Second))
	srv.AddTool(runtime.ToolSpec{Name: "poll"}, func(ctx context.Context, _ *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		c := runtime.CallerFrom(ctx)
		if err := c.NotifyProgress(ctx, 1, 2, "before"); err != nil {
			return nil, err
		}
		if err := c.CloseSSEStream(); err != nil {
			return nil, err
		}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return &runtime.CallToolResult{Content: []runtime.Content{runtime.TextContent("done")}}, nil
	})
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		shutdownServer(srv)
		hs.Close()
	})
	addr := hs.Listener.Addr().String()
	sid := initRaw(t, addr)

	_, resp := rawRequest(t, addr, "HTTP/1.0", sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"poll","arguments":{},"_meta":{"progressToken":"p"}}}`)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	require.Empty(t, resp.TransferEncoding, "no chunked encoding in HTTP/1.0")
	body, err := io.ReadAll(resp.Body) // ends when the server closes the connection
	close(release)
	require.NoError(t, err)
	assert.Contains(t, string(body), `"message":"before"`)
	assert.Contains(t, string(body), "retry: 1000")
	assert.NotContains(t, string(body), `"done"`, "the result goes out on the resumed stream")
}

// initRaw starts a 2025-11-25 session with raw HTTP/1.1 requests and returns its ID.
func initRaw(t *testing.T, addr string) string {
	t.Helper()
	_, init := rawRequest(t, addr, "HTTP/1.1", "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	require.Equal(t, http.StatusOK, init.StatusCode)
	sid := init.Header.Get("Mcp-Session-Id")
	require.NotEmpty(t, sid)
	_, ack := rawRequest(t, addr, "HTTP/1.1", sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	require.Equal(t, http.StatusAccepted, ack.StatusCode)
	return sid
}

// TestResumeTakesOverInlineHandlersStream: a client resumes a request's stream with GET and
// Last-Event-ID while the POST that carries it is still open and its handler runs on the
// POST's goroutine. The POST's connection is closed (one connection per stream), and what the
// handler sends from then on, its result included, goes out on the GET.
func TestResumeTakesOverInlineHandlersStream(t *testing.T) {
	release := make(chan struct{})
	srv := runtime.NewServer(runtime.Implementation{Name: "takeover", Version: "1"}, runtime.WithLogger(discardLogger()))
	srv.AddTool(runtime.ToolSpec{Name: "slow"}, func(ctx context.Context, _ *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		c := runtime.CallerFrom(ctx)
		if err := c.NotifyProgress(ctx, 1, 2, "first"); err != nil {
			return nil, err
		}
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		_ = c.NotifyProgress(ctx, 2, 2, "second")
		return &runtime.CallToolResult{Content: []runtime.Content{runtime.TextContent("finished")}}, nil
	})
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		shutdownServer(srv)
		hs.Close()
	})
	addr := hs.Listener.Addr().String()
	sid := initRaw(t, addr)
	_, post := rawRequest(t, addr, "HTTP/1.1", sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","arguments":{},"_meta":{"progressToken":"p"}}}`)
	require.Equal(t, "text/event-stream", post.Header.Get("Content-Type"))
	postBody := bufio.NewReader(post.Body)
	lastID := ""
	for !strings.Contains(lastID, "_1") { // the first progress notification's event
		line, err := postBody.ReadString('\n')
		require.NoError(t, err)
		if id, ok := strings.CutPrefix(strings.TrimSpace(line), "id: "); ok {
			lastID = id
		}
	}
	_, get := rawRequest(t, addr, "HTTP/1.1", sid, "", "Last-Event-ID: "+lastID)
	require.Equal(t, http.StatusOK, get.StatusCode)
	rest, err := io.ReadAll(postBody) // ends (EOF or a reset) once the GET took the stream over
	assert.NotContains(t, string(rest), `"second"`, "nothing after the takeover on the POST (err %v)", err)
	close(release)
	getBody, _ := io.ReadAll(get.Body)
	assert.Contains(t, string(getBody), `"message":"second"`)
	assert.Contains(t, string(getBody), `"finished"`)
}

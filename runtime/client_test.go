package runtime_test

// Tests of runtime.Client against real servers on loopback: runtime.NewServer behind a
// recording middleware, or hand-written net/http handlers where the test needs a server that
// misbehaves in a precise way. Connection reuse is observed with a transport that counts its
// dials; cancellation and resumption are observed on the server side.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/protomcp/protomcp/internal/conntest"
	"github.com/protomcp/protomcp/runtime"
)

// rpcRecord is one JSON-RPC message POSTed to a recorder, with the HTTP status it got (0
// while it is being served) and when its handler returned. Hooks see it before that.
type rpcRecord struct {
	Method string
	ID     json.RawMessage // nil for notifications
	Params json.RawMessage
	Status int
	End    time.Time // when the server's handler returned
}

// getRecord is one GET a recorder saw.
type getRecord struct {
	LastEventID string
	Start       time.Time
}

// recorder is an http.Handler in front of another one that records what clients send (the
// JSON-RPC messages of POSTs, GETs and their Last-Event-ID, DELETEs) and how many requests are
// being served. Hooks may answer a request themselves (return true) instead of passing it on.
type recorder struct {
	next   atomic.Pointer[http.Handler]
	active atomic.Int64

	mu      sync.Mutex
	posts   []rpcRecord
	gets    []getRecord
	deletes int

	onPost   func(w http.ResponseWriter, r *http.Request, m rpcRecord) bool
	onGet    func(r *http.Request)
	onDelete func(w http.ResponseWriter, r *http.Request) bool
}

func newRecorder(h http.Handler) *recorder {
	rec := &recorder{}
	rec.setHandler(h)
	return rec
}

func (rec *recorder) setHandler(h http.Handler) { rec.next.Store(&h) }

type statusWriter struct {
	http.ResponseWriter
	status   int
	onHijack func()
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(p)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Hijack takes the connection, and calls onHijack: the server ends a response that way when it
// closes an SSE stream while the handler runs on (CloseSSEStream), and the client sees the
// response end then, not when ServeHTTP returns.
func (w *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err == nil && w.onHijack != nil {
		w.onHijack()
	}
	return c, brw, err
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec.active.Add(1)
	var ended atomic.Bool // the response is over: ServeHTTP returned, or the connection was taken
	end := func() bool {
		if ended.Swap(true) {
			return false
		}
		rec.active.Add(-1)
		return true
	}
	defer end()
	next := *rec.next.Load()
	switch r.Method {
	case http.MethodPost:
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var m rpcRecord
		_ = json.Unmarshal(body, &m)
		if rec.onPost != nil && rec.onPost(w, r, m) {
			return
		}
		rec.mu.Lock()
		i := len(rec.posts)
		rec.posts = append(rec.posts, m)
		rec.mu.Unlock()
		sw := &statusWriter{ResponseWriter: w}
		record := func() {
			if !end() {
				return
			}
			rec.mu.Lock()
			rec.posts[i].Status, rec.posts[i].End = sw.status, time.Now()
			rec.mu.Unlock()
		}
		sw.onHijack = record
		next.ServeHTTP(sw, r)
		record()
		return
	case http.MethodGet:
		rec.mu.Lock()
		rec.gets = append(rec.gets, getRecord{LastEventID: r.Header.Get("Last-Event-ID"), Start: time.Now()})
		rec.mu.Unlock()
		if rec.onGet != nil {
			rec.onGet(r)
		}
	case http.MethodDelete:
		rec.mu.Lock()
		rec.deletes++
		rec.mu.Unlock()
		if rec.onDelete != nil && rec.onDelete(w, r) {
			return
		}
	}
	next.ServeHTTP(w, r)
}

// postsOf returns the recorded POSTs of a method.
func (rec *recorder) postsOf(method string) []rpcRecord {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var out []rpcRecord
	for _, p := range rec.posts {
		if p.Method == method {
			out = append(out, p)
		}
	}
	return out
}

func (rec *recorder) allGets() []getRecord {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return slices.Clone(rec.gets)
}

// waitIdle waits until no request is being served.
func (rec *recorder) waitIdle(t *testing.T) {
	t.Helper()
	if !rec.idle() {
		t.Fatalf("%d requests still being served after %v", rec.active.Load(), testTimeout)
	}
}

// idle waits until no request is being served, and reports false if that does not happen
// within testTimeout.
func (rec *recorder) idle() bool {
	return waitFor(testTimeout, func() bool { return rec.active.Load() == 0 })
}

// clientEnv is a runtime.Server behind a recorder on httptest, and a dial-counting client
// transport.
type clientEnv struct {
	srv *runtime.Server
	rec *recorder
	hs  *httptest.Server
	dc  *conntest.Counter
}

func newClientEnv(t *testing.T, opts ...runtime.ServerOption) *clientEnv {
	t.Helper()
	opts = append([]runtime.ServerOption{runtime.WithLogger(discardLogger())}, opts...)
	e := &clientEnv{srv: runtime.NewServer(runtime.Implementation{Name: "client-test", Version: "0"}, opts...)}
	e.rec = newRecorder(e.srv)
	e.hs = httptest.NewServer(e.rec)
	e.dc = conntest.New(t)
	t.Cleanup(e.shutdown)
	return e
}

// shutdown stops the server side; it may be called more than once.
func (e *clientEnv) shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	_ = e.srv.Shutdown(ctx)
	e.hs.Close()
	e.dc.Transport.CloseIdleConnections()
}

// client returns a client of the env's server using the dial-counting transport; it is
// closed when the test ends, if the test did not close it.
func (e *clientEnv) client(t *testing.T, opts ...runtime.ClientOption) *runtime.Client {
	t.Helper()
	// The session era, which these tests are about, unless a test asks for another
	// (era_test.go tests the modern one).
	opts = append([]runtime.ClientOption{runtime.WithEra(runtime.EraLegacy), runtime.WithHTTPClient(e.dc.Client), runtime.WithLogger(discardLogger())}, opts...)
	c := runtime.NewClient(e.hs.URL, opts...)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		_ = c.Close(ctx)
	})
	return c
}

// closeAll closes the client and the server, then checks that no goroutine outlives them.
func (e *clientEnv) closeAll(t *testing.T, c *runtime.Client, leaks goleak.Option) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := c.Close(ctx); err != nil {
		t.Errorf("client Close: %v", err)
	}
	e.shutdown()
	goleak.VerifyNone(t, leaks)
}

// serverModes runs f once with JSON answers (the default) and once with SSE answers.
func serverModes(t *testing.T, f func(t *testing.T, opts ...runtime.ServerOption)) {
	t.Run("json", func(t *testing.T) { f(t) })
	t.Run("sse", func(t *testing.T) { f(t, runtime.WithSSEResponses()) })
}

func textResult(s string) *runtime.CallToolResult {
	return &runtime.CallToolResult{Content: []runtime.Content{runtime.TextContent(s)}}
}

// --- The seed's situation: a server that ends each SSE answer 50 ms after the response. ---

// slowTailServer is a hand-written MCP server (not runtime.Server) that speaks just enough
// of the protocol for the client: initialize (JSON, with a session ID), notifications (202),
// DELETE, and tools/call answered as SSE whose end comes long after the response event: the
// handler writes the response event and flushes it, waits until the test says that the call
// has returned, then waits tail more before it writes the end of the stream and returns.
type slowTailServer struct {
	tail     time.Duration
	returned chan struct{} // the test sends one value per call, once the call has returned
	release  chan struct{} // closing it ends the tails at once (nil: never)
	finished chan struct{} // one value per tools/call, sent when its handler is about to return
}

func newSlowTailServer(tail time.Duration) *slowTailServer {
	return &slowTailServer{tail: tail, returned: make(chan struct{}, 1), release: make(chan struct{}), finished: make(chan struct{}, 1)}
}

const slowTailSession = "slow-tail-session"

func (s *slowTailServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodDelete:
		w.WriteHeader(http.StatusOK)
		return
	case http.MethodGet:
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	case http.MethodPost:
	default:
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"params"`
	}
	if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if m.Method == "initialize" {
		w.Header().Set("Mcp-Session-Id", slowTailSession)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":%q,"capabilities":{"tools":{}},"serverInfo":{"name":"slow-tail","version":"0"}}}`,
			m.ID, m.Params.ProtocolVersion)
		return
	}
	if r.Header.Get("Mcp-Session-Id") != slowTailSession {
		http.Error(w, "unknown session", http.StatusNotFound)
		return
	}
	if len(m.ID) == 0 {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if m.Method != "tools/call" {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"not here"}}`, m.ID)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprintf(w, "id: 1\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"done\"}]}}\n\n", m.ID)
	w.(http.Flusher).Flush()
	// A client that waits for the end of the stream never returns: the test then fails
	// once testTimeout has passed, with the handler finished before the call returned.
	select {
	case <-s.returned:
	case <-s.release:
	case <-r.Context().Done():
	case <-time.After(testTimeout):
	}
	select {
	case <-time.After(s.tail):
		fmt.Fprint(w, ": the end of the stream, long after the response\n\n")
	case <-s.release:
	case <-r.Context().Done(): // the client closed the stream
	}
	s.finished <- struct{}{}
}

// A call returns as soon as its response event arrives, not when the stream ends, and the
// stream's tail is still read in the background so that the connection is reused.
//
// What is asserted, for each sequential call:
//   - it returns while the server's handler is still holding the stream open: the handler
//     does not end the stream before the test has seen the call return (then 50 ms more), so
//     a client that waited for the end of the stream would never return; the test checks that
//     the handler has not finished when the call returns, and waits for it to finish before
//     the next call.
//
// And over all the calls (100 with a context per call, 20 for the other shapes):
//   - the client abandoned no response body: every stream was read to its end, so its
//     connection went back to the pool;
//   - at most 2 connections were dialed. The transport is capped at 2 connections
//     (MaxConnsPerHost), so that the count depends on reuse alone, not on scheduling: when
//     call k+1 starts, call k's connection may still be draining its 50 ms tail, and call k-1's
//     should be idle again, but on a loaded machine its drain may not have run yet; with the
//     cap the transport waits for it instead of dialing a third connection. A client that
//     closed streams at the response instead of draining them would close and re-dial a
//     connection for every call. One more dial is accepted per connection the transport
//     retired on its own, which no client can prevent: net/http does not reuse a connection
//     whose writer goroutine has not reported the request written within 50 ms of the
//     response's end (maxWriteWaitBeforeConnReuse), which happens on a starved CPU.
//
// Without waiting for each handler between calls, connections would stay busy 50 ms after
// their call, and back-to-back calls would need about 50 ms / (duration of a call) of them:
// the spacing is part of the property, which the test makes explicit.
//
// The calls' contexts come in three shapes, because the drain must outlive each of them: one
// context for all calls; a context per call, cancelled as soon as the call returns (the usual
// `defer cancel()`); and context.Background(), which the client bounds with its default call
// timeout, a context of its own that ends when the call returns.
func TestSlowStreamTailDoesNotDelayCallsAndConnectionsAreReused(t *testing.T) {
	t.Run("per-call", func(t *testing.T) { testSlowStreamTail(t, "per-call", 100) })
	// 20 calls each for the other shapes, to keep the test short: without the drain they
	// would close and re-dial 20 connections.
	t.Run("shared", func(t *testing.T) { testSlowStreamTail(t, "shared", 20) })
	t.Run("background", func(t *testing.T) { testSlowStreamTail(t, "background", 20) })
}

func testSlowStreamTail(t *testing.T, shape string, calls int) {
	s := newSlowTailServer(50 * time.Millisecond)
	hs := httptest.NewServer(s)
	defer hs.Close()
	defer close(s.release)
	dc := conntest.New(t)
	dc.Transport.MaxConnsPerHost = 2
	c := runtime.NewClient(hs.URL, runtime.WithHTTPClient(dc.Client), runtime.WithLogger(discardLogger()))
	ctx := testCtx(t)
	for i := range calls {
		callCtx, cancel := ctx, context.CancelFunc(func() {})
		switch shape {
		case "per-call":
			callCtx, cancel = context.WithTimeout(context.Background(), testTimeout)
		case "background":
			callCtx = context.Background()
		}
		res, err := c.CallTool(callCtx, "any", nil)
		cancel()
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		select {
		case <-s.finished:
			t.Fatalf("call %d: the server's handler finished before the test saw the call return: the client waited for the end of the stream, or closed it", i)
		default:
		}
		s.returned <- struct{}{}
		if res.Text() != "done" {
			t.Fatalf("call %d: result %q", i, res.Text())
		}
		select {
		case <-s.finished:
		case <-ctx.Done():
			t.Fatalf("call %d: the server handler did not finish", i)
		}
	}
	if err := c.Close(ctx); err != nil {
		t.Errorf("close: %v", err)
	}
	dials, retired, abandoned := dc.Dials.Load(), dc.Closes.Load(), dc.Abandoned.Load()
	t.Logf("%d calls with 50 ms stream tails, %s contexts: %d connections dialed, %d retired by the transport, %d bodies abandoned",
		calls, shape, dials, retired, abandoned)
	if abandoned != 0 {
		t.Errorf("the client closed %d response bodies before their end: finished streams must be drained back into the pool", abandoned)
	}
	if dials > 2+retired {
		t.Errorf("%d sequential calls dialed %d connections, want at most 2 (plus %d the transport retired on its own)", calls, dials, retired)
	}
}

// Close stops the background drains of streams that are still going: it does not wait for
// the server to end them, nor for the drain limits, beyond its own context.
func TestCloseStopsBackgroundDrains(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	s := newSlowTailServer(time.Hour)
	hs := httptest.NewServer(s)
	defer hs.Close()
	defer close(s.release) // if the test fails, lets the drain, Close and hs.Close end
	dc := conntest.New(t)
	// Drain limits far beyond the test's timeout: only Close can stop the drain in time.
	c := runtime.NewClient(hs.URL, runtime.WithHTTPClient(dc.Client), runtime.WithLogger(discardLogger()),
		runtime.WithDrainLimits(1<<20, time.Hour))
	if _, err := c.CallTool(testCtx(t), "any", nil); err != nil {
		t.Fatal(err)
	}
	s.returned <- struct{}{}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	closed := make(chan error, 1)
	go func() { closed <- c.Close(ctx) }()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(testTimeout):
		t.Fatal("Close waited for a background drain that the server never ends")
	}
	select {
	case <-s.finished: // the server saw the client close the stream
	case <-time.After(testTimeout):
		t.Fatal("the stream was not closed")
	}
	hs.Close()
	dc.Transport.CloseIdleConnections()
	goleak.VerifyNone(t, leaks)
}

// --- Cancellation. ---

// A call whose context is cancelled, or whose WithTimeout expires, while the tool runs returns
// at once with the context's error; the server is sent notifications/cancelled for that
// request (the tool's context is cancelled: the runtime server does not cancel handlers when
// a connection drops, only on that notification or when the session ends, and the session is
// still open when the test looks); the request's HTTP stream is released; and once client and
// server are closed no goroutine is left.
//
// "cancel-resuming" cancels while the client waits to resume a stream the server closed
// (CloseSSEStream, with a retry: of a minute): the call must not wait out the retry interval.
func TestCancelledCallNotifiesServerAndLeaksNothing(t *testing.T) {
	for _, how := range []string{"cancel", "timeout", "cancel-resuming"} {
		t.Run(how, func(t *testing.T) {
			serverModes(t, func(t *testing.T, opts ...runtime.ServerOption) {
				testCancelledCall(t, how, opts...)
			})
		})
	}
}

func testCancelledCall(t *testing.T, how string, opts ...runtime.ServerOption) {
	leaks := goleak.IgnoreCurrent()
	if how == "cancel-resuming" {
		opts = append(opts, runtime.WithRetryInterval(time.Minute))
	}
	e := newClientEnv(t, opts...)
	started := make(chan struct{}, 1)
	handlerErr := make(chan error, 1)
	e.srv.AddTool(runtime.ToolSpec{Name: "block"}, func(ctx context.Context, _ *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		if how == "cancel-resuming" {
			if err := runtime.CallerFrom(ctx).CloseSSEStream(); err != nil {
				return nil, err
			}
		}
		started <- struct{}{}
		<-ctx.Done()
		handlerErr <- ctx.Err()
		return nil, ctx.Err()
	})
	c := e.client(t)
	if err := c.Connect(testCtx(t)); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var callOpts []runtime.CallOption
	want := context.Canceled
	switch how {
	case "timeout":
		// Long enough for the request to reach the server first: a cancellation that
		// overtakes its request cannot cancel it.
		callOpts = append(callOpts, runtime.WithTimeout(300*time.Millisecond))
		want = context.DeadlineExceeded
	case "cancel":
		go func() {
			<-started
			cancel()
		}()
	case "cancel-resuming":
		go func() {
			<-started
			// Once the server has finished the POST, the client reads the end of its stream
			// and waits the retry interval before it resumes.
			if !e.rec.idle() {
				t.Error("the server did not finish the POST after CloseSSEStream")
			}
			cancel()
		}()
	}
	_, err := c.CallTool(ctx, "block", nil, callOpts...)
	if !errors.Is(err, want) {
		t.Fatalf("call error = %v, want %v", err, want)
	}
	if how == "cancel-resuming" {
		if gets := e.rec.allGets(); len(gets) != 0 {
			t.Errorf("the client resumed (%+v) though it was cancelled during the retry interval", gets)
		}
	}

	select {
	case herr := <-handlerErr:
		if !errors.Is(herr, context.Canceled) {
			t.Errorf("the tool's context ended with %v, want context.Canceled (by notifications/cancelled)", herr)
		}
	case <-time.After(testTimeout):
		t.Fatal("the tool's context was never cancelled: the server got no notifications/cancelled")
	}
	// The POST's stream is over on the server side too.
	e.rec.waitIdle(t)
	calls := e.rec.postsOf("tools/call")
	if len(calls) != 1 {
		t.Fatalf("%d tools/call POSTs, want 1", len(calls))
	}
	var cancelled []runtime.CancelledParams
	for _, n := range e.rec.postsOf("notifications/cancelled") {
		var p runtime.CancelledParams
		if err := json.Unmarshal(n.Params, &p); err != nil {
			t.Fatalf("notifications/cancelled params %s: %v", n.Params, err)
		}
		cancelled = append(cancelled, p)
	}
	if len(cancelled) != 1 || cancelled[0].RequestID == nil || cancelled[0].RequestID.String() != string(calls[0].ID) {
		t.Errorf("notifications/cancelled sent: %+v, want one for request %s", cancelled, calls[0].ID)
	} else {
		t.Logf("notifications/cancelled for request %s, reason %q", calls[0].ID, cancelled[0].Reason)
	}

	// The client still works after a cancelled call.
	e.srv.AddTool(runtime.ToolSpec{Name: "ok"}, func(context.Context, *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		return textResult("fine"), nil
	})
	res, err := c.CallTool(testCtx(t), "ok", nil)
	if err != nil || res.Text() != "fine" {
		t.Errorf("call after the cancelled one: %v, %v", res, err)
	}
	e.closeAll(t, c, leaks)
}

// --- Resumption. ---

// A tool that closes its SSE connection (CloseSSEStream) before answering: the client waits
// the retry interval the server sent, resumes with GET and Last-Event-ID, never POSTs the
// request again (the tool runs once), and returns the result that arrives on the resumed
// stream.
func TestCallResumesAfterServerClosesStream(t *testing.T) {
	serverModes(t, func(t *testing.T, opts ...runtime.ServerOption) {
		// Longer than the client's default of one second, so that a client ignoring the
		// server's retry: would reconnect too early.
		const retry = 1200 * time.Millisecond
		e := newClientEnv(t, append(opts, runtime.WithRetryInterval(retry))...)
		resumed := make(chan struct{})
		var once sync.Once
		e.rec.onGet = func(r *http.Request) {
			if r.Header.Get("Last-Event-ID") != "" {
				once.Do(func() { close(resumed) })
			}
		}
		var runs atomic.Int32
		e.srv.AddTool(runtime.ToolSpec{Name: "poll"}, func(ctx context.Context, _ *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
			runs.Add(1)
			if err := runtime.CallerFrom(ctx).CloseSSEStream(); err != nil {
				return nil, err
			}
			// Answer only once the client is back, so that the result can only arrive on
			// the resumed stream.
			select {
			case <-resumed:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return textResult("after the reconnection"), nil
		})
		c := e.client(t)
		res, err := c.CallTool(testCtx(t), "poll", nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.Text() != "after the reconnection" {
			t.Errorf("result %q", res.Text())
		}
		if n := runs.Load(); n != 1 {
			t.Errorf("the tool ran %d times, want 1", n)
		}
		posts := e.rec.postsOf("tools/call")
		if len(posts) != 1 {
			t.Fatalf("%d tools/call POSTs, want 1: the client must resume with GET, never POST again", len(posts))
		}
		var resumes []getRecord
		for _, g := range e.rec.allGets() {
			if g.LastEventID != "" {
				resumes = append(resumes, g)
			}
		}
		if len(resumes) == 0 {
			t.Fatal("no GET with Last-Event-ID")
		}
		// The client cannot have seen the end of the POST's stream before the server's
		// handler returned, and waits retry after that: a lower bound, by causality.
		if gap := resumes[0].Start.Sub(posts[0].End); gap < retry {
			t.Errorf("the client reconnected %v after the server closed the stream, before the retry interval of %v", gap, retry)
		}
		t.Logf("resumed with Last-Event-ID %q; %d dials", resumes[0].LastEventID, e.dc.Dials.Load())
	})
}

// --- Session expiry and Close. ---

// When the server forgets the session behind the client's back (a DELETE from someone else,
// or a server restart), the next call gets 404, initializes a new session and is sent again,
// once, and succeeds.
func TestCallReinitializesAfterSessionLoss(t *testing.T) {
	for _, how := range []string{"deleted", "restarted"} {
		t.Run(how, func(t *testing.T) {
			e := newClientEnv(t)
			var runs atomic.Int32
			echo := func(context.Context, *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
				runs.Add(1)
				return textResult("ok"), nil
			}
			e.srv.AddTool(runtime.ToolSpec{Name: "echo"}, echo)
			c := e.client(t)
			ctx := testCtx(t)
			if _, err := c.CallTool(ctx, "echo", nil); err != nil {
				t.Fatal(err)
			}
			old := c.SessionID()
			switch how {
			case "deleted":
				req, _ := http.NewRequestWithContext(ctx, http.MethodDelete, e.hs.URL, nil)
				req.Header.Set("Mcp-Session-Id", old)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("DELETE: %s", resp.Status)
				}
				http.DefaultClient.CloseIdleConnections()
			case "restarted":
				srv2 := runtime.NewServer(runtime.Implementation{Name: "client-test-2", Version: "0"}, runtime.WithLogger(discardLogger()))
				srv2.AddTool(runtime.ToolSpec{Name: "echo"}, echo)
				e.rec.setHandler(srv2)
				_ = e.srv.Shutdown(ctx)
				e.srv = srv2
			}
			res, err := c.CallTool(ctx, "echo", nil)
			if err != nil {
				t.Fatalf("call after the session was lost: %v", err)
			}
			if res.Text() != "ok" {
				t.Errorf("result %q", res.Text())
			}
			if c.SessionID() == old || c.SessionID() == "" {
				t.Errorf("session ID %q after re-initializing, was %q", c.SessionID(), old)
			}
			if n := len(e.rec.postsOf("initialize")); n != 2 {
				t.Errorf("%d initialize POSTs, want 2", n)
			}
			var statuses []int
			for _, p := range e.rec.postsOf("tools/call") {
				statuses = append(statuses, p.Status)
			}
			if !slices.Equal(statuses, []int{200, 404, 200}) {
				t.Errorf("tools/call statuses %v, want [200 404 200]", statuses)
			}
			if n := runs.Load(); n != 2 {
				t.Errorf("the tool ran %d times for 2 successful calls", n)
			}
		})
	}
}

// Close sends DELETE for the session, and returns even when the server never answers it:
// bounded by the context given to Close, or by the client's close timeout (5 s by default)
// when that context has no deadline.
func TestCloseIsBoundedWhenDeleteHangs(t *testing.T) {
	for _, bound := range []string{"context", "default"} {
		t.Run(bound, func(t *testing.T) {
			e := newClientEnv(t)
			deleteSeen := make(chan string, 1)
			e.rec.onDelete = func(w http.ResponseWriter, r *http.Request) bool {
				deleteSeen <- r.Header.Get("Mcp-Session-Id")
				<-r.Context().Done() // never answers; ends when the client gives up
				return true
			}
			c := e.client(t)
			if err := c.Connect(testCtx(t)); err != nil {
				t.Fatal(err)
			}
			sid := c.SessionID()
			ctx := context.Background()
			if bound == "context" {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, 300*time.Millisecond)
				defer cancel()
			}
			closed := make(chan error, 1)
			go func() { closed <- c.Close(ctx) }()
			select {
			case err := <-closed:
				if err == nil {
					t.Error("Close returned nil though the DELETE was never answered")
				}
				t.Logf("Close: %v", err)
			case <-time.After(testTimeout):
				t.Fatal("Close did not return while the server hung on DELETE")
			}
			select {
			case got := <-deleteSeen:
				if got != sid {
					t.Errorf("DELETE for session %q, want %q", got, sid)
				}
			default:
				t.Error("Close sent no DELETE")
			}
			if _, err := c.CallTool(testCtx(t), "any", nil); !errors.Is(err, runtime.ErrClosed) {
				t.Errorf("call after Close: %v, want ErrClosed", err)
			}
		})
	}
}

// --- Server-to-client requests and notifications. ---

// A tool that asks the client for elicitation, sampling and roots gets what the client's
// handlers answer; elicitation defaults from the requested schema (SEP-1034) fill in the
// properties the handler leaves out, and do not override the ones it gives.
func TestServerToClientRequests(t *testing.T) {
	serverModes(t, func(t *testing.T, opts ...runtime.ServerOption) {
		e := newClientEnv(t, opts...)
		type asked struct {
			Elicit *runtime.ElicitResult        `json:"elicit"`
			Sample *runtime.CreateMessageResult `json:"sample"`
			Roots  *runtime.ListRootsResult     `json:"roots"`
		}
		e.srv.AddTool(runtime.ToolSpec{Name: "ask"}, func(ctx context.Context, _ *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
			var a asked
			var err error
			a.Elicit, err = runtime.CallerFrom(ctx).Elicit(ctx, &runtime.ElicitParams{
				Message: "Where?",
				RequestedSchema: json.RawMessage(`{"type":"object","properties":{
					"city":{"type":"string"},
					"unit":{"type":"string","enum":["celsius","fahrenheit"],"default":"celsius"},
					"days":{"type":"integer","default":3},
					"alerts":{"type":"boolean","default":true}}}`),
			})
			if err != nil {
				return nil, fmt.Errorf("elicit: %w", err)
			}
			a.Sample, err = runtime.CallerFrom(ctx).CreateMessage(ctx, &runtime.CreateMessageParams{
				Messages:  []runtime.SamplingMessage{{Role: "user", Content: runtime.TextContent("Say hi")}},
				MaxTokens: 16,
			})
			if err != nil {
				return nil, fmt.Errorf("sample: %w", err)
			}
			a.Roots, err = runtime.CallerFrom(ctx).ListRoots(ctx)
			if err != nil {
				return nil, fmt.Errorf("roots: %w", err)
			}
			b, _ := json.Marshal(a)
			return textResult(string(b)), nil
		})
		var gotElicit, gotSample atomic.Pointer[string]
		c := e.client(t,
			runtime.WithElicitationHandler(func(_ context.Context, p *runtime.ElicitParams) (*runtime.ElicitResult, error) {
				gotElicit.Store(&p.Message)
				return &runtime.ElicitResult{Action: "accept", Content: map[string]any{"city": "Paris", "days": 5}}, nil
			}),
			runtime.WithSamplingHandler(func(_ context.Context, p *runtime.CreateMessageParams) (*runtime.CreateMessageResult, error) {
				text := p.Messages[0].Content.Text
				gotSample.Store(&text)
				return &runtime.CreateMessageResult{Role: "assistant", Content: runtime.TextContent("hi"), Model: "test-model", StopReason: "endTurn"}, nil
			}),
			runtime.WithRootsHandler(func(context.Context) (*runtime.ListRootsResult, error) {
				return &runtime.ListRootsResult{Roots: []runtime.Root{{URI: "file:///work", Name: "work"}}}, nil
			}),
		)
		res, err := c.CallTool(testCtx(t), "ask", nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.IsError {
			t.Fatalf("tool error: %s", res.Text())
		}
		var a asked
		if err := json.Unmarshal([]byte(res.Text()), &a); err != nil {
			t.Fatalf("result %q: %v", res.Text(), err)
		}
		if p := gotElicit.Load(); p == nil || *p != "Where?" {
			t.Errorf("elicitation handler got message %v", p)
		}
		wantContent := map[string]any{"city": "Paris", "days": float64(5), "unit": "celsius", "alerts": true}
		if a.Elicit == nil || a.Elicit.Action != "accept" || !mapsEqualJSON(a.Elicit.Content, wantContent) {
			t.Errorf("elicitation result %+v, want accept with %v", a.Elicit, wantContent)
		}
		if p := gotSample.Load(); p == nil || *p != "Say hi" {
			t.Errorf("sampling handler got %v", p)
		}
		if a.Sample == nil || a.Sample.Model != "test-model" || a.Sample.Content.Text != "hi" || a.Sample.Role != "assistant" {
			t.Errorf("sampling result %+v", a.Sample)
		}
		if a.Roots == nil || len(a.Roots.Roots) != 1 || a.Roots.Roots[0].URI != "file:///work" {
			t.Errorf("roots %+v", a.Roots)
		}
	})
}

// SEP-1034 defaults apply to an accepted form, even one the handler returns without content,
// and never to a decline or a cancel.
func TestElicitationDefaultsOnlyOnAccept(t *testing.T) {
	e := newClientEnv(t)
	schema := json.RawMessage(`{"type":"object","properties":{"unit":{"type":"string","default":"celsius"},"days":{"type":"integer"}}}`)
	e.srv.AddTool(runtime.ToolSpec{Name: "ask"}, func(ctx context.Context, req *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		var action string
		if err := json.Unmarshal(req.Arguments, &struct {
			Action *string `json:"action"`
		}{&action}); err != nil {
			return nil, err
		}
		res, err := runtime.CallerFrom(ctx).Elicit(ctx, &runtime.ElicitParams{Message: action, RequestedSchema: schema})
		if err != nil {
			return nil, err
		}
		b, _ := json.Marshal(res)
		return textResult(string(b)), nil
	})
	c := e.client(t, runtime.WithElicitationHandler(func(_ context.Context, p *runtime.ElicitParams) (*runtime.ElicitResult, error) {
		return &runtime.ElicitResult{Action: p.Message}, nil // no content at all
	}))
	for action, want := range map[string]string{
		"accept":  `{"action":"accept","content":{"unit":"celsius"}}`,
		"decline": `{"action":"decline"}`,
		"cancel":  `{"action":"cancel"}`,
	} {
		res, err := c.CallToolJSON(testCtx(t), "ask", map[string]string{"action": action})
		if err != nil {
			t.Fatalf("%s: %v", action, err)
		}
		if res.Text() != want {
			t.Errorf("%s: the tool got %s, want %s", action, res.Text(), want)
		}
	}
}

func mapsEqualJSON(a, b map[string]any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

// Progress notifications reach the WithProgress callback in the order the tool sent them, and
// all of them before the call returns.
func TestProgressCallbacksInOrderBeforeReturn(t *testing.T) {
	serverModes(t, func(t *testing.T, opts ...runtime.ServerOption) {
		e := newClientEnv(t, opts...)
		const steps = 50
		e.srv.AddTool(runtime.ToolSpec{Name: "count"}, func(ctx context.Context, _ *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
			for i := 1; i <= steps; i++ {
				if err := runtime.CallerFrom(ctx).NotifyProgress(ctx, float64(i), steps, fmt.Sprintf("step %d", i)); err != nil {
					return nil, err
				}
			}
			return textResult("counted"), nil
		})
		c := e.client(t)
		for round := range 10 {
			var mu sync.Mutex
			var got []float64
			res, err := c.CallTool(testCtx(t), "count", nil, runtime.WithProgress(func(p *runtime.ProgressParams) {
				mu.Lock()
				got = append(got, p.Progress)
				mu.Unlock()
			}))
			if err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			atReturn := slices.Clone(got)
			mu.Unlock()
			if res.Text() != "counted" {
				t.Fatalf("result %q", res.Text())
			}
			want := make([]float64, steps)
			for i := range want {
				want[i] = float64(i + 1)
			}
			if !slices.Equal(atReturn, want) {
				t.Fatalf("round %d: progress seen by the time the call returned: %v, want 1..%d in order", round, atReturn, steps)
			}
		}
	})
}

// --- Typed errors. ---

// A JSON-RPC error comes back as a *runtime.Error with its code, a tool result with isError
// as a *runtime.ToolError (from the typed CallTool) carrying the content, and an HTTP failure
// as a *runtime.HTTPError with its status.
func TestTypedErrors(t *testing.T) {
	serverModes(t, func(t *testing.T, opts ...runtime.ServerOption) {
		e := newClientEnv(t, opts...)
		var unavailable atomic.Bool // a hook answers tools/call with 503
		e.rec.onPost = func(w http.ResponseWriter, _ *http.Request, m rpcRecord) bool {
			if m.Method == "tools/call" && unavailable.Load() {
				http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
				return true
			}
			return false
		}
		e.srv.AddTool(runtime.ToolSpec{Name: "invalid"}, func(context.Context, *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
			return nil, runtime.NewError(runtime.CodeInvalidParams, "no such city")
		})
		e.srv.AddTool(runtime.ToolSpec{Name: "broken"}, func(context.Context, *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
			return runtime.ErrorResult("the weather station is down"), nil
		})
		c := e.client(t)
		ctx := testCtx(t)

		_, err := c.CallTool(ctx, "invalid", nil)
		var rpcErr *runtime.Error
		if !errors.As(err, &rpcErr) || rpcErr.Code != runtime.CodeInvalidParams || rpcErr.Message != "no such city" {
			t.Errorf("tool returning a JSON-RPC error: %v (%T), want *runtime.Error %d", err, err, runtime.CodeInvalidParams)
		}
		_, err = c.Call(ctx, "no/such/method", nil)
		if !errors.As(err, &rpcErr) || rpcErr.Code != runtime.CodeMethodNotFound {
			t.Errorf("unknown method: %v, want *runtime.Error %d", err, runtime.CodeMethodNotFound)
		}

		_, err = runtime.CallTypedTool[structpb.Struct](ctx, c, "broken", &structpb.Struct{})
		var toolErr *runtime.ToolError
		if !errors.As(err, &toolErr) {
			t.Fatalf("isError result: %v (%T), want *runtime.ToolError", err, err)
		}
		if toolErr.Tool != "broken" || toolErr.Result == nil || !toolErr.Result.IsError || toolErr.Result.Text() != "the weather station is down" {
			t.Errorf("ToolError %+v", toolErr)
		}
		if errors.As(err, &rpcErr) {
			t.Errorf("a tool error is not a JSON-RPC error: %v", err)
		}
		// The untyped CallTool returns the result as sent.
		res, err := c.CallTool(ctx, "broken", nil)
		if err != nil || !res.IsError {
			t.Errorf("untyped CallTool of an isError result: %+v, %v", res, err)
		}

		unavailable.Store(true)
		_, err = c.CallTool(ctx, "broken", nil)
		var httpErr *runtime.HTTPError
		if !errors.As(err, &httpErr) || httpErr.StatusCode != http.StatusServiceUnavailable || !strings.Contains(httpErr.Body, "down for maintenance") {
			t.Errorf("503 answer: %v (%T), want *runtime.HTTPError 503", err, err)
		}
	})
}

// An HTTP failure at initialization (the server's DNS-rebinding protection refuses the
// Origin) is a *runtime.HTTPError too, carrying the JSON-RPC error of the body.
func TestHTTPErrorAtInitialize(t *testing.T) {
	e := newClientEnv(t)
	c := e.client(t, runtime.WithHeader("Origin", "http://evil.example"))
	_, err := c.CallTool(testCtx(t), "any", nil)
	var httpErr *runtime.HTTPError
	if !errors.As(err, &httpErr) || httpErr.StatusCode != http.StatusForbidden {
		t.Fatalf("call with a refused Origin: %v (%T), want *runtime.HTTPError 403", err, err)
	}
	if httpErr.RPC == nil || !strings.Contains(httpErr.RPC.Message, "Origin") {
		t.Errorf("HTTPError.RPC = %+v, want the server's JSON-RPC error about the Origin", httpErr.RPC)
	}
}

package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The client against a broken or malicious server: each test runs a real server on loopback
// (protomcp's own, or a hand-written one that misbehaves on purpose).

// fakeServer is a hand-written MCP endpoint: initialize and notifications are answered as the
// transport says, anything else by the test's handler.
type fakeServer struct {
	hs        *httptest.Server
	sessionID string
	onPost    func(w http.ResponseWriter, r *http.Request, m *wireMessage)
	onGet     func(w http.ResponseWriter, r *http.Request)
}

// newFakeServer starts a fake session-era server; its tests' clients say WithEra(EraLegacy), so
// that no server/discover probe reaches its handlers.
func newFakeServer(t *testing.T, f *fakeServer) *fakeServer {
	t.Helper()
	if f.sessionID == "" {
		f.sessionID = "fake-session"
	}
	f.hs = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet:
			if f.onGet == nil {
				w.WriteHeader(http.StatusMethodNotAllowed)
				return
			}
			f.onGet(w, r)
			return
		case http.MethodDelete:
			return
		}
		b, _ := io.ReadAll(r.Body)
		m, rpcErr := decodeMessage(b)
		if rpcErr != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		switch {
		case m.Method == methodInitialize:
			w.Header().Set(headerSessionID, f.sessionID)
			w.Header().Set("Content-Type", "application/json")
			res, _ := json.Marshal(&InitializeResult{ProtocolVersion: LatestProtocolVersion, ServerInfo: Implementation{Name: "fake", Version: "0"}})
			_, _ = w.Write(encodeResponse(m.ID, res, nil))
		case !m.isRequest() || f.onPost == nil:
			w.WriteHeader(http.StatusAccepted)
		default:
			f.onPost(w, r, m)
		}
	}))
	t.Cleanup(func() {
		f.hs.CloseClientConnections()
		f.hs.Close()
	})
	return f
}

// closeClient closes c within a bounded time.
func closeClient(t *testing.T, c *Client) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = c.Close(ctx)
}

// A redirect to another origin would carry the request's body, the session ID and the
// WithHeader secrets there: it is refused by default.
func TestClientRefusesCrossOriginRedirect(t *testing.T) {
	t.Parallel()
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		w.WriteHeader(http.StatusTeapot)
	}))
	defer other.Close()
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/mcp", http.StatusTemporaryRedirect)
	}))
	defer redirector.Close()
	c := NewClient(redirector.URL, WithHeader("Authorization", "Bearer secret"))
	defer closeClient(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := c.Connect(ctx)
	require.ErrorIs(t, err, errCrossOriginRedirect, "Connect through a cross-origin redirect")
	if n := elsewhere.Load(); n != 0 {
		require.Fail(t, fmt.Sprintf("the other origin received %d requests", n))
	}
	// Allowed on request.
	c2 := NewClient(redirector.URL, WithCrossOriginRedirects(), WithEra(EraLegacy)) // one request: initialize, no server/discover probe
	defer closeClient(t, c2)
	if err := c2.Connect(ctx); err == nil || elsewhere.Load() != 1 {
		require.Fail(t, fmt.Sprintf("with WithCrossOriginRedirects: %v, %d requests elsewhere", err, elsewhere.Load()))
	}
}

// Requests from the server run at most WithMaxServerRequests at a time; the rest are answered
// at once with an error, and the server goes on.
func TestClientBoundsServerRequests(t *testing.T) {
	t.Parallel()
	const limit, asked = 4, 40
	ts := newTestServer(t, WithCallerRequestTimeout(20*time.Second))
	ts.srv.AddTool(ToolSpec{Name: "elicit_many"}, func(ctx context.Context, _ *CallToolRequest) (*CallToolResult, error) {
		var wg sync.WaitGroup
		var ok, refused atomic.Int32
		for range asked {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := CallerFrom(ctx).Elicit(ctx, &ElicitParams{Message: "?"}); err != nil {
					refused.Add(1)
				} else {
					ok.Add(1)
				}
			}()
		}
		wg.Wait()
		return &CallToolResult{Content: []Content{TextContent(fmt.Sprintf("ok=%d refused=%d", ok.Load(), refused.Load()))}}, nil
	})
	var running, peak atomic.Int32
	release := make(chan struct{})
	entered := make(chan struct{}, asked)
	c := NewClient(ts.url, WithEra(EraLegacy), WithHTTPClient(ts.hc), WithMaxServerRequests(limit), WithElicitationHandler(func(ctx context.Context, _ *ElicitParams) (*ElicitResult, error) {
		n := running.Add(1)
		defer running.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		entered <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return &ElicitResult{Action: "decline"}, nil
	}))
	defer closeClient(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan *CallToolResult, 1)
	go func() {
		res, err := c.CallTool(ctx, "elicit_many", nil)
		assert.NoError(t, err, "call")
		done <- res
	}()
	for range limit {
		select {
		case <-entered:
		case <-ctx.Done():
			require.Fail(t, "the handlers did not start")
		}
	}
	close(release)
	var res *CallToolResult
	select {
	case res = <-done:
	case <-ctx.Done():
		require.Fail(t, "the call never finished")
	}
	if p := peak.Load(); p > limit {
		require.Fail(t, fmt.Sprintf("%d server requests handled at once, over the limit of %d", p, limit))
	}
	require.Falsef(t, res == nil || !strings.Contains(res.Text(), "refused=") || strings.Contains(res.Text(), "refused=0"), "no request was refused: %+v", res)
}

// Notifications whose callbacks do not keep up are bounded in bytes; and once Close has
// stopped the client, no callback starts.
func TestClientNotificationBudget(t *testing.T) {
	ts := newTestServer(t, WithEventStore(nil)) // no store: the server keeps nothing it has sent
	filler := strings.Repeat("x", 64<<10)
	ts.srv.AddTool(ToolSpec{Name: "chatty"}, func(ctx context.Context, _ *CallToolRequest) (*CallToolResult, error) {
		for range 200 { // 12.5 MiB of log messages
			if err := CallerFrom(ctx).Log(ctx, LevelWarning, "chatty", filler); err != nil {
				return nil, err
			}
		}
		return &CallToolResult{}, nil
	})
	logs := &hardenLog{}
	var closed atomic.Bool
	var afterClose atomic.Int32
	block := make(chan struct{})
	bodies := &bodyTracker{rt: ts.tr}
	c := NewClient(ts.url, WithEra(EraLegacy), WithHTTPClient(&http.Client{Transport: bodies}), WithNotificationBudget(1<<20), WithCloseTimeout(200*time.Millisecond), WithDrainLimits(1<<20, 100*time.Millisecond),
		WithLogger(slogTo(logs)),
		WithLogHandler(func(context.Context, *LogMessageParams) {
			if closed.Load() {
				afterClose.Add(1)
			}
			<-block
		}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	before := heapNow()
	// What the client holds for callbacks that have not run is what notifBytes counts; its
	// peak is sampled while the call runs.
	var peak atomic.Int64
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(100 * time.Microsecond)
		defer tick.Stop()
		for {
			if n := c.notifBytes.Load(); n > peak.Load() {
				peak.Store(n)
			}
			select {
			case <-stopSampling:
				return
			case <-tick.C:
			}
		}
	}()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = c.CallTool(ctx, "chatty", nil)
	}()
	require.True(t, waitFor(10*time.Second, func() bool { return strings.Contains(logs.String(), "dropping notifications") }), "no notification was dropped")
	// The heap is the whole process's, so it is measured once nothing but the client's queue
	// can hold the notifications: the client has read the call's whole stream (open since
	// the drop above) and closed its body, so the server, the sockets and the client's reader
	// hold none of them.
	require.True(t, waitFor(30*time.Second, func() bool { return bodies.open.Load() == 0 }), "the client never finished reading the tool's stream")
	require.LessOrEqual(t, c.notifBytes.Load(), int64(1<<20), "bytes of notifications queued, over the budget of 1 MiB")
	close(stopSampling)
	<-sampled
	// A notification is counted before it is checked against the budget: the count may pass
	// the budget by one notification, never more.
	require.Positive(t, peak.Load(), "no notification was ever queued: the sampling saw nothing")
	require.LessOrEqual(t, peak.Load(), int64(1<<20+len(filler)+1<<10), "bytes of notifications queued at the peak, over the budget of 1 MiB")
	// What the queue holds is the decoded params, about the bytes the budget counts; the rest
	// is the client's session and pooled buffers.
	checkGrowth(t, "12.5 MiB of notifications, 1 MiB budget", before, 2<<20)
	cancel()
	<-done
	closeClient(t, c)
	closed.Store(true)
	close(block) // the callback running at Close ends; no other may start
	c.bg.Wait()
	require.Zero(t, afterClose.Load(), "callbacks started after Close returned")
}

// bodyTracker is a client transport that counts the response bodies it returned that are
// still open.
type bodyTracker struct {
	rt   http.RoundTripper
	open atomic.Int32
}

// RoundTrip implements http.RoundTripper.
func (b *bodyTracker) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := b.rt.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	b.open.Add(1)
	resp.Body = &trackedBody{ReadCloser: resp.Body, open: &b.open}
	return resp, nil
}

// trackedBody is a response body that counts itself closed once.
type trackedBody struct {
	io.ReadCloser
	once sync.Once
	open *atomic.Int32
}

// Close implements io.Closer.
func (b *trackedBody) Close() error {
	b.once.Do(func() { b.open.Add(-1) })
	return b.ReadCloser.Close()
}

// A server that ends the standalone stream at once with retry: 0 does not get a reconnect
// storm: reconnections wait at least the floor, and longer while they keep ending quickly.
func TestClientReconnectFloor(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var gets []time.Time
	f := newFakeServer(t, &fakeServer{onGet: func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		gets = append(gets, time.Now())
		n := len(gets)
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "retry: 0\nid: 0_%d\ndata: \n\n", n) // a new event id every time
	}})
	c := NewClient(f.hs.URL, WithEra(EraLegacy), WithStandaloneStream())
	defer closeClient(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, c.Connect(ctx))
	require.True(t, waitFor(15*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return len(gets) >= 4 }), "the client did not reconnect")
	mu.Lock()
	defer mu.Unlock()
	for i := 1; i < len(gets); i++ {
		if gap := gets[i].Sub(gets[i-1]); gap < minReconnectDelay {
			require.Fail(t, fmt.Sprintf("reconnection %d came %v after the previous one, under the floor of %v", i, gap, minReconnectDelay))
		}
	}
	require.Falsef(t, gets[3].Sub(gets[2]) < 2*minReconnectDelay, "no backoff: %v between the third and fourth reconnections", gets[3].Sub(gets[2]))
}

// The drain of a finished response stream counts every byte it reads, comment lines
// included: a server that follows the response with endless comments is cut off at the limit.
func TestClientDrainCountsComments(t *testing.T) {
	t.Parallel()
	var written atomic.Int64
	finished := make(chan struct{})
	f := newFakeServer(t, &fakeServer{onPost: func(w http.ResponseWriter, r *http.Request, m *wireMessage) {
		defer close(finished)
		w.Header().Set("Content-Type", "text/event-stream")
		res := encodeResponse(m.ID, json.RawMessage(`{"content":[]}`), nil)
		fmt.Fprintf(w, "id: 1_1\ndata: %s\n\n", res)
		w.(http.Flusher).Flush()
		line := []byte(": " + strings.Repeat("c", 1<<10) + "\n")
		for written.Load() < 256<<20 {
			n, err := w.Write(line)
			written.Add(int64(n))
			if err != nil {
				return
			}
		}
	}})
	c := NewClient(f.hs.URL, WithEra(EraLegacy), WithDrainLimits(64<<10, time.Minute))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := c.CallTool(ctx, "any", nil); err != nil {
		require.NoError(t, err)
	}
	select {
	case <-finished:
	case <-ctx.Done():
		require.Fail(t, "the client never cut the endless stream off")
	}
	closeClient(t, c)
	// The limit, plus what the kernel's buffers and the reader's held when it stopped.
	if n := written.Load(); n > 16<<20 {
		require.Fail(t, fmt.Sprintf("the client read %d MiB of comments past the response, with a drain limit of 64 KiB", n>>20))
	}
}

// A session ID with characters the transport does not allow fails initialization.
func TestClientRejectsBadSessionID(t *testing.T) {
	t.Parallel()
	for _, id := range []string{"has space", "caf\u00e9", strings.Repeat("x", maxSessionIDLength+1)} {
		f := newFakeServer(t, &fakeServer{sessionID: id})
		c := NewClient(f.hs.URL, WithEra(EraLegacy))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := c.Connect(ctx)
		cancel()
		closeClient(t, c)
		require.Falsef(t, err == nil || !strings.Contains(err.Error(), "invalid session ID"), "session ID %q: %v", truncate(id, 20), err)
	}
}

// Connect honours its context while another goroutine's initialize hangs.
func TestClientConnectHonoursContext(t *testing.T) {
	t.Parallel()
	started := make(chan struct{}, 1)
	release := make(chan struct{})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case started <- struct{}{}:
		default:
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer hs.Close()
	c := NewClient(hs.URL, WithEra(EraLegacy))
	defer closeClient(t, c)
	first := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		first <- c.Connect(ctx)
	}()
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		require.Fail(t, "the first initialize never reached the server")
	}
	ctx, cancel := context.WithCancel(context.Background())
	second := make(chan error, 1)
	go func() { second <- c.Connect(ctx) }()
	cancel()
	select {
	case err := <-second:
		require.ErrorIs(t, err, context.Canceled, "the second Connect")
	case <-time.After(10 * time.Second):
		require.Fail(t, "the second Connect ignored its context while the first initialize hangs")
	}
	close(release)
	<-first
}

package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// itemsArgs are the arguments of the "items" tool.
type itemsArgs struct {
	N          int  `json:"n"`          // content items (or structured items) in the result
	Progress   int  `json:"progress"`   // progress notifications sent before the result
	Structured bool `json:"structured"` // items in structuredContent instead of content blocks
}

// addItemsTool adds "items", which returns N items after Progress progress notifications.
func addItemsTool(s *Server) {
	s.AddTool(ToolSpec{Name: "items"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		var a itemsArgs
		if err := json.Unmarshal(req.Arguments, &a); err != nil {
			return nil, err
		}
		for i := 1; i <= a.Progress; i++ {
			if err := CallerFrom(ctx).NotifyProgress(ctx, float64(i), float64(a.Progress), fmt.Sprintf("step %d", i)); err != nil {
				return nil, err
			}
		}
		if a.Structured {
			items := make([]string, a.N)
			for i := range items {
				items[i] = fmt.Sprintf("item %d", i)
			}
			sc, err := json.Marshal(map[string]any{"items": items})
			if err != nil {
				return nil, err
			}
			return &CallToolResult{Content: []Content{TextContent(string(sc))}, StructuredContent: sc}, nil
		}
		content := make([]Content, a.N)
		for i := range content {
			content[i] = TextContent(fmt.Sprintf("item %d", i))
		}
		return &CallToolResult{Content: content}, nil
	})
}

// checkItems checks a result of "items".
func checkItems(res *CallToolResult, a itemsArgs) error {
	if res.IsError {
		return fmt.Errorf("tool error: %s", res.Text())
	}
	if a.Structured {
		var sc struct {
			Items []string `json:"items"`
		}
		if err := json.Unmarshal(res.StructuredContent, &sc); err != nil {
			return fmt.Errorf("structuredContent: %v", err)
		}
		if len(sc.Items) != a.N || sc.Items[a.N-1] != fmt.Sprintf("item %d", a.N-1) {
			return fmt.Errorf("got %d structured items, want %d", len(sc.Items), a.N)
		}
		return nil
	}
	if len(res.Content) != a.N || res.Content[a.N-1].Text != fmt.Sprintf("item %d", a.N-1) {
		return fmt.Errorf("got %d content items, want %d", len(res.Content), a.N)
	}
	return nil
}

// TestConcurrentCallsOneSession makes 64 concurrent calls on one session, with results of 1,
// 3, 50 and 500 items (content blocks or structured), in JSON and SSE mode, with and without
// progress notifications before the results. Every call must complete (no deadlock between
// the handlers and the writers of their streams) and get its own result.
func TestConcurrentCallsOneSession(t *testing.T) {
	t.Parallel()
	const calls = 64
	sizes := []int{1, 3, 50, 500}
	for _, mode := range []struct {
		name string
		opts []ServerOption
	}{{"json", nil}, {"sse", []ServerOption{WithSSEResponses()}}} {
		for _, progress := range []int{0, 5} {
			t.Run(fmt.Sprintf("%s/progress=%d", mode.name, progress), func(t *testing.T) {
				ctx := testCtx(t)
				ts := newTestServer(t, mode.opts...)
				addItemsTool(ts.srv)
				c := ts.newClient(t)
				require.NoError(t, c.Connect(ctx))
				sid := c.SessionID()
				var wg sync.WaitGroup
				errs := make(chan error, calls)
				for i := range calls {
					wg.Add(1)
					go func() {
						defer wg.Done()
						a := itemsArgs{N: sizes[i%len(sizes)], Progress: progress, Structured: (i/len(sizes))%2 == 1}
						var seen []float64
						var opts []CallOption
						if progress > 0 {
							opts = append(opts, WithProgress(func(p *ProgressParams) { seen = append(seen, p.Progress) }))
						}
						res, err := c.CallToolJSON(ctx, "items", a, opts...)
						if err != nil {
							errs <- fmt.Errorf("call %d %+v: %w", i, a, err)
							return
						}
						if err := checkItems(res, a); err != nil {
							errs <- fmt.Errorf("call %d %+v: %w", i, a, err)
							return
						}
						if len(seen) != progress {
							errs <- fmt.Errorf("call %d: %d progress callbacks before the result, want %d", i, len(seen), progress)
							return
						}
						for k, p := range seen {
							if p != float64(k+1) {
								errs <- fmt.Errorf("call %d: progress %v out of order", i, seen)
								return
							}
						}
					}()
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					assert.NoError(t, err)
				}
				require.Falsef(t, c.SessionID() != sid, "the calls changed session: %q then %q", sid, c.SessionID())
				ts.srv.mu.RLock()
				n := len(ts.srv.sessions)
				ts.srv.mu.RUnlock()
				require.Falsef(t, n != 1, "server has %d sessions, want the one session all calls shared", n)
			})
		}
	}
}

// TestDeadStreamDoesNotBlockOthers: a client POSTs a call whose stream carries megabytes of
// notifications and never reads the SSE body. The handler is not held up by it, and other
// requests on the same session, the session's GET stream and other sessions are served.
func TestDeadStreamDoesNotBlockOthers(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	ts := newTestServer(t, WithSSEResponses())
	addItemsTool(ts.srv)
	const floods = 6000 // ~7 MB, beyond the loopback socket buffers
	pad := strings.Repeat("x", 1024)
	floodDone := make(chan error, 1)
	ts.srv.AddTool(ToolSpec{Name: "flood"}, func(ctx context.Context, _ *CallToolRequest) (*CallToolResult, error) {
		var err error
		for i := 1; i <= floods && err == nil; i++ {
			err = CallerFrom(ctx).NotifyProgress(ctx, float64(i), floods, pad)
		}
		floodDone <- err
		return &CallToolResult{Content: []Content{TextContent("flooded")}}, err
	})
	sid := ts.initSession(ctx, t)

	// The dead reader: its own connection, body never read until the end of the test.
	deadTr := &http.Transport{}
	t.Cleanup(deadTr.CloseIdleConnections)
	dead := &testServer{url: ts.url, tr: deadTr, hc: &http.Client{Transport: deadTr}}
	deadResp := dead.do(ctx, t, rawReq{session: sid, body: wireToolCallProgress("1", "flood", "", "flood")})
	t.Cleanup(func() { deadResp.Body.Close() })
	require.Falsef(t, deadResp.StatusCode != 200, "flood call: %s", deadResp.Status)
	require.NoError(t, recvWithin(ctx, t, "the flood handler to finish while nobody reads its stream", floodDone), "the flood handler could not queue its notifications")

	// The same session: plain requests and the GET stream.
	get := ts.do(ctx, t, rawReq{method: http.MethodGet, session: sid})
	defer get.Body.Close()
	require.Falsef(t, get.StatusCode != 200, "GET on the session with a dead stream: %s", get.Status)
	getEvents := newSSEReader(get.Body)
	checkPriming(t, mustNext(t, getEvents))
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := ts.doErr(ctx, rawReq{session: sid, body: wireToolCall(fmt.Sprint(100+i), "echo", fmt.Sprintf(`{"i":%d}`, i))})
			if err != nil {
				errs <- err
				return
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || !strings.Contains(string(b), fmt.Sprintf(`{\"i\":%d}`, i)) {
				errs <- fmt.Errorf("echo %d on the dead stream's session: %v %s", i, err, b)
			}
		}()
	}
	// Another session, through the runtime client, with progress.
	c := ts.newClient(t)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := itemsArgs{N: 50, Progress: 3, Structured: i%2 == 0}
			res, err := c.CallToolJSON(ctx, "items", a, WithProgress(func(*ProgressParams) {}))
			if err == nil {
				err = checkItems(res, a)
			}
			if err != nil {
				errs <- fmt.Errorf("other session, call %d: %w", i, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		assert.NoError(t, err)
	}
	if streamDetached(ts, sid, "1") {
		// Not a failure of the server, but then the socket buffers took the whole flood and
		// this test did not have a stuck writer to work around.
		t.Logf("the flood's writer finished: the dead reader's socket buffers held %d notifications", floods)
	}
	// Broadcasts still reach the live GET stream of the session with the dead stream.
	ts.srv.AddTool(ToolSpec{Name: "late"}, func(context.Context, *CallToolRequest) (*CallToolResult, error) { return nil, nil })
	if _, m := getEvents.nextMessage(t); m.Method != "notifications/tools/list_changed" {
		require.Fail(t, fmt.Sprintf("want list_changed on the GET stream, got %+v", m))
	}
}

// TestShutdownLetsInflightCallsFinish: Shutdown refuses new requests at once, and calls in
// flight that finish before its deadline deliver their results.
func TestShutdownLetsInflightCallsFinish(t *testing.T) {
	t.Parallel()
	for _, mode := range []struct {
		name string
		opts []ServerOption
	}{{"json", nil}, {"sse", []ServerOption{WithSSEResponses()}}} {
		t.Run(mode.name, func(t *testing.T) {
			ctx := testCtx(t)
			ts := newTestServer(t, mode.opts...)
			const n = 4
			started := make(chan struct{}, n)
			release := make(chan struct{})
			ts.srv.AddTool(ToolSpec{Name: "slow"}, func(hctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
				started <- struct{}{}
				select {
				case <-release:
				case <-hctx.Done():
					return nil, hctx.Err()
				}
				return &CallToolResult{Content: []Content{TextContent("done " + string(req.Arguments))}}, nil
			})
			c := ts.newClient(t)
			require.NoError(t, c.Connect(ctx))
			sid := c.SessionID()
			results := make(chan error, n)
			for i := range n {
				go func() {
					args := fmt.Sprintf(`{"i":%d}`, i)
					res, err := c.CallTool(ctx, "slow", json.RawMessage(args))
					if err == nil && res.Text() != "done "+args {
						err = fmt.Errorf("call %d got %q", i, res.Text())
					}
					results <- err
				}()
			}
			for range n {
				recvWithin(ctx, t, "the handlers to start", started)
			}
			shut := make(chan error, 1)
			go func() { shut <- ts.srv.Shutdown(ctx) }()
			recvWithin(ctx, t, "Shutdown to begin", ts.srv.closing)

			resp := ts.do(ctx, t, rawReq{session: sid, body: `{"jsonrpc":"2.0","id":"late","method":"ping"}`})
			body := readBody(t, resp)
			require.Falsef(t, resp.StatusCode != http.StatusServiceUnavailable, "a request during shutdown: %s %s, want 503", resp.Status, body)
			select {
			case err := <-shut:
				require.Fail(t, fmt.Sprintf("Shutdown returned (%v) while calls were in flight", err))
			default:
			}
			close(release)
			for range n {
				assert.NoError(t, recvWithin(ctx, t, "the in-flight calls", results), "in-flight call")
			}
			require.NoError(t, recvWithin(ctx, t, "Shutdown to return", shut), "Shutdown")
		})
	}
}

// TestShutdownCancelsCallsAfterDeadline: calls still running when Shutdown's deadline passes
// are cancelled (their handler's context ends), their clients get an error that says the
// server is shutting down, and Shutdown reports the deadline.
func TestShutdownCancelsCallsAfterDeadline(t *testing.T) {
	t.Parallel()
	for _, mode := range []struct {
		name string
		opts []ServerOption
	}{{"json", nil}, {"sse", []ServerOption{WithSSEResponses()}}} {
		t.Run(mode.name, func(t *testing.T) {
			ctx := testCtx(t)
			ts := newTestServer(t, mode.opts...)
			started := make(chan struct{}, 2)
			handlerErr := make(chan error, 2)
			ts.srv.AddTool(ToolSpec{Name: "stuck"}, func(hctx context.Context, _ *CallToolRequest) (*CallToolResult, error) {
				started <- struct{}{}
				select {
				case <-hctx.Done():
					handlerErr <- hctx.Err()
					return nil, hctx.Err()
				case <-ctx.Done():
					handlerErr <- nil
					return nil, ctx.Err()
				}
			})
			sid := ts.initSession(ctx, t)
			type answer struct {
				status int
				body   []byte
				err    error
			}
			answers := make(chan answer, 1)
			go func() {
				resp, err := ts.doErr(ctx, rawReq{session: sid, body: wireToolCall(`"stuck-1"`, "stuck", "")})
				if err != nil {
					answers <- answer{err: err}
					return
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				answers <- answer{status: resp.StatusCode, body: b, err: err}
			}()
			c := ts.newClient(t)
			clientErr := make(chan error, 1)
			go func() {
				_, err := c.CallTool(ctx, "stuck", nil)
				clientErr <- err
			}()
			recvWithin(ctx, t, "the handlers to start", started)
			recvWithin(ctx, t, "the handlers to start", started)

			sctx, cancel := context.WithCancel(ctx)
			cancel() // the deadline has passed
			if err := ts.srv.Shutdown(sctx); !errors.Is(err, context.Canceled) {
				require.Fail(t, fmt.Sprintf("Shutdown after its deadline: %v, want the context's error", err))
			}
			for range 2 {
				if err := recvWithin(ctx, t, "the handlers' contexts to end", handlerErr); !errors.Is(err, context.Canceled) {
					require.Fail(t, fmt.Sprintf("the stuck handler's ctx: %v, want context.Canceled", err))
				}
			}
			var rpcErr *Error
			if err := recvWithin(ctx, t, "the client's call", clientErr); !errors.As(err, &rpcErr) || !strings.Contains(rpcErr.Message, "shutting down") {
				require.Fail(t, fmt.Sprintf("the client's call cancelled by shutdown returned %v; want a JSON-RPC error saying the server is shutting down", err))
			}
			a := recvWithin(ctx, t, "the stuck call's answer", answers)
			require.Falsef(t, a.err != nil, "the stuck call's answer: %v", a.err)
			var m rpcResponse
			if strings.HasPrefix(string(a.body), "{") {
				m = decodeRPC(t, a.body)
			} else {
				evs := readAllEvents(t, a.body)
				for _, ev := range evs {
					if ev.data != "" {
						m = decodeRPC(t, []byte(ev.data))
					}
				}
			}
			require.Falsef(t, m.Error == nil || string(m.ID) != `"stuck-1"` || !strings.Contains(m.Error.Message, "shutting down"), "the call cancelled by shutdown got HTTP %d %q; want a JSON-RPC error for its id saying the server is shutting down", a.status, a.body)
		})
	}
}

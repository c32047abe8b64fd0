package runtime_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/protomcp/protomcp/runtime"
)

// These tests cover the modern era (MCP 2026-07-28) end to end on loopback: a dual-era server
// and the client that probes it with server/discover, multi round-trip requests, cancellation
// by closing the stream, subscriptions/listen, and the fallbacks between eras.

const objSchema = `{"type":"object"}`

// eraTools registers tools written once for both eras: "ask" asks the client two questions,
// samples and lists its roots through the Caller, which the session era serves with requests
// on the response stream and the modern era with InputRequiredResults and replay.
type eraTools struct {
	runs    atomic.Int64 // runs of the "ask" handler
	started chan struct{}
	stopped chan error
}

func newEraServer(t *testing.T, opts ...runtime.ServerOption) (*clientEnv, *eraTools) {
	t.Helper()
	e := newClientEnv(t, opts...)
	tools := &eraTools{started: make(chan struct{}, 1), stopped: make(chan error, 1)}
	e.srv.AddTool(runtime.ToolSpec{Name: "echo", InputSchema: objSchema}, func(ctx context.Context, req *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		c := runtime.CallerFrom(ctx)
		_ = c.Log(ctx, runtime.LevelInfo, "echo", "echoing")
		_ = c.NotifyProgress(ctx, 1, 1, "done")
		return &runtime.CallToolResult{Content: []runtime.Content{runtime.TextContent(string(req.Arguments) + " " + c.ProtocolVersion())}}, nil
	})
	e.srv.AddTool(runtime.ToolSpec{Name: "ask", InputSchema: objSchema}, func(ctx context.Context, req *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		tools.runs.Add(1)
		c := runtime.CallerFrom(ctx)
		name, err := c.Elicit(ctx, &runtime.ElicitParams{Message: "name?", RequestedSchema: json.RawMessage(`{"type":"object","properties":{"v":{"type":"string"}}}`)})
		if err != nil {
			return nil, err
		}
		color, err := c.Elicit(ctx, &runtime.ElicitParams{Message: "color?", RequestedSchema: json.RawMessage(`{"type":"object","properties":{"v":{"type":"string"}}}`)})
		if err != nil {
			return nil, err
		}
		poem, err := c.CreateMessage(ctx, &runtime.CreateMessageParams{MaxTokens: 10, Messages: []runtime.SamplingMessage{{Role: "user", Content: runtime.TextContent("poem about " + fmt.Sprint(color.Content["v"]))}}})
		if err != nil {
			return nil, err
		}
		roots, err := c.ListRoots(ctx)
		if err != nil {
			return nil, err
		}
		text := fmt.Sprintf("%v likes %v: %s (%d roots)", name.Content["v"], color.Content["v"], poem.Content.Text, len(roots.Roots))
		return &runtime.CallToolResult{Content: []runtime.Content{runtime.TextContent(text)}}, nil
	})
	e.srv.AddTool(runtime.ToolSpec{Name: "wait", InputSchema: objSchema}, func(ctx context.Context, req *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		tools.started <- struct{}{}
		<-ctx.Done()
		tools.stopped <- ctx.Err()
		return nil, ctx.Err()
	})
	e.srv.AddPrompt(runtime.Prompt{Name: "greet"}, func(ctx context.Context, args map[string]string) (*runtime.GetPromptResult, error) {
		who, err := runtime.CallerFrom(ctx).Elicit(ctx, &runtime.ElicitParams{Message: "who?"})
		if err != nil {
			return nil, err
		}
		return &runtime.GetPromptResult{Messages: []runtime.PromptMessage{{Role: "user", Content: runtime.TextContent(fmt.Sprint("hello ", who.Content["v"]))}}}, nil
	})
	e.srv.AddResource(runtime.Resource{URI: "res://ünï code", Name: "x"}, func(ctx context.Context, uri string) (*runtime.ReadResourceResult, error) {
		return &runtime.ReadResourceResult{Contents: []runtime.ResourceContents{runtime.TextResource(uri, "text/plain", "contents")}}, nil
	})
	return e, tools
}

// inputHandlers are a client's answers to the server's input requests, counting the calls.
type inputHandlers struct {
	elicits, samples, roots atomic.Int64
}

func (h *inputHandlers) options() []runtime.ClientOption {
	answers := []string{"ada", "green", "grace"}
	return []runtime.ClientOption{
		runtime.WithElicitationHandler(func(ctx context.Context, p *runtime.ElicitParams) (*runtime.ElicitResult, error) {
			n := h.elicits.Add(1)
			v := answers[(n-1)%int64(len(answers))]
			if p.Message == "who?" {
				v = "world"
			}
			return &runtime.ElicitResult{Action: "accept", Content: map[string]any{"v": v}}, nil
		}),
		runtime.WithSamplingHandler(func(ctx context.Context, p *runtime.CreateMessageParams) (*runtime.CreateMessageResult, error) {
			h.samples.Add(1)
			return &runtime.CreateMessageResult{Role: "assistant", Model: "m", Content: runtime.TextContent("roses (" + p.Messages[0].Content.Text + ")")}, nil
		}),
		runtime.WithRootsHandler(func(ctx context.Context) (*runtime.ListRootsResult, error) {
			h.roots.Add(1)
			return &runtime.ListRootsResult{Roots: []runtime.Root{{URI: "file:///a"}, {URI: "file:///b"}}}, nil
		}),
	}
}

// TestModernEraEndToEnd: a default client finds 2026-07-28 with server/discover, keeps no
// session, and every feature works through it, including a handler's questions to the
// client, answered over multi round-trip requests.
func TestModernEraEndToEnd(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	e, tools := newEraServer(t)
	var h inputHandlers
	var logs, progress atomic.Int64
	opts := append(h.options(), runtime.WithEra(runtime.EraAuto), runtime.WithLogHandler(func(context.Context, *runtime.LogMessageParams) { logs.Add(1) }))
	c := e.client(t, opts...)
	ctx := testCtx(t)
	require.NoError(t, c.Connect(ctx))
	require.Equal(t, runtime.ProtocolVersion20260728, c.ProtocolVersion(), "negotiated version")
	require.Empty(t, c.SessionID(), "a modern client's session ID")
	info, caps, _ := c.ServerInfo()
	assert.Equal(t, "client-test", info.Name, "server info from server/discover")
	assert.NotNil(t, caps.Tools, "tools capability from server/discover")

	res, err := c.CallTool(ctx, "echo", json.RawMessage(`{"a":1}`), runtime.WithProgress(func(*runtime.ProgressParams) { progress.Add(1) }))
	require.NoError(t, err)
	assert.Equal(t, `{"a":1} 2026-07-28`, res.Text(), "echo")
	assert.EqualValues(t, 1, progress.Load(), "progress notifications")
	assert.EqualValues(t, 1, logs.Load(), "log notifications (the client's log handler sets a logLevel in _meta)")

	res, err = c.CallTool(ctx, "ask", nil)
	require.NoError(t, err)
	require.Equal(t, "ada likes green: roses (poem about green) (2 roots)", res.Text(), "ask")
	// Four questions, each asked once: the answers of earlier rounds travel in requestState,
	// and the handler ran once per round.
	assert.EqualValues(t, 2, h.elicits.Load(), "elicitation handler runs")
	assert.EqualValues(t, 1, h.samples.Load(), "sampling handler runs")
	assert.EqualValues(t, 1, h.roots.Load(), "roots handler runs")
	assert.EqualValues(t, 5, tools.runs.Load(), "handler runs (four questions, then the answer)")

	p, err := c.GetPrompt(ctx, "greet", nil)
	require.NoError(t, err)
	require.NotEmpty(t, p.Messages, "prompt")
	assert.Equal(t, "hello world", p.Messages[0].Content.Text, "prompt")
	rr, err := c.ReadResource(ctx, "res://ünï code") // Mcp-Name in the Base64 sentinel form
	require.NoError(t, err)
	require.Len(t, rr.Contents, 1, "read")
	require.NotNil(t, rr.Contents[0].Text, "read")
	assert.Equal(t, "contents", *rr.Contents[0].Text, "read")
	_, err = c.ReadResource(ctx, "res://none")
	assert.Equal(t, runtime.CodeInvalidParams, runtime.CodeOf(err), "unknown resource (spec 2026-07-28 changelog): %v", err)
	require.NoError(t, c.Ping(ctx), "Ping (server/discover in the modern era)")
	var n int
	for _, err := range c.Tools(ctx) {
		require.NoError(t, err)
		n++
	}
	assert.Equal(t, 3, n, "tools")
	assert.Empty(t, e.rec.postsOf("initialize"), "initialize requests")
	assert.Len(t, e.rec.postsOf("server/discover"), 2, "server/discover requests (Connect, Ping)")
	e.closeAll(t, c, leaks)
	assert.Empty(t, e.rec.allGets(), "GETs of a modern client")
	assert.Zero(t, e.rec.deletes, "DELETEs of a modern client")
	assert.EqualValues(t, 1, e.dc.Dials.Load(), "connections dialled")
}

// TestModernEraSameHandlerInSessionEra: the handler of TestModernEraEndToEnd answers the same
// in the session era, where its questions are requests on the response stream.
func TestModernEraSameHandlerInSessionEra(t *testing.T) {
	t.Parallel()
	e, tools := newEraServer(t, runtime.WithEra(runtime.EraLegacy))
	var h inputHandlers
	c := e.client(t, append(h.options(), runtime.WithEra(runtime.EraAuto))...)
	ctx := testCtx(t)
	res, err := c.CallTool(ctx, "ask", nil)
	require.NoError(t, err)
	require.Equal(t, "ada likes green: roses (poem about green) (2 roots)", res.Text(), "ask")
	assert.Equal(t, runtime.LatestProtocolVersion, c.ProtocolVersion(), "the version fallen back to")
	assert.NotEmpty(t, c.SessionID(), "the session fallen back to")
	assert.EqualValues(t, 1, tools.runs.Load(), "handler runs in the session era")
	d := e.rec.postsOf("server/discover")
	if assert.Len(t, d, 1, "server/discover requests") {
		assert.Equal(t, http.StatusBadRequest, d[0].Status, "server/discover status")
	}
	assert.Len(t, e.rec.postsOf("initialize"), 1, "initialize requests")
}

// TestSessionEraArgumentsNamingTheMetaKey: a session-era request whose arguments happen to
// contain the modern _meta key stays in the session era.
func TestSessionEraArgumentsNamingTheMetaKey(t *testing.T) {
	t.Parallel()
	e, _ := newEraServer(t)
	c := e.client(t) // the session era
	res, err := c.CallTool(testCtx(t), "echo", json.RawMessage(`{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`))
	require.NoError(t, err)
	assert.True(t, strings.HasSuffix(res.Text(), " 2025-11-25"), "echo: %q, want the session era's version", res.Text())
}

// TestModernEraMissingCapability: a handler's question needs a capability the request does
// not declare: 400 and -32021 with data.requiredCapabilities.
func TestModernEraMissingCapability(t *testing.T) {
	t.Parallel()
	e, _ := newEraServer(t)
	c := e.client(t, runtime.WithEra(runtime.EraAuto))
	_, err := c.CallTool(testCtx(t), "ask", nil)
	var he *runtime.HTTPError
	require.ErrorAs(t, err, &he)
	assert.Equal(t, http.StatusBadRequest, he.StatusCode, "%v", err)
	assert.Equal(t, runtime.CodeMissingClientCapability, runtime.CodeOf(err), "%v", err)
	require.NotNil(t, he.RPC, "%v", err)
	assert.Contains(t, string(he.RPC.Data), `"requiredCapabilities":{"elicitation":{}}`, "error data")
	_, err = c.CallTool(testCtx(t), "echo", nil)
	assert.NoError(t, err, "the server stopped serving")
}

// TestModernEraCancelClosesStream: cancelling a call closes its response stream, which the
// server takes as cancellation (spec 2026-07-28, Cancellation): the handler's context ends,
// and no notifications/cancelled is sent.
func TestModernEraCancelClosesStream(t *testing.T) {
	t.Parallel()
	for _, sse := range []bool{false, true} {
		t.Run(fmt.Sprint("sse=", sse), func(t *testing.T) {
			var opts []runtime.ServerOption
			if sse {
				opts = append(opts, runtime.WithSSEResponses())
			}
			e, tools := newEraServer(t, opts...)
			c := e.client(t, runtime.WithEra(runtime.EraAuto))
			require.NoError(t, c.Connect(testCtx(t)))
			ctx, cancel := context.WithCancel(testCtx(t))
			done := make(chan error, 1)
			go func() {
				_, err := c.CallTool(ctx, "wait", nil)
				done <- err
			}()
			<-tools.started
			cancel()
			require.ErrorIs(t, <-done, context.Canceled, "the call's error")
			require.ErrorIs(t, <-tools.stopped, context.Canceled, "the handler's context")
			require.Empty(t, e.rec.postsOf("notifications/cancelled"), "notifications/cancelled sent in the modern era")
			_, err := c.CallTool(testCtx(t), "echo", nil)
			require.NoError(t, err)
		})
	}
}

// TestModernOnlyServer: WithEra(EraModern) refuses initialize with the versions it speaks,
// answers GET and DELETE with 405, and serves modern clients.
func TestModernOnlyServer(t *testing.T) {
	t.Parallel()
	e, _ := newEraServer(t, runtime.WithEra(runtime.EraModern))
	ctx := testCtx(t)
	err := e.client(t).Connect(ctx) // a session-era client
	assert.Equal(t, runtime.CodeUnsupportedProtocolVersion, runtime.CodeOf(err), "initialize: %v", err)
	assert.ErrorContains(t, err, "2026-07-28", "initialize")
	for _, m := range []string{http.MethodGet, http.MethodDelete} {
		req, _ := http.NewRequestWithContext(ctx, m, e.hs.URL, nil)
		req.Header.Set("Accept", "text/event-stream")
		resp, err := e.dc.Client.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode, "%s: %s", m, resp.Status)
		assert.Equal(t, "POST", resp.Header.Get("Allow"), "%s: Allow", m)
	}
	// A session-era request (no _meta, a 2025-11-25 header) is told which versions to use.
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.hs.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	req.Header.Set("Mcp-Session-Id", "0123")
	resp, err := e.dc.Client.Do(req)
	require.NoError(t, err)
	var m struct {
		Error *runtime.Error `json:"error"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&m)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "a session-era request: %s", resp.Status)
	if assert.NotNil(t, m.Error, "a session-era request's error") {
		assert.Equal(t, runtime.CodeUnsupportedProtocolVersion, m.Error.Code, "a session-era request: %+v", m.Error)
		assert.Contains(t, string(m.Error.Data), `"supported":["2026-07-28"]`, "a session-era request's error data")
	}
	c := e.client(t, runtime.WithEra(runtime.EraAuto))
	res, err := c.CallTool(ctx, "echo", json.RawMessage(`{}`))
	require.NoError(t, err)
	assert.Equal(t, "{} 2026-07-28", res.Text(), "echo")
	var ds runtime.DiscoverResult
	raw, err := c.Call(ctx, "server/discover", nil)
	require.NoError(t, err, "server/discover")
	require.NoError(t, json.Unmarshal(raw, &ds), "server/discover: %s", raw)
	assert.Equal(t, []string{"2026-07-28"}, ds.SupportedVersions, "server/discover")
}

// TestModernClientAgainstSessionOnlyServer: a client pinned to the modern era does not fall
// back, and says why.
func TestModernClientAgainstSessionOnlyServer(t *testing.T) {
	t.Parallel()
	e, _ := newEraServer(t, runtime.WithEra(runtime.EraLegacy))
	err := e.client(t, runtime.WithEra(runtime.EraModern)).Connect(testCtx(t))
	assert.ErrorContains(t, err, "server/discover", "Connect pinned to the modern era")
	c := e.client(t, runtime.WithEra(runtime.EraAuto))
	require.NoError(t, c.Connect(testCtx(t)), "Connect with EraAuto")
	assert.Equal(t, runtime.LatestProtocolVersion, c.ProtocolVersion(), "EraAuto's version")
}

// TestPinnedLatestSessionVersion: WithProtocolVersion naming the latest session-era version
// initializes a session against a server of both eras, with no server/discover first; without
// it the same client speaks 2026-07-28.
func TestPinnedLatestSessionVersion(t *testing.T) {
	t.Parallel()
	e, _ := newEraServer(t)
	ctx := testCtx(t)
	c := e.client(t, runtime.WithEra(runtime.EraAuto), runtime.WithProtocolVersion(runtime.LatestProtocolVersion))
	require.NoError(t, c.Connect(ctx), "Connect pinned to %s", runtime.LatestProtocolVersion)
	assert.Equal(t, runtime.LatestProtocolVersion, c.ProtocolVersion(), "the pinned version")
	assert.NotEmpty(t, c.SessionID(), "the pinned client's session")
	assert.Empty(t, e.rec.postsOf("server/discover"), "server/discover requests of a pinned client")
	auto := e.client(t, runtime.WithEra(runtime.EraAuto))
	require.NoError(t, auto.Connect(ctx), "Connect unpinned")
	assert.Equal(t, runtime.ProtocolVersion20260728, auto.ProtocolVersion(), "the unpinned client's version")
}

// TestModernListen: subscriptions/listen acknowledges first, then carries the change
// notifications its filter asks for, each with the subscription ID, and ends with its result
// when the server shuts down (spec 2026-07-28, Subscriptions).
func TestModernListen(t *testing.T) {
	t.Parallel()
	e, _ := newEraServer(t)
	ctx := testCtx(t)
	body := `{"jsonrpc":"2.0","id":"sub-1","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true,"resourceSubscriptions":["res://a"]},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.hs.URL, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	resp, err := e.dc.Client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "listen: %s", resp.Status)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"), "listen")
	sc := bufio.NewScanner(resp.Body)
	next := func() map[string]any {
		t.Helper()
		for sc.Scan() {
			line := sc.Text()
			data, ok := strings.CutPrefix(line, "data: ")
			if !ok || data == "" {
				continue
			}
			var m map[string]any
			require.NoErrorf(t, json.Unmarshal([]byte(data), &m), "event %q", data)
			return m
		}
		require.Fail(t, fmt.Sprintf("the listen stream ended: %v", sc.Err()))
		return nil
	}
	subID := func(m map[string]any) any {
		var meta map[string]any
		if p, ok := m["params"].(map[string]any); ok {
			meta, _ = p["_meta"].(map[string]any)
		} else if r, ok := m["result"].(map[string]any); ok {
			meta, _ = r["_meta"].(map[string]any)
		}
		return meta["io.modelcontextprotocol/subscriptionId"]
	}
	ack := next()
	require.Equal(t, "notifications/subscriptions/acknowledged", ack["method"], "first event: %v", ack)
	require.Equal(t, "sub-1", subID(ack), "first event's subscription: %v", ack)
	e.srv.NotifyResourceUpdated("res://other") // not asked for
	e.srv.AddTool(runtime.ToolSpec{Name: "late", InputSchema: objSchema}, func(context.Context, *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		return &runtime.CallToolResult{}, nil
	})
	m := next()
	require.Equal(t, "notifications/tools/list_changed", m["method"], "event after AddTool: %v", m)
	require.Equal(t, "sub-1", subID(m), "subscription of tools/list_changed: %v", m)
	e.srv.NotifyResourceUpdated("res://a")
	m = next()
	require.Equal(t, "notifications/resources/updated", m["method"], "event after NotifyResourceUpdated: %v", m)
	require.Equal(t, "res://a", m["params"].(map[string]any)["uri"], "resources/updated: %v", m)
	go e.shutdown()
	m = next()
	require.Equal(t, "sub-1", m["id"], "last event, want the listen result: %v", m)
	require.Equal(t, "sub-1", subID(m), "the listen result's subscription: %v", m)
	require.Equal(t, "complete", m["result"].(map[string]any)["resultType"], "the listen result: %v", m)
}

// TestStdioProbeFallsBack: over stdio (whose modern binding is not implemented) a dual-era
// client's server/discover probe gets a session-era error, not a modern one, so that it falls
// back to initialize (spec 2026-07-28, stdio, Backward Compatibility), which then works.
func TestStdioProbeFallsBack(t *testing.T) {
	t.Parallel()
	srv := newStdioServer()
	r := newRawStdio(srv)
	r.send(t, `{"jsonrpc":"2.0","id":"probe","method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	m := r.next(t)
	e, _ := m["error"].(map[string]any)
	require.Falsef(t, e == nil, "server/discover over stdio: %v, want an error", m)
	if code := e["code"].(float64); code <= -32020 && code >= -32099 {
		require.Fail(t, fmt.Sprintf("server/discover over stdio: modern error %v, want one a dual-era client falls back on", m))
	}
	r.initialize(t)
	r.send(t, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"ok"}}}`)
	if m := r.next(t); m["result"] == nil {
		require.Fail(t, fmt.Sprintf("echo after the fallback: %v", m))
	}
	r.in.Close()
	<-r.done
	for range r.lines {
	}
}

// TestModernEraStandaloneStream: WithStandaloneStream opens subscriptions/listen on a modern
// server, and its change notifications reach the notification handler.
func TestModernEraStandaloneStream(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	e, _ := newEraServer(t)
	got := make(chan string, 16)
	c := e.client(t, runtime.WithEra(runtime.EraAuto), runtime.WithStandaloneStream(), runtime.WithNotificationHandler(func(_ context.Context, method string, params json.RawMessage) {
		got <- method
	}))
	require.NoError(t, c.Connect(testCtx(t)))
	require.Equal(t, runtime.ProtocolVersion20260728, c.ProtocolVersion(), "negotiated version")
	require.Equal(t, "notifications/subscriptions/acknowledged", <-got, "first notification")
	e.srv.AddPrompt(runtime.Prompt{Name: "late"}, func(context.Context, map[string]string) (*runtime.GetPromptResult, error) {
		return &runtime.GetPromptResult{}, nil
	})
	require.Equal(t, "notifications/prompts/list_changed", <-got, "notification after AddPrompt")
	e.closeAll(t, c, leaks)
}

// TestModernEraReplicasShareRequestStateKey: the rounds of one multi round-trip request may
// reach different replicas (no state stays on a server between rounds), provided they share
// the requestState key; with keys of their own the second round is refused.
func TestModernEraReplicasShareRequestStateKey(t *testing.T) {
	t.Parallel()
	for _, shared := range []bool{true, false} {
		t.Run(fmt.Sprint("shared=", shared), func(t *testing.T) {
			var replicas [2]*clientEnv
			for i := range replicas {
				var opts []runtime.ServerOption
				if shared {
					opts = append(opts, runtime.WithRequestStateKey([]byte("0123456789abcdef0123456789abcdef")))
				}
				replicas[i], _ = newEraServer(t, opts...)
			}
			// A round-robin load balancer in front of the two.
			var next atomic.Int64
			lb := newRecorder(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				replicas[next.Add(1)%2].srv.ServeHTTP(w, r)
			}))
			e := newClientEnv(t)
			e.rec.setHandler(lb)
			var h inputHandlers
			c := e.client(t, append(h.options(), runtime.WithEra(runtime.EraAuto))...)
			res, err := c.CallTool(testCtx(t), "ask", nil)
			if shared {
				require.NoError(t, err, "ask across replicas")
				assert.Equal(t, "ada likes green: roses (poem about green) (2 roots)", res.Text(), "ask across replicas")
				return
			}
			assert.Equal(t, runtime.CodeInvalidParams, runtime.CodeOf(err), "ask across replicas with keys of their own: %v", err)
			assert.ErrorContains(t, err, "invalid requestState", "ask across replicas with keys of their own")
		})
	}
}

// TestModernEraQuestionThatChanges: replay keys a question by its position and params, so a
// question that differs on every run (here, it counts the runs) is asked again each time,
// until the client's bound on rounds stops it: what a handler asks must be deterministic.
func TestModernEraQuestionThatChanges(t *testing.T) {
	t.Parallel()
	e := newClientEnv(t)
	var runs atomic.Int64
	e.srv.AddTool(runtime.ToolSpec{Name: "fickle", InputSchema: objSchema}, func(ctx context.Context, _ *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		n := runs.Add(1)
		if _, err := runtime.CallerFrom(ctx).Elicit(ctx, &runtime.ElicitParams{Message: fmt.Sprint("question number ", n)}); err != nil {
			return nil, err
		}
		return &runtime.CallToolResult{}, nil
	})
	var h inputHandlers
	c := e.client(t, append(h.options(), runtime.WithEra(runtime.EraAuto))...)
	_, err := c.CallTool(testCtx(t), "fickle", nil)
	assert.ErrorContains(t, err, "asked for input 16 times in a row", "the client gives up after 16 rounds")
	assert.EqualValues(t, 17, runs.Load(), "handler runs")
	assert.EqualValues(t, 16, h.elicits.Load(), "answers")
}

// TestModernEraInterceptorsSeeEveryRequest: server/discover and subscriptions/listen, which
// the runtime answers itself, go through the server's interceptors too, which may refuse them
// (an authorization check, say).
func TestModernEraInterceptorsSeeEveryRequest(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []string
	guard := runtime.InterceptorFunc(func(next runtime.CallFunc) runtime.CallFunc {
		return func(ctx context.Context, req *runtime.Request) (*runtime.Response, error) {
			mu.Lock()
			seen = append(seen, req.Method+" "+req.ProtocolVersion)
			mu.Unlock()
			if req.Header.Get("X-Key") != "k" {
				return nil, runtime.NewError(-32001, "missing X-Key")
			}
			return next(ctx, req)
		}
	})
	e, _ := newEraServer(t, runtime.WithInterceptors(guard))
	err := e.client(t, runtime.WithEra(runtime.EraModern)).Connect(testCtx(t))
	require.Equal(t, runtime.Code(-32001), runtime.CodeOf(err), "Connect without the key: %v", err)
	got := make(chan string, 4)
	c := e.client(t, runtime.WithEra(runtime.EraModern), runtime.WithHeader("X-Key", "k"), runtime.WithStandaloneStream(),
		runtime.WithNotificationHandler(func(_ context.Context, method string, _ json.RawMessage) { got <- method }))
	require.NoError(t, c.Connect(testCtx(t)))
	require.Equal(t, "notifications/subscriptions/acknowledged", <-got, "first notification")
	mu.Lock()
	defer mu.Unlock()
	want := []string{"server/discover 2026-07-28", "server/discover 2026-07-28", "subscriptions/listen 2026-07-28"}
	assert.Equal(t, want, seen, "what the interceptor saw")
}

// sqlSchema mirrors region and opts.limit into Mcp-Param-Region and Mcp-Param-Limit.
const sqlSchema = `{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"opts":{"type":"object","properties":{"limit":{"type":"integer","x-mcp-header":"Limit"}}},"query":{"type":"string"}}}`

// TestModernEraParamHeaders: a tool that mirrors parameters into Mcp-Param-* headers (spec
// 2026-07-28, Streamable HTTP, Custom Headers from Tool Parameters). The server checks them
// against the body; the client learns them from tools/list, and after a HeaderMismatch it
// lists the tools and sends the call again, with the headers, Base64-encoded where needed.
func TestModernEraParamHeaders(t *testing.T) {
	t.Parallel()
	e, _ := newEraServer(t)
	e.srv.AddTool(runtime.ToolSpec{Name: "sql", InputSchema: sqlSchema}, func(ctx context.Context, _ *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		h := runtime.CallerFrom(ctx).Header()
		return &runtime.CallToolResult{Content: []runtime.Content{runtime.TextContent(h.Get("Mcp-Param-Region") + " " + h.Get("Mcp-Param-Limit"))}}, nil
	})
	e.srv.AddTool(runtime.ToolSpec{Name: "bad", InputSchema: `{"type":"object","properties":{"xs":{"type":"array","items":{"type":"string","x-mcp-header":"X"}}}}`}, func(context.Context, *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		return &runtime.CallToolResult{}, nil
	})
	c := e.client(t, runtime.WithEra(runtime.EraAuto))
	ctx := testCtx(t)
	args := map[string]any{"region": "Hello, 世界", "opts": map[string]any{"limit": 42}, "query": "select 1"}
	for i := range 2 {
		res, err := c.CallToolJSON(ctx, "sql", args)
		require.NoError(t, err, "call %d", i)
		require.Equal(t, "=?base64?SGVsbG8sIOS4lueVjA==?= 42", res.Text(), "call %d: the headers the tool saw", i)
	}
	var statuses []int
	for _, p := range e.rec.postsOf("tools/call") {
		statuses = append(statuses, p.Status)
	}
	assert.Equal(t, []int{400, 200, 200}, statuses, "tools/call statuses")
	assert.Len(t, e.rec.postsOf("tools/list"), 1, "tools/list requests")
	for tool, err := range c.Tools(ctx) {
		require.NoError(t, err)
		assert.NotEqual(t, "bad", tool.Name, "the client listed a tool whose x-mcp-header is under items")
	}

	// The server's checks, with a raw client.
	post := func(hdr map[string]string, args string) (int, *runtime.Error) {
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sql","arguments":` + args + `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.hs.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", "sql")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := e.dc.Client.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var m struct {
			Error *runtime.Error `json:"error"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m.Error
	}
	for _, tc := range []struct {
		name   string
		hdr    map[string]string
		args   string
		status int
		msg    string
	}{
		{"matching, the integer compared as a number", map[string]string{"Mcp-Param-Region": "eu", "Mcp-Param-Limit": "42.0"}, `{"region":"eu","opts":{"limit":42}}`, 200, ""},
		{"a parameter absent from the body needs no header", nil, `{"query":"q"}`, 200, ""},
		{"missing header", map[string]string{"Mcp-Param-Limit": "42"}, `{"region":"eu","opts":{"limit":42}}`, 400, "missing Mcp-Param-Region header"},
		{"mismatch", map[string]string{"Mcp-Param-Region": "us", "Mcp-Param-Limit": "42"}, `{"region":"eu","opts":{"limit":42}}`, 400, `Mcp-Param-Region header value "us" does not match body value "eu"`},
		{"integer mismatch", map[string]string{"Mcp-Param-Region": "eu", "Mcp-Param-Limit": "43"}, `{"region":"eu","opts":{"limit":42}}`, 400, "Mcp-Param-Limit header value"},
		{"bad Base64", map[string]string{"Mcp-Param-Region": "=?base64?!!?=", "Mcp-Param-Limit": "42"}, `{"region":"eu","opts":{"limit":42}}`, 400, "not valid =?base64?"},
	} {
		status, rpcErr := post(tc.hdr, tc.args)
		require.Equal(t, tc.status, status, "%s: HTTP status (error %v)", tc.name, rpcErr)
		if tc.msg != "" {
			require.NotNil(t, rpcErr, tc.name)
			assert.Equal(t, runtime.CodeHeaderMismatch, rpcErr.Code, "%s: %v", tc.name, rpcErr)
			assert.Contains(t, rpcErr.Message, tc.msg, tc.name)
		}
	}
}

// TestModernEraAuthorization: with a token verifier, a modern request is authenticated like a
// session's, a tool's scopes hold, and a requestState is bound to the principal it was issued
// to (spec 2026-07-28, Multi Round-Trip Requests, Server Requirements): another token's
// retry cannot use its answers.
func TestModernEraAuthorization(t *testing.T) {
	e := newAuthEnv(t)
	e.srv.AddTool(runtime.ToolSpec{Name: "two_questions"}, func(ctx context.Context, _ *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		c := runtime.CallerFrom(ctx)
		a, err := c.Elicit(ctx, &runtime.ElicitParams{Message: "first?"})
		if err != nil {
			return nil, err
		}
		b, err := c.Elicit(ctx, &runtime.ElicitParams{Message: "second?"})
		if err != nil {
			return nil, err
		}
		return &runtime.CallToolResult{Content: []runtime.Content{runtime.TextContent(fmt.Sprint(a.Content["v"], b.Content["v"]))}}, nil
	})
	post := func(token, tool, extra string) (int, map[string]any) {
		t.Helper()
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":{}` + extra + `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}}`
		req, _ := http.NewRequest(http.MethodPost, e.url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", tool)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m
	}
	alice, bob := e.token("alice", "weather:read"), e.token("bob", "weather:read")
	status, _ := post("", "whoami", "")
	require.Equal(t, http.StatusUnauthorized, status, "no token")
	status, _ = post(alice, "set_forecast", "")
	require.Equal(t, http.StatusForbidden, status, "a tool's scope")
	require.Zero(t, e.calls.Load(), "handler runs without the tool's scope")
	// Round 1: the first question; round 2: its answer, the second question and a requestState.
	_, m := post(alice, "two_questions", "")
	first := inputKey(t, m)
	_, m = post(alice, "two_questions", `,"inputResponses":{"`+first+`":{"action":"accept","content":{"v":"a"}}}`)
	second := inputKey(t, m)
	state, _ := m["result"].(map[string]any)["requestState"].(string)
	require.Falsef(t, state == "", "round 2: no requestState: %v", m)
	retry := `,"requestState":"` + state + `","inputResponses":{"` + second + `":{"action":"accept","content":{"v":"b"}}}`
	status, m = post(bob, "two_questions", retry)
	assert.Equal(t, http.StatusBadRequest, status, "bob with alice's requestState: %v", m)
	assert.Contains(t, fmt.Sprint(m["error"]), "another principal", "bob with alice's requestState")
	status, m = post(alice, "two_questions", retry)
	assert.Equal(t, http.StatusOK, status, "alice's round 3: %v", m)
	assert.Contains(t, fmt.Sprint(m["result"]), "text:ab", "alice's round 3")
}

// inputKey returns the key of the one input request of an InputRequiredResult response.
func inputKey(t *testing.T, m map[string]any) string {
	t.Helper()
	res, _ := m["result"].(map[string]any)
	require.Falsef(t, res["resultType"] != "input_required", "want an InputRequiredResult: %v", m)
	reqs, _ := res["inputRequests"].(map[string]any)
	for k := range reqs {
		return k
	}
	require.Fail(t, fmt.Sprintf("no inputRequests: %v", m))
	return ""
}

// TestModernCapabilitiesAreTheRequests: in 2026-07-28 each request declares its client's
// capabilities; the server decodes a repeated declaration once, but what one request's handler
// is given is its own: a handler that changes its copy (a capability filled in, an
// experimental entry added) changes nothing that another client's request sees.
func TestModernCapabilitiesAreTheRequests(t *testing.T) {
	t.Parallel()
	e := newClientEnv(t)
	e.srv.AddTool(runtime.ToolSpec{Name: "caps", InputSchema: objSchema}, func(ctx context.Context, req *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		caps := runtime.CallerFrom(ctx).Capabilities()
		text := fmt.Sprintf("url=%v experimental=%v", caps.Elicitation != nil && caps.Elicitation.URL != nil, caps.Experimental)
		// The handler fills in its copy as it pleases.
		if caps.Elicitation != nil {
			caps.Elicitation.URL = &struct{}{}
		}
		if caps.Experimental != nil {
			caps.Experimental["added"] = true
		}
		return &runtime.CallToolResult{Content: []runtime.Content{runtime.TextContent(text)}}, nil
	})
	accept := func(context.Context, *runtime.ElicitParams) (*runtime.ElicitResult, error) {
		return &runtime.ElicitResult{Action: "accept"}, nil
	}
	for i := range 3 {
		c := e.client(t, runtime.WithEra(runtime.EraModern), runtime.WithElicitationHandler(accept))
		res, err := c.CallTool(testCtx(t), "caps", json.RawMessage(`{}`))
		require.NoError(t, err, "client %d", i)
		assert.Equal(t, "url=false experimental=map[]", res.Text(), "client %d sees its own capabilities", i)
	}
}

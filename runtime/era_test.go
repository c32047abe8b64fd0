package runtime_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

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
	if err := c.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	if v := c.ProtocolVersion(); v != runtime.ProtocolVersion20260728 {
		t.Fatalf("negotiated %q, want %q", v, runtime.ProtocolVersion20260728)
	}
	if id := c.SessionID(); id != "" {
		t.Fatalf("a modern client has session ID %q", id)
	}
	if info, caps, _ := c.ServerInfo(); info.Name != "client-test" || caps.Tools == nil {
		t.Fatalf("server info from server/discover: %+v %+v", info, caps)
	}

	res, err := c.CallTool(ctx, "echo", json.RawMessage(`{"a":1}`), runtime.WithProgress(func(*runtime.ProgressParams) { progress.Add(1) }))
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Text(); got != `{"a":1} 2026-07-28` {
		t.Fatalf("echo = %q", got)
	}
	if progress.Load() != 1 || logs.Load() != 1 {
		t.Fatalf("progress %d, logs %d; want 1 and 1 (the client's log handler sets a logLevel in _meta)", progress.Load(), logs.Load())
	}

	res, err = c.CallTool(ctx, "ask", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := res.Text(), "ada likes green: roses (poem about green) (2 roots)"; got != want {
		t.Fatalf("ask = %q, want %q", got, want)
	}
	// Four questions, each asked once: the answers of earlier rounds travel in requestState,
	// and the handler ran once per round.
	if h.elicits.Load() != 2 || h.samples.Load() != 1 || h.roots.Load() != 1 {
		t.Fatalf("input handlers ran %d/%d/%d times, want 2/1/1", h.elicits.Load(), h.samples.Load(), h.roots.Load())
	}
	if n := tools.runs.Load(); n != 5 {
		t.Fatalf("the handler ran %d times, want 5 (four questions, then the answer)", n)
	}

	p, err := c.GetPrompt(ctx, "greet", nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Messages[0].Content.Text != "hello world" {
		t.Fatalf("prompt: %+v", p)
	}
	rr, err := c.ReadResource(ctx, "res://ünï code") // Mcp-Name in the Base64 sentinel form
	if err != nil {
		t.Fatal(err)
	}
	if len(rr.Contents) != 1 || *rr.Contents[0].Text != "contents" {
		t.Fatalf("read: %+v", rr)
	}
	if _, err := c.ReadResource(ctx, "res://none"); runtime.CodeOf(err) != runtime.CodeInvalidParams {
		t.Fatalf("unknown resource: %v (code %d), want -32602 (spec 2026-07-28 changelog)", err, runtime.CodeOf(err))
	}
	if err := c.Ping(ctx); err != nil {
		t.Fatalf("Ping (server/discover in the modern era): %v", err)
	}
	var n int
	for _, err := range c.Tools(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 3 {
		t.Fatalf("%d tools, want 3", n)
	}
	if len(e.rec.postsOf("initialize")) != 0 || len(e.rec.postsOf("server/discover")) != 2 {
		t.Fatalf("initialize %d times, server/discover %d times; want 0 and 2 (Connect, Ping)", len(e.rec.postsOf("initialize")), len(e.rec.postsOf("server/discover")))
	}
	e.closeAll(t, c, leaks)
	if len(e.rec.allGets()) != 0 || e.rec.deletes != 0 {
		t.Fatalf("a modern client sent %d GETs and %d DELETEs", len(e.rec.allGets()), e.rec.deletes)
	}
	if e.dc.Dials.Load() != 1 {
		t.Fatalf("%d connections dialled, want 1", e.dc.Dials.Load())
	}
}

// TestModernEraSameHandlerInSessionEra: the handler of TestModernEraEndToEnd answers the same
// in the session era, where its questions are requests on the response stream.
func TestModernEraSameHandlerInSessionEra(t *testing.T) {
	e, tools := newEraServer(t, runtime.WithEra(runtime.EraLegacy))
	var h inputHandlers
	c := e.client(t, append(h.options(), runtime.WithEra(runtime.EraAuto))...)
	ctx := testCtx(t)
	res, err := c.CallTool(ctx, "ask", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := res.Text(), "ada likes green: roses (poem about green) (2 roots)"; got != want {
		t.Fatalf("ask = %q, want %q", got, want)
	}
	if v := c.ProtocolVersion(); v != runtime.LatestProtocolVersion || c.SessionID() == "" {
		t.Fatalf("fell back to %q with session %q, want %q with a session", v, c.SessionID(), runtime.LatestProtocolVersion)
	}
	if n := tools.runs.Load(); n != 1 {
		t.Fatalf("the handler ran %d times in the session era, want 1", n)
	}
	d := e.rec.postsOf("server/discover")
	if len(d) != 1 || d[0].Status != http.StatusBadRequest || len(e.rec.postsOf("initialize")) != 1 {
		t.Fatalf("server/discover %+v, initialize %d: want one 400 and one initialize", d, len(e.rec.postsOf("initialize")))
	}
}

// TestSessionEraArgumentsNamingTheMetaKey: a session-era request whose arguments happen to
// contain the modern _meta key stays in the session era.
func TestSessionEraArgumentsNamingTheMetaKey(t *testing.T) {
	e, _ := newEraServer(t)
	c := e.client(t) // the session era
	res, err := c.CallTool(testCtx(t), "echo", json.RawMessage(`{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`))
	if err != nil || !strings.HasSuffix(res.Text(), " 2025-11-25") {
		t.Fatalf("echo: %v %v", res, err)
	}
}

// TestModernEraMissingCapability: a handler's question needs a capability the request does
// not declare: 400 and -32021 with data.requiredCapabilities.
func TestModernEraMissingCapability(t *testing.T) {
	e, _ := newEraServer(t)
	c := e.client(t, runtime.WithEra(runtime.EraAuto))
	_, err := c.CallTool(testCtx(t), "ask", nil)
	var he *runtime.HTTPError
	if !errors.As(err, &he) || he.StatusCode != http.StatusBadRequest || runtime.CodeOf(err) != runtime.CodeMissingClientCapability {
		t.Fatalf("err = %v, want HTTP 400 with -32021", err)
	}
	if !strings.Contains(string(he.RPC.Data), `"requiredCapabilities":{"elicitation":{}}`) {
		t.Fatalf("error data %s", he.RPC.Data)
	}
	if _, err := c.CallTool(testCtx(t), "echo", nil); err != nil {
		t.Fatalf("the server stopped serving: %v", err)
	}
}

// TestModernEraCancelClosesStream: cancelling a call closes its response stream, which the
// server takes as cancellation (spec 2026-07-28, Cancellation): the handler's context ends,
// and no notifications/cancelled is sent.
func TestModernEraCancelClosesStream(t *testing.T) {
	for _, sse := range []bool{false, true} {
		t.Run(fmt.Sprint("sse=", sse), func(t *testing.T) {
			var opts []runtime.ServerOption
			if sse {
				opts = append(opts, runtime.WithSSEResponses())
			}
			e, tools := newEraServer(t, opts...)
			c := e.client(t, runtime.WithEra(runtime.EraAuto))
			if err := c.Connect(testCtx(t)); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(testCtx(t))
			done := make(chan error, 1)
			go func() {
				_, err := c.CallTool(ctx, "wait", nil)
				done <- err
			}()
			<-tools.started
			cancel()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Fatalf("call: %v, want context.Canceled", err)
			}
			if err := <-tools.stopped; !errors.Is(err, context.Canceled) {
				t.Fatalf("handler's context: %v, want context.Canceled", err)
			}
			if n := len(e.rec.postsOf("notifications/cancelled")); n != 0 {
				t.Fatalf("%d notifications/cancelled sent in the modern era", n)
			}
			if _, err := c.CallTool(testCtx(t), "echo", nil); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestModernOnlyServer: WithEra(EraModern) refuses initialize with the versions it speaks,
// answers GET and DELETE with 405, and serves modern clients.
func TestModernOnlyServer(t *testing.T) {
	e, _ := newEraServer(t, runtime.WithEra(runtime.EraModern))
	ctx := testCtx(t)
	err := e.client(t).Connect(ctx) // a session-era client
	if runtime.CodeOf(err) != runtime.CodeUnsupportedProtocolVersion || !strings.Contains(err.Error(), "2026-07-28") {
		t.Fatalf("initialize: %v, want -32022 naming 2026-07-28", err)
	}
	for _, m := range []string{http.MethodGet, http.MethodDelete} {
		req, _ := http.NewRequestWithContext(ctx, m, e.hs.URL, nil)
		req.Header.Set("Accept", "text/event-stream")
		resp, err := e.dc.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "POST" {
			t.Fatalf("%s: %s (Allow %q), want 405 (Allow POST)", m, resp.Status, resp.Header.Get("Allow"))
		}
	}
	// A session-era request (no _meta, a 2025-11-25 header) is told which versions to use.
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.hs.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	req.Header.Set("Mcp-Session-Id", "0123")
	resp, err := e.dc.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Error *runtime.Error `json:"error"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&m)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || m.Error == nil || m.Error.Code != runtime.CodeUnsupportedProtocolVersion || !strings.Contains(string(m.Error.Data), `"supported":["2026-07-28"]`) {
		t.Fatalf("a session-era request: %s %+v, want 400 and -32022 with supported [2026-07-28]", resp.Status, m.Error)
	}
	c := e.client(t, runtime.WithEra(runtime.EraAuto))
	res, err := c.CallTool(ctx, "echo", json.RawMessage(`{}`))
	if err != nil || res.Text() != "{} 2026-07-28" {
		t.Fatalf("echo: %v %v", res, err)
	}
	var ds runtime.DiscoverResult
	raw, err := c.Call(ctx, "server/discover", nil)
	if err == nil {
		err = json.Unmarshal(raw, &ds)
	}
	if err != nil || strings.Join(ds.SupportedVersions, ",") != "2026-07-28" {
		t.Fatalf("server/discover: %+v %v", ds, err)
	}
}

// TestModernClientAgainstSessionOnlyServer: a client pinned to the modern era does not fall
// back, and says why.
func TestModernClientAgainstSessionOnlyServer(t *testing.T) {
	e, _ := newEraServer(t, runtime.WithEra(runtime.EraLegacy))
	err := e.client(t, runtime.WithEra(runtime.EraModern)).Connect(testCtx(t))
	if err == nil || !strings.Contains(err.Error(), "server/discover") {
		t.Fatalf("Connect: %v, want a server/discover error", err)
	}
	c := e.client(t, runtime.WithEra(runtime.EraAuto))
	if err := c.Connect(testCtx(t)); err != nil || c.ProtocolVersion() != runtime.LatestProtocolVersion {
		t.Fatalf("auto: %v %q", err, c.ProtocolVersion())
	}
}

// TestModernListen: subscriptions/listen acknowledges first, then carries the change
// notifications its filter asks for, each with the subscription ID, and ends with its result
// when the server shuts down (spec 2026-07-28, Subscriptions).
func TestModernListen(t *testing.T) {
	e, _ := newEraServer(t)
	ctx := testCtx(t)
	body := `{"jsonrpc":"2.0","id":"sub-1","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true,"resourceSubscriptions":["res://a"]},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.hs.URL, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	resp, err := e.dc.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
		t.Fatalf("listen: %s %s", resp.Status, ct)
	}
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
			if err := json.Unmarshal([]byte(data), &m); err != nil {
				t.Fatalf("event %q: %v", data, err)
			}
			return m
		}
		t.Fatalf("the listen stream ended: %v", sc.Err())
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
	if ack["method"] != "notifications/subscriptions/acknowledged" || subID(ack) != "sub-1" {
		t.Fatalf("first event %v, want the acknowledgement of sub-1", ack)
	}
	e.srv.NotifyResourceUpdated("res://other") // not asked for
	e.srv.AddTool(runtime.ToolSpec{Name: "late", InputSchema: objSchema}, func(context.Context, *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		return &runtime.CallToolResult{}, nil
	})
	if m := next(); m["method"] != "notifications/tools/list_changed" || subID(m) != "sub-1" {
		t.Fatalf("event %v, want tools/list_changed of sub-1", m)
	}
	e.srv.NotifyResourceUpdated("res://a")
	if m := next(); m["method"] != "notifications/resources/updated" || m["params"].(map[string]any)["uri"] != "res://a" {
		t.Fatalf("event %v, want resources/updated of res://a", m)
	}
	go e.shutdown()
	if m := next(); m["id"] != "sub-1" || subID(m) != "sub-1" || m["result"].(map[string]any)["resultType"] != "complete" {
		t.Fatalf("last event %v, want the listen result", m)
	}
}

// TestStdioProbeFallsBack: over stdio (whose modern binding is not implemented) a dual-era
// client's server/discover probe gets a session-era error, not a modern one, so that it falls
// back to initialize (spec 2026-07-28, stdio, Backward Compatibility), which then works.
func TestStdioProbeFallsBack(t *testing.T) {
	srv := newStdioServer()
	r := newRawStdio(srv)
	r.send(t, `{"jsonrpc":"2.0","id":"probe","method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	m := r.next(t)
	e, _ := m["error"].(map[string]any)
	if e == nil {
		t.Fatalf("server/discover over stdio: %v, want an error", m)
	}
	if code := e["code"].(float64); code <= -32020 && code >= -32099 {
		t.Fatalf("server/discover over stdio: modern error %v, want one a dual-era client falls back on", m)
	}
	r.initialize(t)
	r.send(t, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"ok"}}}`)
	if m := r.next(t); m["result"] == nil {
		t.Fatalf("echo after the fallback: %v", m)
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
	if err := c.Connect(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if c.ProtocolVersion() != runtime.ProtocolVersion20260728 {
		t.Fatalf("negotiated %q", c.ProtocolVersion())
	}
	if m := <-got; m != "notifications/subscriptions/acknowledged" {
		t.Fatalf("first notification %q, want the acknowledgement", m)
	}
	e.srv.AddPrompt(runtime.Prompt{Name: "late"}, func(context.Context, map[string]string) (*runtime.GetPromptResult, error) {
		return &runtime.GetPromptResult{}, nil
	})
	if m := <-got; m != "notifications/prompts/list_changed" {
		t.Fatalf("notification %q, want prompts/list_changed", m)
	}
	e.closeAll(t, c, leaks)
}

// TestModernEraReplicasShareRequestStateKey: the rounds of one multi round-trip request may
// reach different replicas (no state stays on a server between rounds), provided they share
// the requestState key; with keys of their own the second round is refused.
func TestModernEraReplicasShareRequestStateKey(t *testing.T) {
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
				if err != nil || res.Text() != "ada likes green: roses (poem about green) (2 roots)" {
					t.Fatalf("ask across replicas: %v %v", res, err)
				}
				return
			}
			if runtime.CodeOf(err) != runtime.CodeInvalidParams || !strings.Contains(err.Error(), "invalid requestState") {
				t.Fatalf("ask across replicas with keys of their own: %v, want -32602 invalid requestState", err)
			}
		})
	}
}

// TestModernEraQuestionThatChanges: replay keys a question by its position and params, so a
// question that differs on every run (here, it counts the runs) is asked again each time,
// until the client's bound on rounds stops it: what a handler asks must be deterministic.
func TestModernEraQuestionThatChanges(t *testing.T) {
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
	if err == nil || !strings.Contains(err.Error(), "asked for input 16 times in a row") {
		t.Fatalf("fickle: %v, want the client to give up after 16 rounds", err)
	}
	if runs.Load() != 17 || h.elicits.Load() != 16 {
		t.Fatalf("%d runs and %d answers, want 17 and 16", runs.Load(), h.elicits.Load())
	}
}

// TestModernEraInterceptorsSeeEveryRequest: server/discover and subscriptions/listen, which
// the runtime answers itself, go through the server's interceptors too, which may refuse them
// (an authorization check, say).
func TestModernEraInterceptorsSeeEveryRequest(t *testing.T) {
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
	if runtime.CodeOf(err) != -32001 {
		t.Fatalf("Connect without the key: %v, want -32001", err)
	}
	got := make(chan string, 4)
	c := e.client(t, runtime.WithEra(runtime.EraModern), runtime.WithHeader("X-Key", "k"), runtime.WithStandaloneStream(),
		runtime.WithNotificationHandler(func(_ context.Context, method string, _ json.RawMessage) { got <- method }))
	if err := c.Connect(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if m := <-got; m != "notifications/subscriptions/acknowledged" {
		t.Fatalf("first notification %q", m)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"server/discover 2026-07-28", "server/discover 2026-07-28", "subscriptions/listen 2026-07-28"}
	if strings.Join(seen, ",") != strings.Join(want, ",") {
		t.Fatalf("the interceptor saw %v, want %v", seen, want)
	}
}

// sqlSchema mirrors region and opts.limit into Mcp-Param-Region and Mcp-Param-Limit.
const sqlSchema = `{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"opts":{"type":"object","properties":{"limit":{"type":"integer","x-mcp-header":"Limit"}}},"query":{"type":"string"}}}`

// TestModernEraParamHeaders: a tool that mirrors parameters into Mcp-Param-* headers (spec
// 2026-07-28, Streamable HTTP, Custom Headers from Tool Parameters). The server checks them
// against the body; the client learns them from tools/list, and after a HeaderMismatch it
// lists the tools and sends the call again, with the headers, Base64-encoded where needed.
func TestModernEraParamHeaders(t *testing.T) {
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
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if got, want := res.Text(), "=?base64?SGVsbG8sIOS4lueVjA==?= 42"; got != want {
			t.Fatalf("call %d: the tool saw headers %q, want %q", i, got, want)
		}
	}
	var statuses []int
	for _, p := range e.rec.postsOf("tools/call") {
		statuses = append(statuses, p.Status)
	}
	if fmt.Sprint(statuses) != "[400 200 200]" || len(e.rec.postsOf("tools/list")) != 1 {
		t.Fatalf("tools/call statuses %v and %d tools/list, want [400 200 200] and 1", statuses, len(e.rec.postsOf("tools/list")))
	}
	for tool, err := range c.Tools(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		if tool.Name == "bad" {
			t.Fatal("the client listed a tool whose x-mcp-header is under items")
		}
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
		if err != nil {
			t.Fatal(err)
		}
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
		if status != tc.status {
			t.Fatalf("%s: HTTP %d (%v), want %d", tc.name, status, rpcErr, tc.status)
		}
		if tc.msg != "" && (rpcErr == nil || rpcErr.Code != runtime.CodeHeaderMismatch || !strings.Contains(rpcErr.Message, tc.msg)) {
			t.Fatalf("%s: %v, want -32020 containing %q", tc.name, rpcErr, tc.msg)
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
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m
	}
	alice, bob := e.token("alice", "weather:read"), e.token("bob", "weather:read")
	if status, _ := post("", "whoami", ""); status != http.StatusUnauthorized {
		t.Fatalf("no token: %d, want 401", status)
	}
	if status, _ := post(alice, "set_forecast", ""); status != http.StatusForbidden || e.calls.Load() != 0 {
		t.Fatalf("a tool's scope: %d (handler ran %d times), want 403 and none", status, e.calls.Load())
	}
	// Round 1: the first question; round 2: its answer, the second question and a requestState.
	_, m := post(alice, "two_questions", "")
	first := inputKey(t, m)
	_, m = post(alice, "two_questions", `,"inputResponses":{"`+first+`":{"action":"accept","content":{"v":"a"}}}`)
	second := inputKey(t, m)
	state, _ := m["result"].(map[string]any)["requestState"].(string)
	if state == "" {
		t.Fatalf("round 2: no requestState: %v", m)
	}
	retry := `,"requestState":"` + state + `","inputResponses":{"` + second + `":{"action":"accept","content":{"v":"b"}}}`
	if status, m := post(bob, "two_questions", retry); status != http.StatusBadRequest || !strings.Contains(fmt.Sprint(m["error"]), "another principal") {
		t.Fatalf("bob with alice's requestState: %d %v, want 400 naming another principal", status, m)
	}
	if status, m := post(alice, "two_questions", retry); status != http.StatusOK || !strings.Contains(fmt.Sprint(m["result"]), "text:ab") {
		t.Fatalf("alice's round 3: %d %v", status, m)
	}
}

// inputKey returns the key of the one input request of an InputRequiredResult response.
func inputKey(t *testing.T, m map[string]any) string {
	t.Helper()
	res, _ := m["result"].(map[string]any)
	if res["resultType"] != "input_required" {
		t.Fatalf("want an InputRequiredResult: %v", m)
	}
	reqs, _ := res["inputRequests"].(map[string]any)
	for k := range reqs {
		return k
	}
	t.Fatalf("no inputRequests: %v", m)
	return ""
}

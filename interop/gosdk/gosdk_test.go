package gosdk

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/protomcp/protomcp/examples/weather"
	"github.com/protomcp/protomcp/gen/weather/v1/weatherv1mcp"
	"github.com/protomcp/protomcp/runtime"
)

const testTimeout = 2 * time.Minute

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// eraRecorder is a server interceptor that records the protocol version and session of every
// request the server serves.
type eraRecorder struct {
	mu   sync.Mutex
	seen map[string]int // "method version session?" -> count
}

func (r *eraRecorder) interceptor() runtime.Interceptor {
	return runtime.InterceptorFunc(func(next runtime.CallFunc) runtime.CallFunc {
		return func(ctx context.Context, req *runtime.Request) (*runtime.Response, error) {
			key := req.Method + " " + req.ProtocolVersion
			if req.SessionID != "" {
				key += " session"
			}
			r.mu.Lock()
			if r.seen == nil {
				r.seen = map[string]int{}
			}
			r.seen[key]++
			r.mu.Unlock()
			return next(ctx, req)
		}
	})
}

func (r *eraRecorder) count(key string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen[key]
}

func (r *eraRecorder) keys() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for k := range r.seen {
		out = append(out, k)
	}
	return out
}

func connectSDK(t *testing.T, url string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "go-sdk-interop", Version: "1"}, opts)
	cs, err := client.Connect(testCtx(t), &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatalf("go-sdk Connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	if v := cs.InitializeResult().ProtocolVersion; v != runtime.ProtocolVersion20260728 {
		t.Fatalf("the go-sdk client negotiated %q, want %q", v, runtime.ProtocolVersion20260728)
	}
	return cs
}

func textOf(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// The go-sdk client, with its default options, against the weather example server: it
// negotiates 2026-07-28 with server/discover and calls every tool statelessly.
func TestGoSDKClientAgainstWeatherServer(t *testing.T) {
	t.Parallel()
	var rec eraRecorder
	srv := runtime.NewServer(runtime.Implementation{Name: "weather", Version: "1"}, runtime.WithInterceptors(rec.interceptor()))
	weatherv1mcp.RegisterWeatherServiceHandler(srv, &weather.Service{})
	hs := httptest.NewServer(srv)
	defer hs.Close()
	defer srv.Shutdown(context.Background())

	cs := connectSDK(t, hs.URL, nil)
	ctx := testCtx(t)
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	args := map[string]any{
		weatherv1mcp.WeatherServiceGetForecastToolName:         map[string]any{"city": "Paris", "days": 2},
		weatherv1mcp.WeatherServiceListAlertsToolName:          map[string]any{"regions": []string{"FR"}},
		weatherv1mcp.WeatherServiceRenderForecastChartToolName: map[string]any{"city": "Paris", "days": 2},
		// The server-streaming rpc: a plain client gets its last message as the result.
		weatherv1mcp.WeatherServiceExportForecastToolName: map[string]any{"city": "Paris", "days": 2},
		// The tool that may run as a task: a plain call gets its result directly.
		weatherv1mcp.WeatherServiceGetClimateReportToolName: map[string]any{"city": "Paris", "years": 1},
	}
	if len(tools.Tools) != len(args) {
		t.Fatalf("%d tools, want %d", len(tools.Tools), len(args))
	}
	for _, tool := range tools.Tools {
		a, ok := args[tool.Name]
		if !ok {
			t.Fatalf("unexpected tool %q", tool.Name)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool.Name, Arguments: a})
		if err != nil {
			t.Fatalf("%s: %v", tool.Name, err)
		}
		if res.IsError || len(res.Content) == 0 {
			t.Fatalf("%s: %+v", tool.Name, res)
		}
	}
	if n := rec.count("tools/call 2026-07-28"); n != len(args) {
		t.Fatalf("the server served %d stateless tools/call, want %d (seen: %v)", n, len(args), rec.keys())
	}
	for _, k := range rec.keys() {
		if strings.HasSuffix(k, " session") {
			t.Fatalf("the server served %q in a session", k)
		}
	}
}

// buildConformanceServer builds the conformance example server (package main) and starts it
// on a free loopback port; it returns the endpoint's URL.
func startConformanceServer(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "conformance-server")
	build := exec.Command("go", "build", "-o", bin, "./examples/conformance/server")
	build.Dir = "../.."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "-addr", "127.0.0.1:0")
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the server's URL: %v", err)
	}
	return strings.TrimSpace(line)
}

// The go-sdk client against the conformance example server: every tool, including those that
// elicit and sample, which the server answers with InputRequiredResults that the go-sdk
// client fulfils and retries.
func TestGoSDKClientAgainstConformanceServer(t *testing.T) {
	t.Parallel()
	url := startConformanceServer(t)
	var mu sync.Mutex
	elicits, samples := 0, 0
	cs := connectSDK(t, url, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			elicits++
			mu.Unlock()
			if b, _ := json.Marshal(req.Params.RequestedSchema); strings.Contains(string(b), "username") {
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"username": "ada", "email": "ada@example.com"}}, nil
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
		},
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			mu.Lock()
			samples++
			mu.Unlock()
			return &mcp.CreateMessageResult{Role: "assistant", Model: "test-model", Content: &mcp.TextContent{Text: "sampled answer"}}, nil
		},
	})
	ctx := testCtx(t)
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	args := map[string]map[string]any{
		"test_sampling":            {"prompt": "what is 2+2?"},
		"test_elicitation":         {"message": "who are you?"},
		"json_schema_2020_12_tool": {"name": "ada", "address": map[string]any{"street": "1 Main St", "city": "London"}, "email": "ada@example.com"},
	}
	want := map[string]string{
		"test_sampling":    "LLM response: sampled answer",
		"test_elicitation": "ada@example.com",
	}
	if len(tools.Tools) < 14 {
		t.Fatalf("%d tools, want the conformance surface's 14", len(tools.Tools))
	}
	for _, tool := range tools.Tools {
		if diagnostic(tool.Name) {
			continue
		}
		a := args[tool.Name]
		if a == nil {
			a = map[string]any{}
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool.Name, Arguments: a})
		if err != nil {
			t.Fatalf("%s: %v", tool.Name, err)
		}
		if res.IsError != (tool.Name == "test_error_handling") {
			t.Fatalf("%s: isError %v: %s", tool.Name, res.IsError, textOf(res))
		}
		if w := want[tool.Name]; w != "" && !strings.Contains(textOf(res), w) {
			t.Fatalf("%s: %q does not contain %q", tool.Name, textOf(res), w)
		}
	}
	if elicits != 3 || samples != 1 {
		t.Fatalf("the client answered %d elicitations and %d samplings, want 3 and 1", elicits, samples)
	}
}

// newSDKServer returns a go-sdk server with a typed tool and a tool that asks the client for
// input with the SDK's own multi round-trip API (answered in the session era by the SDK's
// server-to-client request instead).
func newSDKServer() *mcp.Server {
	server := mcp.NewServer(&mcp.Implementation{Name: "go-sdk-server", Version: "1"}, nil)
	type in struct {
		Name string `json:"name"`
	}
	mcp.AddTool(server, &mcp.Tool{Name: "greet"}, func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello " + a.Name}}}, nil, nil
	})
	server.AddTool(&mcp.Tool{Name: "ask", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if r, ok := req.Params.InputResponses["who"].(*mcp.ElicitResult); ok {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "you are " + r.Content["v"].(string)}}}, nil
		}
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"who": &mcp.ElicitParams{
			Message:         "who are you?",
			RequestedSchema: json.RawMessage(`{"type":"object","properties":{"v":{"type":"string"}}}`),
		}}}, nil
	})
	return server
}

func protomcpClient(t *testing.T, url string) *runtime.Client {
	t.Helper()
	c := runtime.NewClient(url, runtime.WithElicitationHandler(func(context.Context, *runtime.ElicitParams) (*runtime.ElicitResult, error) {
		return &runtime.ElicitResult{Action: "accept", Content: map[string]any{"v": "ada"}}, nil
	}))
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

func callBoth(t *testing.T, c *runtime.Client) {
	t.Helper()
	ctx := testCtx(t)
	res, err := c.CallToolJSON(ctx, "greet", map[string]any{"name": "ada"})
	if err != nil || res.Text() != "hello ada" {
		t.Fatalf("greet: %v %v", res.Text(), err)
	}
	res, err = c.CallToolJSON(ctx, "ask", nil)
	if err != nil || res.Text() != "you are ada" {
		t.Fatalf("ask: %q %v", res.Text(), err)
	}
}

// protomcp's client against a go-sdk server in 2026-07-28 mode (Stateless): it finds the
// modern era with server/discover, keeps no session, and answers the server's input request.
func TestClientAgainstGoSDKStatelessServer(t *testing.T) {
	t.Parallel()
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return newSDKServer() }, &mcp.StreamableHTTPOptions{Stateless: true}))
	defer hs.Close()
	c := protomcpClient(t, hs.URL)
	if err := c.Connect(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if v, sid := c.ProtocolVersion(), c.SessionID(); v != runtime.ProtocolVersion20260728 || sid != "" {
		t.Fatalf("negotiated %q with session %q, want %q and no session", v, sid, runtime.ProtocolVersion20260728)
	}
	if info, _, _ := c.ServerInfo(); info.Name != "go-sdk-server" {
		t.Fatalf("server info %+v", info)
	}
	callBoth(t, c)
}

// protomcp's client against a go-sdk server in its session mode: server/discover fails and the
// client falls back to initialize, 2025-11-25 and a session.
func TestClientAgainstGoSDKSessionServer(t *testing.T) {
	t.Parallel()
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return newSDKServer() }, nil))
	defer hs.Close()
	c := protomcpClient(t, hs.URL)
	if err := c.Connect(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if v, sid := c.ProtocolVersion(), c.SessionID(); v != runtime.ProtocolVersion20251125 || sid == "" {
		t.Fatalf("negotiated %q with session %q, want %q and a session", v, sid, runtime.ProtocolVersion20251125)
	}
	callBoth(t, c)
}

// The go-sdk client with a tools list_changed handler opens subscriptions/listen on connect;
// a tool added on the server reaches the handler through it.
func TestGoSDKClientListensForToolChanges(t *testing.T) {
	t.Parallel()
	srv := runtime.NewServer(runtime.Implementation{Name: "weather", Version: "1"})
	weatherv1mcp.RegisterWeatherServiceHandler(srv, &weather.Service{})
	hs := httptest.NewServer(srv)
	defer hs.Close()
	defer srv.Shutdown(context.Background())
	changed := make(chan struct{}, 4)
	cs := connectSDK(t, hs.URL, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		changed <- struct{}{}
	}})
	srv.AddTool(runtime.ToolSpec{Name: "late", InputSchema: `{"type":"object"}`}, func(context.Context, *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		return &runtime.CallToolResult{Content: []runtime.Content{runtime.TextContent("late")}}, nil
	})
	select {
	case <-changed:
	case <-testCtx(t).Done():
		t.Fatal("the go-sdk client's tools list_changed handler was never called")
	}
	res, err := cs.CallTool(testCtx(t), &mcp.CallToolParams{Name: "late", Arguments: map[string]any{}})
	if err != nil || textOf(res) != "late" {
		t.Fatalf("late: %v %v", res, err)
	}
}

// paramSchema mirrors region into Mcp-Param-Region (spec 2026-07-28, Streamable HTTP, Custom
// Headers from Tool Parameters).
const paramSchema = `{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}},"required":["region"]}`

// Custom headers from tool parameters, both ways: the go-sdk client mirrors region into
// Mcp-Param-Region for our server, which checks it; our client does the same for a go-sdk
// server, which checks it too.
func TestParamHeadersBothWays(t *testing.T) {
	t.Parallel()
	t.Run("go-sdk client", func(t *testing.T) {
		srv := runtime.NewServer(runtime.Implementation{Name: "params", Version: "1"})
		srv.AddTool(runtime.ToolSpec{Name: "where", InputSchema: paramSchema}, func(ctx context.Context, _ *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
			return &runtime.CallToolResult{Content: []runtime.Content{runtime.TextContent(runtime.CallerFrom(ctx).Header().Get("Mcp-Param-Region"))}}, nil
		})
		hs := httptest.NewServer(srv)
		defer hs.Close()
		defer srv.Shutdown(context.Background())
		cs := connectSDK(t, hs.URL, nil)
		ctx := testCtx(t)
		if _, err := cs.ListTools(ctx, nil); err != nil {
			t.Fatal(err)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "where", Arguments: map[string]any{"region": "Zürich"}})
		if err != nil || res.IsError || textOf(res) != "=?base64?WsO8cmljaA==?=" {
			t.Fatalf("where: %v %v", textOf(res), err)
		}
	})
	t.Run("protomcp client", func(t *testing.T) {
		server := mcp.NewServer(&mcp.Implementation{Name: "go-sdk-server", Version: "1"}, nil)
		server.AddTool(&mcp.Tool{Name: "where", InputSchema: json.RawMessage(paramSchema)}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok " + req.Extra.Header.Get("Mcp-Param-Region")}}}, nil
		})
		hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{Stateless: true}))
		defer hs.Close()
		c := protomcpClient(t, hs.URL)
		res, err := c.CallToolJSON(testCtx(t), "where", map[string]any{"region": "Zürich"})
		if err != nil || res.Text() != "ok =?base64?WsO8cmljaA==?=" {
			t.Fatalf("where: %v %v", res.Text(), err)
		}
		if c.ProtocolVersion() != runtime.ProtocolVersion20260728 {
			t.Fatalf("negotiated %q", c.ProtocolVersion())
		}
	})
}

// diagnostic reports whether a tool of the conformance server exists for the conformance
// suite's 2026-07-28 diagnostics (multi round-trip inputs, a missing capability, parameter
// headers, list changes, tasks), which the suite drives with the arguments and answers it expects:
// this test calls the rest, the conformance surface that every client can call.
func diagnostic(name string) bool {
	switch name {
	case "test_missing_capability", "test_streaming_elicitation", "test_logging_tool",
		"test_trigger_tool_change", "test_trigger_prompt_change", "test_param_headers":
		return true
	case "greet", "slow_compute", "failing_job", "protocol_error_job", "confirm_delete", "multi_input", "test_tool_with_task":
		return true // the tasks-* scenarios' fixtures (examples/conformance/server/tasks.go)
	}
	return strings.HasPrefix(name, "test_input_required_result_")
}

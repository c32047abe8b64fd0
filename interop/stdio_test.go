package interop

import (
	"context"
	"encoding/json"
	"log/slog"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/protomcp/protomcp/runtime"
)

// everythingPackage is the official MCP "everything" test server, pinned in ts/package.json.
const everythingPackage = "@modelcontextprotocol/server-everything"

// buildWeatherServer builds examples/weather/server into a temporary directory.
func buildWeatherServer(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "weather-server")
	if out, err := exec.Command("go", "build", "-o", bin, "../examples/weather/server").CombinedOutput(); err != nil {
		t.Fatalf("go build examples/weather/server: %v\n%s", err, out)
	}
	return bin
}

// The TypeScript SDK's Client, over its StdioClientTransport, launches the weather server with
// -stdio, lists its tools and calls every one of them, as over HTTP.
func TestTypeScriptStdioClientAgainstGoServer(t *testing.T) {
	t.Parallel()
	dir := ensureNodeModules(t)
	sum := runClientMJS(t, dir, "--stdio", buildWeatherServer(t), "-stdio")
	if !sum.OK || sum.Error != "" {
		t.Errorf("client.mjs: ok=%v error=%q", sum.OK, sum.Error)
	}
	if sum.Server == nil || sum.Server.Name != "weather" {
		t.Errorf("serverInfo seen by the TS client = %+v", sum.Server)
	}
	if sum.Tools != 5 || strings.Join(sum.ToolNames, ",") != "export_forecast,forecast_chart,get_climate_report,get_forecast,list_alerts" {
		t.Errorf("tools = %d %v, want the 5 weather tools", sum.Tools, sum.ToolNames)
	}
	if strings.Join(sum.Prompts, ",") != "plan_trip" || strings.Join(sum.ResourceTemplates, ",") != "weather://stations/{id}" {
		t.Errorf("prompts %v, resource templates %v; want plan_trip and weather://stations/{id}", sum.Prompts, sum.ResourceTemplates)
	}
	if sum.Calls < 10 || sum.ToolErrors != 3 || sum.ProtocolErrors != 1 {
		t.Errorf("calls=%d toolErrors=%d protocolErrors=%d, want >=10, 3, 1", sum.Calls, sum.ToolErrors, sum.ProtocolErrors)
	}
}

// The Go client launches the official "everything" server (TypeScript) over stdio and calls
// its tools (with progress), reads its resources and templates, and gets its prompts.
func TestGoStdioClientAgainstEverythingServer(t *testing.T) {
	t.Parallel()
	dir := ensureNodeModules(t)
	t.Logf("%s %s", everythingPackage, lockedVersion(t, everythingPackage))
	var stderr syncBuffer
	log := slog.New(slog.NewTextHandler(&stderr, nil))
	cmd := exec.Command(nodePath(t), filepath.Join(dir, "node_modules", everythingPackage, "dist", "index.js"), "stdio")
	c, err := runtime.NewCommandClient(cmd, runtime.WithLogger(log))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	defer func() {
		if err := c.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
		if !strings.Contains(stderr.String(), "Starting default (STDIO) server") {
			t.Errorf("the server's stderr was not logged:\n%s", stderr.String())
		}
	}()

	names := map[string]bool{}
	for tool, err := range c.Tools(ctx) {
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		names[tool.Name] = true
	}
	for _, want := range []string{"echo", "get-sum", "get-structured-content", "trigger-long-running-operation"} {
		if !names[want] {
			t.Errorf("tool %s not listed (have %v)", want, names)
		}
	}

	text := func(name, args string, opts ...runtime.CallOption) *runtime.CallToolResult {
		t.Helper()
		res, err := c.CallTool(ctx, name, json.RawMessage(args), opts...)
		if err != nil || res.IsError {
			t.Fatalf("%s(%s): %+v, %v", name, args, res, err)
		}
		return res
	}
	if got := text("echo", `{"message":"hello over stdio"}`).Text(); !strings.Contains(got, "hello over stdio") {
		t.Errorf("echo: %q", got)
	}
	if got := text("get-sum", `{"a":2,"b":40}`).Text(); !strings.Contains(got, "42") {
		t.Errorf("get-sum: %q", got)
	}
	if res := text("get-structured-content", `{"location":"New York"}`); len(res.StructuredContent) == 0 {
		t.Errorf("get-structured-content: no structuredContent in %+v", res)
	}
	var (
		mu       sync.Mutex
		progress []float64
	)
	text("trigger-long-running-operation", `{"duration":1,"steps":4}`, runtime.WithProgress(func(p *runtime.ProgressParams) {
		mu.Lock()
		progress = append(progress, p.Progress)
		mu.Unlock()
	}))
	mu.Lock()
	if len(progress) != 4 {
		t.Errorf("trigger-long-running-operation: progress %v, want 4 steps", progress)
	}
	mu.Unlock()

	var first string
	for r, err := range c.Resources(ctx) {
		if err != nil {
			t.Fatalf("resources/list: %v", err)
		}
		first = r.URI
		break
	}
	if rr, err := c.ReadResource(ctx, first); err != nil || len(rr.Contents) == 0 {
		t.Errorf("resources/read %s: %+v, %v", first, rr, err)
	}
	templates := 0
	for _, err := range c.ResourceTemplates(ctx) {
		if err != nil {
			t.Fatalf("resources/templates/list: %v", err)
		}
		templates++
	}
	if templates == 0 {
		t.Error("no resource templates listed")
	}
	if rr, err := c.ReadResource(ctx, "demo://resource/dynamic/text/1"); err != nil || len(rr.Contents) == 0 {
		t.Errorf("resources/read of a template's URI: %+v, %v", rr, err)
	}
	if p, err := c.GetPrompt(ctx, "simple-prompt", nil); err != nil || len(p.Messages) == 0 {
		t.Errorf("prompts/get simple-prompt: %+v, %v", p, err)
	}
	if p, err := c.GetPrompt(ctx, "args-prompt", map[string]string{"city": "Paris"}); err != nil || len(p.Messages) == 0 || !strings.Contains(p.Messages[0].Content.Text, "Paris") {
		t.Errorf("prompts/get args-prompt: %+v, %v", p, err)
	}
}

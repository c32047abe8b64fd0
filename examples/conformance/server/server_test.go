package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	conformancev1 "github.com/protomcp/protomcp/gen/conformance/v1"
	"github.com/protomcp/protomcp/gen/conformance/v1/conformancev1mcp"
	mcpv1 "github.com/protomcp/protomcp/gen/mcp/v1"
	"github.com/protomcp/protomcp/runtime"
)

// TestSurface drives the conformance server's whole surface with protomcp's own client over
// loopback HTTP: the same checks as the suite's server scenarios, without Node.
func TestSurface(t *testing.T) {
	for _, era := range []runtime.Era{runtime.EraLegacy, runtime.EraAuto} {
		t.Run(era.String(), func(t *testing.T) { testSurface(t, era) })
	}
}

// testSurface checks the surface with a client of the given era: the session era
// (2025-11-25), or EraAuto, which finds 2026-07-28 with server/discover.
func testSurface(t *testing.T, era runtime.Era) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv := newServer(log)
	mux := http.NewServeMux()
	mux.Handle("/mcp", srv)
	hs := httptest.NewServer(mux)
	defer hs.Close()
	defer func() { _ = srv.Shutdown(context.Background()) }()

	var (
		mu      sync.Mutex
		logs    []string
		elicits []*runtime.ElicitParams
		samples []*runtime.CreateMessageParams
	)
	c := runtime.NewClient(hs.URL+"/mcp",
		runtime.WithEra(era),
		runtime.WithSamplingHandler(func(_ context.Context, p *runtime.CreateMessageParams) (*runtime.CreateMessageResult, error) {
			mu.Lock()
			samples = append(samples, p)
			mu.Unlock()
			return &runtime.CreateMessageResult{Role: "assistant", Content: runtime.TextContent("sampled answer"), Model: "test-model"}, nil
		}),
		runtime.WithElicitationHandler(func(_ context.Context, p *runtime.ElicitParams) (*runtime.ElicitResult, error) {
			mu.Lock()
			elicits = append(elicits, p)
			mu.Unlock()
			if strings.Contains(string(p.RequestedSchema), "username") {
				return &runtime.ElicitResult{Action: "accept", Content: map[string]any{"username": "ada", "email": "ada@example.com"}}, nil
			}
			return &runtime.ElicitResult{Action: "accept"}, nil // defaults filled in by the runtime
		}),
		runtime.WithLogHandler(func(_ context.Context, p *runtime.LogMessageParams) {
			mu.Lock()
			logs = append(logs, p.Data.(string))
			mu.Unlock()
		}),
	)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	defer func() { _ = c.Close(context.Background()) }()
	tc := conformancev1mcp.NewConformanceServiceClient(c)
	if err := c.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	want := runtime.ProtocolVersion20260728
	if era == runtime.EraLegacy {
		want = runtime.LatestProtocolVersion
	}
	if v := c.ProtocolVersion(); v != want {
		t.Fatalf("negotiated %q, want %q", v, want)
	}

	t.Run("tools/list", func(t *testing.T) {
		res, err := c.ListTools(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Tools) != 35 { // 28 of the suite's core scenarios, 7 of its tasks-* ones (tasks.go)
			t.Errorf("got %d tools, want 35", len(res.Tools))
		}
		for _, tool := range res.Tools {
			if tool.Description == "" || len(tool.InputSchema) == 0 {
				t.Errorf("tool %s lacks a description or an input schema", tool.Name)
			}
			if tool.Name == "json_schema_2020_12_tool" {
				var s map[string]any
				if err := json.Unmarshal(tool.InputSchema, &s); err != nil {
					t.Fatal(err)
				}
				if s["$schema"] != "https://json-schema.org/draft/2020-12/schema" || s["$defs"] == nil || s["additionalProperties"] != false ||
					s["allOf"] == nil || s["if"] == nil || s["then"] == nil || s["else"] == nil {
					t.Errorf("json_schema_2020_12_tool's schema was not kept verbatim: %s", tool.InputSchema)
				}
			}
		}
	})

	kinds := func(r *mcpv1.ToolResult) string {
		var out []string
		for _, c := range r.GetContent() {
			switch {
			case c.GetText() != nil:
				out = append(out, "text")
			case c.GetImage() != nil:
				out = append(out, "image:"+c.GetImage().GetMimeType())
			case c.GetAudio() != nil:
				out = append(out, "audio:"+c.GetAudio().GetMimeType())
			case c.GetResource() != nil:
				out = append(out, "resource:"+c.GetResource().GetUri())
			}
		}
		return strings.Join(out, ",")
	}
	textOf := func(r *mcpv1.ToolResult) string { return r.GetContent()[0].GetText().GetText() }

	t.Run("content", func(t *testing.T) {
		for name, call := range map[string]func() (*mcpv1.ToolResult, error){
			"text": func() (*mcpv1.ToolResult, error) {
				return tc.TestSimpleText(ctx, &conformancev1.TestSimpleTextRequest{})
			},
			"image": func() (*mcpv1.ToolResult, error) {
				return tc.TestImageContent(ctx, &conformancev1.TestImageContentRequest{})
			},
			"audio": func() (*mcpv1.ToolResult, error) {
				return tc.TestAudioContent(ctx, &conformancev1.TestAudioContentRequest{})
			},
			"embedded": func() (*mcpv1.ToolResult, error) {
				return tc.TestEmbeddedResource(ctx, &conformancev1.TestEmbeddedResourceRequest{})
			},
			"mixed": func() (*mcpv1.ToolResult, error) {
				return tc.TestMultipleContentTypes(ctx, &conformancev1.TestMultipleContentTypesRequest{})
			},
		} {
			res, err := call()
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			want := map[string]string{
				"text":     "text",
				"image":    "image:image/png",
				"audio":    "audio:audio/wav",
				"embedded": "resource:test://embedded-resource",
				"mixed":    "text,image:image/png,resource:test://embedded-resource",
			}[name]
			if got := kinds(res); got != want {
				t.Errorf("%s: content %s, want %s", name, got, want)
			}
		}
	})

	t.Run("logging", func(t *testing.T) {
		if err := c.SetLogLevel(ctx, runtime.LevelDebug); err != nil {
			t.Fatal(err)
		}
		if _, err := tc.TestToolWithLogging(ctx, &conformancev1.TestToolWithLoggingRequest{}); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(logs) != 3 {
			t.Errorf("got %d log messages before the result, want 3: %q", len(logs), logs)
		}
	})

	t.Run("progress", func(t *testing.T) {
		var got []float64
		_, err := tc.TestToolWithProgress(ctx, &conformancev1.TestToolWithProgressRequest{}, runtime.WithProgress(func(p *runtime.ProgressParams) {
			got = append(got, p.Progress)
		}))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 3 || got[0] != 0 || got[1] != 50 || got[2] != 100 {
			t.Errorf("progress %v, want [0 50 100]", got)
		}
	})

	t.Run("error", func(t *testing.T) {
		_, err := tc.TestErrorHandling(ctx, &conformancev1.TestErrorHandlingRequest{})
		var te *runtime.ToolError
		if !errors.As(err, &te) || te.Result.Text() == "" {
			t.Errorf("got %v, want a tool error with text", err)
		}
	})

	t.Run("sampling", func(t *testing.T) {
		res, err := tc.TestSampling(ctx, &conformancev1.TestSamplingRequest{Prompt: "hello"})
		if err != nil {
			t.Fatal(err)
		}
		if got := textOf(res); got != "LLM response: sampled answer" {
			t.Errorf("result %q", got)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(samples) != 1 || samples[0].MaxTokens != 100 || samples[0].Messages[0].Content.Text != "hello" {
			t.Errorf("sampling request %+v", samples)
		}
	})

	t.Run("elicitation", func(t *testing.T) {
		res, err := tc.TestElicitation(ctx, &conformancev1.TestElicitationRequest{Message: "who are you?"})
		if err != nil {
			t.Fatal(err)
		}
		if got := textOf(res); !strings.Contains(got, "action=accept") || !strings.Contains(got, "ada@example.com") {
			t.Errorf("result %q", got)
		}
		res, err = tc.TestElicitationSep1034Defaults(ctx, &conformancev1.TestElicitationSep1034DefaultsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{`"name":"John Doe"`, `"age":30`, `"score":95.5`, `"status":"active"`, `"verified":true`} {
			if !strings.Contains(textOf(res), want) {
				t.Errorf("result %q lacks the default %s", textOf(res), want)
			}
		}
		if _, err := tc.TestElicitationSep1330Enums(ctx, &conformancev1.TestElicitationSep1330EnumsRequest{}); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		last := elicits[len(elicits)-1]
		mu.Unlock()
		var schema struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal(last.RequestedSchema, &schema); err != nil || len(schema.Properties) != 5 {
			t.Errorf("SEP-1330 schema: %s (%v)", last.RequestedSchema, err)
		}
	})

	// The input-required tools ask in one round (request_state) or two (multi_round), and the
	// prompt asks too: the client answers each round, in either era, and gets the result.
	t.Run("input required", func(t *testing.T) {
		res, err := tc.TestInputRequiredResultMultiRound(ctx, &conformancev1.TestInputRequiredResultMultiRoundRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if got := textOf(res); !strings.HasPrefix(got, "Hello ") {
			t.Errorf("multi_round: got %q", got)
		}
		res, err = tc.TestInputRequiredResultRequestState(ctx, &conformancev1.TestInputRequiredResultRequestStateRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if got := textOf(res); !strings.HasPrefix(got, "state-ok") {
			t.Errorf("request_state: got %q", got)
		}
		p, err := c.GetPrompt(ctx, "test_input_required_result_prompt", nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Messages) != 1 || !strings.HasPrefix(p.Messages[0].Content.Text, "Use this context") {
			t.Errorf("prompt: got %+v", p.Messages)
		}
	})

	t.Run("reconnection", func(t *testing.T) {
		// The server closes the call's stream first; the client resumes it with GET and
		// Last-Event-ID after the retry interval and receives the result there.
		res, err := tc.TestReconnection(ctx, &conformancev1.TestReconnectionRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if got := textOf(res); got != "Reconnection test completed successfully" {
			t.Errorf("result %q", got)
		}
	})

	t.Run("resources", func(t *testing.T) {
		for uri, want := range map[string]string{
			"test://static-text":       "text/plain",
			"test://static-binary":     "image/png",
			"test://watched-resource":  "text/plain",
			"test://template/123/data": "application/json",
		} {
			res, err := c.ReadResource(ctx, uri)
			if err != nil {
				t.Fatalf("%s: %v", uri, err)
			}
			rc := res.Contents[0]
			if rc.URI != uri || rc.MIMEType != want || (rc.Text == nil && rc.Blob == nil) {
				t.Errorf("%s: %+v", uri, rc)
			}
		}
		res, err := c.ReadResource(ctx, "test://template/123/data")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(*res.Contents[0].Text, `"id":"123"`) {
			t.Errorf("template read: %s", *res.Contents[0].Text)
		}
		if era != runtime.EraLegacy {
			return // 2026-07-28 replaced resources/subscribe with subscriptions/listen
		}
		for _, m := range []string{"resources/subscribe", "resources/unsubscribe"} {
			if _, err := c.Call(ctx, m, map[string]string{"uri": "test://watched-resource"}); err != nil {
				t.Errorf("%s: %v", m, err)
			}
		}
	})

	t.Run("prompts", func(t *testing.T) {
		res, err := c.GetPrompt(ctx, "test_prompt_with_arguments", map[string]string{"arg1": "v1", "arg2": "v2"})
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Messages[0].Content.Text; !strings.Contains(got, "v1") || !strings.Contains(got, "v2") {
			t.Errorf("prompt text %q", got)
		}
		res, err = c.GetPrompt(ctx, "test_prompt_with_embedded_resource", map[string]string{"resourceUri": "test://example-resource"})
		if err != nil {
			t.Fatal(err)
		}
		if c := res.Messages[0].Content; c.Type != "resource" || c.Resource.URI != "test://example-resource" {
			t.Errorf("embedded resource prompt: %+v", c)
		}
		res, err = c.GetPrompt(ctx, "test_prompt_with_image", nil)
		if err != nil {
			t.Fatal(err)
		}
		if c := res.Messages[0].Content; c.Type != "image" || c.Data == "" {
			t.Errorf("image prompt: %+v", c)
		}
	})

	t.Run("completion", func(t *testing.T) {
		raw, err := c.Call(ctx, "completion/complete", map[string]any{
			"ref":      map[string]string{"type": "ref/prompt", "name": "test_prompt_with_arguments"},
			"argument": map[string]string{"name": "arg1", "value": "test"},
		})
		if err != nil {
			t.Fatal(err)
		}
		var res struct {
			Completion runtime.Completion `json:"completion"`
		}
		if err := json.Unmarshal(raw, &res); err != nil {
			t.Fatal(err)
		}
		if strings.Join(res.Completion.Values, ",") != "test,testing,testValue1" {
			t.Errorf("completion values %q", res.Completion.Values)
		}
	})
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"

	"github.com/protomcp/protomcp/runtime"
)

// The client scenarios of MCP 2026-07-28 (the suite's request-metadata, sep-2322-*, http-*
// and json-schema-* client scenarios), registered beside the others.
func init() {
	scenarios["request-metadata"] = runRequestMetadata
	scenarios["sep-2322-client-request-state"] = runRequestState
	scenarios["http-custom-headers"] = runListAndCall
	scenarios["http-invalid-tool-headers"] = runListAndCall
	scenarios["http-standard-headers"] = runListAndCall
	scenarios["json-schema-ref-no-deref"] = runListTools
	scenarios["json-schema-2020-12-preservation"] = runSchemaEcho
}

// modernClient is a client of the 2026-07-28 era that declares sampling, elicitation and roots,
// answering each with a fixed value.
func modernClient(url string, log *slog.Logger, opts ...runtime.ClientOption) *runtime.Client {
	opts = append([]runtime.ClientOption{
		runtime.WithEra(runtime.EraModern),
		runtime.WithSamplingHandler(func(_ context.Context, p *runtime.CreateMessageParams) (*runtime.CreateMessageResult, error) {
			return &runtime.CreateMessageResult{Role: "assistant", Content: runtime.TextContent("a sampled answer"), Model: "conformance-client", StopReason: "endTurn"}, nil
		}),
		runtime.WithElicitationHandler(func(context.Context, *runtime.ElicitParams) (*runtime.ElicitResult, error) {
			return &runtime.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
		}),
		runtime.WithRootsHandler(func(context.Context) (*runtime.ListRootsResult, error) {
			return &runtime.ListRootsResult{Roots: []runtime.Root{{URI: "file:///conformance", Name: "conformance"}}}, nil
		}),
	}, opts...)
	return newClient(url, log, opts...)
}

// runRequestMetadata connects in the modern era and lists the tools: every request carries
// _meta's protocolVersion, clientInfo and clientCapabilities and the MCP-Protocol-Version
// header, and a first request refused with UnsupportedProtocolVersionError is retried with a
// version from the error's supported list (spec 2026-07-28, Versioning; SEP-2575).
func runRequestMetadata(ctx context.Context, url string, log *slog.Logger) error {
	c := modernClient(url, log)
	defer closeClient(c, log)
	if err := c.Connect(ctx); err != nil {
		return err
	}
	tools, err := c.ListTools(ctx, "")
	if err != nil {
		return err
	}
	log.Info("listed tools", "count", len(tools.Tools), "version", c.ProtocolVersion())
	return nil
}

// runRequestState calls the mock server's MRTR tools (SEP-2322): the runtime answers each
// InputRequiredResult with the elicitation handler and retries with a new JSON-RPC id,
// echoing requestState exactly when there is one and omitting it when there is none. The
// unrelated tool is called while the first flow is under way: inputResponses and
// requestState belong to one request and never travel with another.
func runRequestState(ctx context.Context, url string, log *slog.Logger) error {
	c := modernClient(url, log, runtime.WithEra(runtime.EraAuto))
	defer closeClient(c, log)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i, name := range []string{"test_mrtr_echo_state", "test_mrtr_unrelated", "test_mrtr_no_state", "test_mrtr_no_result_type"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := c.CallTool(ctx, name, json.RawMessage(`{}`))
			if err != nil {
				errs[i] = fmt.Errorf("%s: %w", name, err)
				return
			}
			log.Info("called", "tool", name, "result", toolText(res))
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// runListTools lists the tools: the runtime keeps each inputSchema as JSON text and never
// dereferences a $ref in it, so a network $ref is never fetched (SEP-2106).
func runListTools(ctx context.Context, url string, log *slog.Logger) error {
	c := modernClient(url, log, runtime.WithEra(runtime.EraAuto))
	defer closeClient(c, log)
	tools, err := c.ListTools(ctx, "")
	if err != nil {
		return err
	}
	log.Info("listed tools", "count", len(tools.Tools))
	return nil
}

// toolCalls is what MCP_CONFORMANCE_CONTEXT names for the http-* scenarios: the calls to make.
type toolCalls struct {
	ToolCalls []struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"toolCalls"`
}

// runListAndCall lists the tools and calls those the scenario's context names, or, without
// any, every tool the runtime kept, with a string for each required string property. The
// runtime mirrors x-mcp-header parameters into Mcp-Param-* headers (Base64 for values a
// header cannot carry as they are, none for null), leaves out tools whose annotations are
// invalid (spec 2026-07-28, Streamable HTTP, Custom Headers from Tool Parameters), and never
// fetches a $ref of a tool's schema.
func runListAndCall(ctx context.Context, url string, log *slog.Logger) error {
	c := modernClient(url, log, runtime.WithEra(runtime.EraAuto))
	defer closeClient(c, log)
	tools, err := c.ListTools(ctx, "")
	if err != nil {
		return err
	}
	var calls toolCalls
	if raw := os.Getenv("MCP_CONFORMANCE_CONTEXT"); raw != "" {
		if err := json.Unmarshal([]byte(raw), &calls); err != nil {
			return fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %w", err)
		}
	}
	if len(calls.ToolCalls) > 0 {
		for _, tc := range calls.ToolCalls {
			res, err := c.CallTool(ctx, tc.Name, tc.Arguments)
			if err != nil {
				return fmt.Errorf("%s: %w", tc.Name, err)
			}
			log.Info("called", "tool", tc.Name, "result", toolText(res))
		}
		return nil
	}
	for _, t := range tools.Tools {
		res, err := c.CallTool(ctx, t.Name, sampleArguments(t.InputSchema))
		if err != nil {
			return fmt.Errorf("%s: %w", t.Name, err)
		}
		log.Info("called", "tool", t.Name, "result", toolText(res))
	}
	return nil
}

// sampleArguments returns arguments for a schema: a string for each required string property.
func sampleArguments(schema json.RawMessage) json.RawMessage {
	var s struct {
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	args := map[string]any{}
	if json.Unmarshal(schema, &s) == nil {
		for _, name := range s.Required {
			if p, ok := s.Properties[name]; ok && p.Type == "string" {
				args[name] = "us-west1"
			}
		}
	}
	b, _ := json.Marshal(args)
	return b
}

// runSchemaEcho lists the tools and sends json_schema_2020_12_tool's inputSchema back through
// the echo tool exactly as the client received it: the runtime keeps a tool's schema as the
// server's JSON text, every keyword included (SEP-1613, SEP-2106).
func runSchemaEcho(ctx context.Context, url string, log *slog.Logger) error {
	c := modernClient(url, log, runtime.WithEra(runtime.EraAuto))
	defer closeClient(c, log)
	tools, err := c.ListTools(ctx, "")
	if err != nil {
		return err
	}
	var schema, echo json.RawMessage
	echoName := ""
	for _, t := range tools.Tools {
		if t.Name == "json_schema_2020_12_tool" {
			schema = t.InputSchema
		} else {
			echoName = t.Name
		}
	}
	if schema == nil || echoName == "" {
		return fmt.Errorf("tools/list lacks json_schema_2020_12_tool or the echo tool")
	}
	echo, _ = json.Marshal(map[string]json.RawMessage{"schema": schema})
	res, err := c.CallTool(ctx, echoName, echo)
	if err != nil {
		return err
	}
	log.Info("echoed", "tool", echoName, "result", toolText(res))
	return nil
}

// toolText is the text of a result's first content block.
func toolText(r *runtime.CallToolResult) string {
	if r == nil || len(r.Content) == 0 {
		return ""
	}
	return r.Content[0].Text
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	conformancev1 "github.com/protomcp/protomcp/gen/conformance/v1"
	mcpv1 "github.com/protomcp/protomcp/gen/mcp/v1"
	"github.com/protomcp/protomcp/runtime"
)

// The suite's diagnostic tools for MCP 2026-07-28 (server scenarios server-stateless and
// input-required-result-*). In the modern era a handler's input calls (Elicit, CreateMessage,
// ListRoots) are answered by replay: a call the client has not answered yet returns
// runtime.ErrInputRequired, which the handler returns, and the runtime answers with an
// InputRequiredResult (spec 2026-07-28, Multi Round-Trip Requests). runtime.WithInputKey names
// each call's key in inputRequests, as the suite expects given names.

// nameSchema is the form of the elicitations that ask for a name.
const nameSchema = `{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`

// askName elicits a name under key, with message.
func askName(ctx context.Context, key, message string) (string, error) {
	res, err := runtime.CallerFrom(ctx).Elicit(runtime.WithInputKey(ctx, key), &runtime.ElicitParams{Message: message, RequestedSchema: json.RawMessage(nameSchema)})
	if err != nil {
		return "", err
	}
	name, _ := res.Content["name"].(string)
	return name, nil
}

// askCapital samples the capital of France under key.
func askCapital(ctx context.Context, key string) (string, error) {
	res, err := runtime.CallerFrom(ctx).CreateMessage(runtime.WithInputKey(ctx, key), &runtime.CreateMessageParams{
		Messages:  []runtime.SamplingMessage{{Role: "user", Content: runtime.TextContent("What is the capital of France?")}},
		MaxTokens: 100,
	})
	if err != nil {
		return "", err
	}
	return res.Content.Text, nil
}

// askConfirm elicits a confirmation under the key confirm.
func askConfirm(ctx context.Context) (bool, error) {
	res, err := runtime.CallerFrom(ctx).Elicit(runtime.WithInputKey(ctx, "confirm"), &runtime.ElicitParams{
		Message:         "Please confirm",
		RequestedSchema: json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`),
	})
	if err != nil {
		return false, err
	}
	ok, _ := res.Content["ok"].(bool)
	return ok, nil
}

// TestMissingCapability needs sampling: a client that did not declare it gets the runtime's
// MissingRequiredClientCapabilityError.
func (*tools) TestMissingCapability(ctx context.Context, _ *conformancev1.TestMissingCapabilityRequest) (*mcpv1.ToolResult, error) {
	answer, err := askCapital(ctx, "capital_question")
	if err != nil {
		return nil, err
	}
	return result(text("LLM response: " + answer)), nil
}

func (*tools) TestStreamingElicitation(ctx context.Context, _ *conformancev1.TestStreamingElicitationRequest) (*mcpv1.ToolResult, error) {
	name, err := askName(ctx, "user_name", "What is your name?")
	if err != nil {
		return nil, err
	}
	return result(text("Hello, " + name + "!")), nil
}

// TestLoggingTool logs at info level; the runtime sends the log only to a client that asked
// for logs (in the modern era, with _meta's logLevel).
func (*tools) TestLoggingTool(ctx context.Context, _ *conformancev1.TestLoggingToolRequest) (*mcpv1.ToolResult, error) {
	if err := runtime.CallerFrom(ctx).Log(ctx, runtime.LevelInfo, "test_logging_tool", "a log message"); err != nil {
		return nil, err
	}
	return result(text("Logging tool executed")), nil
}

// dynamicTool and dynamicPrompt are what test_trigger_tool_change and
// test_trigger_prompt_change add and remove.
const (
	dynamicTool   = "test_dynamic_tool"
	dynamicPrompt = "test_dynamic_prompt"
)

func (t *tools) TestTriggerToolChange(context.Context, *conformancev1.TestTriggerToolChangeRequest) (*mcpv1.ToolResult, error) {
	if t.srv.RemoveTool(dynamicTool) {
		return result(text("removed " + dynamicTool)), nil
	}
	t.srv.AddTool(runtime.ToolSpec{Name: dynamicTool, Description: "Added by test_trigger_tool_change", InputSchema: `{"type":"object"}`},
		func(context.Context, *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
			return &runtime.CallToolResult{Content: []runtime.Content{runtime.TextContent("dynamic")}}, nil
		})
	return result(text("added " + dynamicTool)), nil
}

func (t *tools) TestTriggerPromptChange(context.Context, *conformancev1.TestTriggerPromptChangeRequest) (*mcpv1.ToolResult, error) {
	if t.srv.RemovePrompt(dynamicPrompt) {
		return result(text("removed " + dynamicPrompt)), nil
	}
	t.srv.AddPrompt(runtime.Prompt{Name: dynamicPrompt, Description: "Added by test_trigger_prompt_change"},
		func(context.Context, map[string]string) (*runtime.GetPromptResult, error) {
			return &runtime.GetPromptResult{Messages: []runtime.PromptMessage{{Role: "user", Content: runtime.TextContent("dynamic")}}}, nil
		})
	return result(text("added " + dynamicPrompt)), nil
}

func (*tools) TestInputRequiredResultElicitation(ctx context.Context, _ *conformancev1.TestInputRequiredResultElicitationRequest) (*mcpv1.ToolResult, error) {
	name, err := askName(ctx, "user_name", "What is your name?")
	if err != nil {
		return nil, err
	}
	return result(text("Hello, " + name + "!")), nil
}

func (*tools) TestInputRequiredResultSampling(ctx context.Context, _ *conformancev1.TestInputRequiredResultSamplingRequest) (*mcpv1.ToolResult, error) {
	answer, err := askCapital(ctx, "capital_question")
	if err != nil {
		return nil, err
	}
	return result(text("LLM response: " + answer)), nil
}

func (*tools) TestInputRequiredResultListRoots(ctx context.Context, _ *conformancev1.TestInputRequiredResultListRootsRequest) (*mcpv1.ToolResult, error) {
	res, err := runtime.CallerFrom(ctx).ListRoots(runtime.WithInputKey(ctx, "client_roots"))
	if err != nil {
		return nil, err
	}
	return result(text(describeRoots(res))), nil
}

func describeRoots(res *runtime.ListRootsResult) string {
	uris := make([]string, len(res.Roots))
	for i, r := range res.Roots {
		uris[i] = r.URI
	}
	return fmt.Sprintf("Client roots: %v", uris)
}

// TestInputRequiredResultRequestState completes only when the retry carries the answer: the
// runtime has then verified the requestState it echoed (its HMAC, request and expiry).
func (*tools) TestInputRequiredResultRequestState(ctx context.Context, _ *conformancev1.TestInputRequiredResultRequestStateRequest) (*mcpv1.ToolResult, error) {
	ok, err := askConfirm(ctx)
	if err != nil {
		return nil, err
	}
	return result(text(fmt.Sprintf("state-ok: confirmed=%t", ok))), nil
}

func (*tools) TestInputRequiredResultTamperedState(ctx context.Context, _ *conformancev1.TestInputRequiredResultTamperedStateRequest) (*mcpv1.ToolResult, error) {
	ok, err := askConfirm(ctx)
	if err != nil {
		return nil, err
	}
	return result(text(fmt.Sprintf("state-ok: confirmed=%t", ok))), nil
}

// TestInputRequiredResultMultipleInputs makes all three input calls before it returns, so that
// one InputRequiredResult carries them all.
func (*tools) TestInputRequiredResultMultipleInputs(ctx context.Context, _ *conformancev1.TestInputRequiredResultMultipleInputsRequest) (*mcpv1.ToolResult, error) {
	c := runtime.CallerFrom(ctx)
	name, err1 := askName(ctx, "user_name", "What is your name?")
	greeting, err2 := c.CreateMessage(runtime.WithInputKey(ctx, "greeting"), &runtime.CreateMessageParams{
		Messages:  []runtime.SamplingMessage{{Role: "user", Content: runtime.TextContent("Generate a greeting")}},
		MaxTokens: 50,
	})
	roots, err3 := c.ListRoots(runtime.WithInputKey(ctx, "client_roots"))
	if err := errors.Join(err1, err2, err3); err != nil {
		if errors.Is(err, runtime.ErrInputRequired) {
			return nil, runtime.ErrInputRequired
		}
		return nil, err
	}
	return result(text(fmt.Sprintf("%s, %s; %s", greeting.Content.Text, name, describeRoots(roots)))), nil
}

// TestInputRequiredResultMultiRound asks its second question only once the first is answered:
// two rounds of InputRequiredResult, the second's requestState carrying the first answer.
func (*tools) TestInputRequiredResultMultiRound(ctx context.Context, _ *conformancev1.TestInputRequiredResultMultiRoundRequest) (*mcpv1.ToolResult, error) {
	name, err := askName(ctx, "step1", "Step 1: What is your name?")
	if err != nil {
		return nil, err
	}
	res, err := runtime.CallerFrom(ctx).Elicit(runtime.WithInputKey(ctx, "step2"), &runtime.ElicitParams{
		Message:         "Step 2: What is your favorite color?",
		RequestedSchema: json.RawMessage(`{"type":"object","properties":{"color":{"type":"string"}},"required":["color"]}`),
	})
	if err != nil {
		return nil, err
	}
	color, _ := res.Content["color"].(string)
	return result(text(fmt.Sprintf("Hello %s, your favorite color is %s", name, color))), nil
}

// TestInputRequiredResultCapabilities asks only for what the client declared (spec 2026-07-28,
// Multi Round-Trip Requests: a server must not send input requests for undeclared
// capabilities).
func (*tools) TestInputRequiredResultCapabilities(ctx context.Context, _ *conformancev1.TestInputRequiredResultCapabilitiesRequest) (*mcpv1.ToolResult, error) {
	caps := runtime.CallerFrom(ctx).Capabilities()
	var answers []string
	var errs []error
	if caps.Elicitation != nil {
		name, err := askName(ctx, "user_name", "What is your name?")
		answers, errs = append(answers, "name: "+name), append(errs, err)
	}
	if caps.Sampling != nil {
		answer, err := askCapital(ctx, "capital_question")
		answers, errs = append(answers, "capital: "+answer), append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		if errors.Is(err, runtime.ErrInputRequired) {
			return nil, runtime.ErrInputRequired
		}
		return nil, err
	}
	return result(text(fmt.Sprintf("answers: %v", answers))), nil
}

func (*tools) TestInputRequiredResultPrompt(ctx context.Context, _ *conformancev1.TestInputRequiredResultPromptRequest) (*mcpv1.PromptResult, error) {
	res, err := runtime.CallerFrom(ctx).Elicit(runtime.WithInputKey(ctx, "user_context"), &runtime.ElicitParams{
		Message:         "What context should the prompt use?",
		RequestedSchema: json.RawMessage(`{"type":"object","properties":{"context":{"type":"string"}},"required":["context"]}`),
	})
	if err != nil {
		return nil, err
	}
	c, _ := res.Content["context"].(string)
	return &mcpv1.PromptResult{Messages: []*mcpv1.PromptMessage{userText("Use this context: " + c)}}, nil
}

// paramHeaderSchema is the input schema of test_param_headers: region is mirrored into the
// Mcp-Param-Region header (spec 2026-07-28, Streamable HTTP, Custom Headers from Tool
// Parameters, SEP-2243).
const paramHeaderSchema = `{
  "type": "object",
  "properties": {
    "region": {"type": "string", "description": "Region to query", "x-mcp-header": "Region"},
    "query": {"type": "string", "description": "What to look up"}
  },
  "required": ["region"]
}`

// addParamHeaderTool registers test_param_headers with the raw AddTool: the x-mcp-header
// annotation has no proto option, so a schema generated from a message cannot carry it. The
// runtime checks the Mcp-Param-Region header of every modern call against the body before the
// handler runs (server scenario http-custom-header-server-validation).
func addParamHeaderTool(s *runtime.Server) {
	s.AddTool(runtime.ToolSpec{
		Name:        "test_param_headers",
		Description: "Tool whose region parameter is mirrored into the Mcp-Param-Region header",
		InputSchema: paramHeaderSchema,
	}, func(_ context.Context, req *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		var args struct {
			Region string `json:"region"`
		}
		if err := json.Unmarshal(req.Arguments, &args); err != nil {
			return runtime.ErrorResult("invalid arguments: " + err.Error()), nil
		}
		return &runtime.CallToolResult{Content: []runtime.Content{runtime.TextContent("region " + args.Region)}}, nil
	})
}

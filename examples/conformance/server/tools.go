package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	conformancev1 "github.com/protomcp/protomcp/gen/conformance/v1"
	"github.com/protomcp/protomcp/gen/conformance/v1/conformancev1mcp"
	mcpv1 "github.com/protomcp/protomcp/gen/mcp/v1"
	"github.com/protomcp/protomcp/runtime"
)

// tools implements conformancev1mcp.ConformanceServiceHandler: the tools that the suite's
// server scenarios call, with the names and behaviour its SCENARIOS describe.
type tools struct {
	// reconnectDelay is how long test_reconnection waits, after closing its SSE stream,
	// before it answers.
	reconnectDelay time.Duration
	// srv is the server the tools are registered on: test_trigger_tool_change and
	// test_trigger_prompt_change change its lists.
	srv *runtime.Server
}

var _ conformancev1mcp.ConformanceServiceHandler = (*tools)(nil)

func text(s string) *mcpv1.Content {
	return &mcpv1.Content{Kind: &mcpv1.Content_Text{Text: &mcpv1.TextContent{Text: s}}}
}

func imageBlock() *mcpv1.Content {
	return &mcpv1.Content{Kind: &mcpv1.Content_Image{Image: &mcpv1.ImageContent{Data: pngImage, MimeType: "image/png"}}}
}

func result(content ...*mcpv1.Content) *mcpv1.ToolResult {
	return &mcpv1.ToolResult{Content: content}
}

// sleep waits for d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (*tools) TestSimpleText(context.Context, *conformancev1.TestSimpleTextRequest) (*mcpv1.ToolResult, error) {
	return result(text("This is a simple text response for testing.")), nil
}

func (*tools) TestImageContent(context.Context, *conformancev1.TestImageContentRequest) (*mcpv1.ToolResult, error) {
	return result(imageBlock()), nil
}

func (*tools) TestAudioContent(context.Context, *conformancev1.TestAudioContentRequest) (*mcpv1.ToolResult, error) {
	return result(&mcpv1.Content{Kind: &mcpv1.Content_Audio{Audio: &mcpv1.AudioContent{Data: wavAudio, MimeType: "audio/wav"}}}), nil
}

func embeddedResource() *mcpv1.Content {
	return &mcpv1.Content{Kind: &mcpv1.Content_Resource{Resource: &mcpv1.EmbeddedResource{
		Uri:      "test://embedded-resource",
		MimeType: "text/plain",
		Contents: &mcpv1.EmbeddedResource_Text{Text: "This is an embedded resource content."},
	}}}
}

func (*tools) TestEmbeddedResource(context.Context, *conformancev1.TestEmbeddedResourceRequest) (*mcpv1.ToolResult, error) {
	return result(embeddedResource()), nil
}

func (*tools) TestMultipleContentTypes(context.Context, *conformancev1.TestMultipleContentTypesRequest) (*mcpv1.ToolResult, error) {
	return result(text("Multiple content types test:"), imageBlock(), embeddedResource()), nil
}

func (*tools) TestToolWithLogging(ctx context.Context, _ *conformancev1.TestToolWithLoggingRequest) (*mcpv1.ToolResult, error) {
	msgs := []string{"Tool execution started", "Tool processing data", "Tool execution completed"}
	for i, m := range msgs {
		if i > 0 {
			if err := sleep(ctx, 50*time.Millisecond); err != nil {
				return nil, err
			}
		}
		if err := runtime.CallerFrom(ctx).Log(ctx, runtime.LevelInfo, "test_tool_with_logging", m); err != nil {
			return nil, err
		}
	}
	return result(text("Tool with logging executed successfully")), nil
}

func (*tools) TestToolWithProgress(ctx context.Context, _ *conformancev1.TestToolWithProgressRequest) (*mcpv1.ToolResult, error) {
	for i, p := range []float64{0, 50, 100} {
		if i > 0 {
			if err := sleep(ctx, 50*time.Millisecond); err != nil {
				return nil, err
			}
		}
		// Without a progress token NotifyProgress does nothing, and the tool just runs.
		if err := runtime.CallerFrom(ctx).NotifyProgress(ctx, p, 100, fmt.Sprintf("Completed step %d of 3", i+1)); err != nil {
			return nil, err
		}
	}
	return result(text("Tool with progress executed successfully")), nil
}

// TestErrorHandling returns a plain Go error, which the runtime turns into a tool result with
// isError set and the error's text (an *runtime.Error would be a JSON-RPC error instead).
func (*tools) TestErrorHandling(context.Context, *conformancev1.TestErrorHandlingRequest) (*mcpv1.ToolResult, error) {
	//lint:ignore ST1005 the conformance suite checks this exact text
	return nil, errors.New("This tool intentionally returns an error for testing")
}

func (*tools) TestSampling(ctx context.Context, req *conformancev1.TestSamplingRequest) (*mcpv1.ToolResult, error) {
	res, err := runtime.CallerFrom(ctx).CreateMessage(ctx, &runtime.CreateMessageParams{
		Messages:  []runtime.SamplingMessage{{Role: "user", Content: runtime.TextContent(req.GetPrompt())}},
		MaxTokens: 100,
	})
	if err != nil {
		return nil, err
	}
	answer := res.Content.Text
	if res.Content.Type != "text" {
		answer = "(" + res.Content.Type + " content)"
	}
	return result(text("LLM response: " + answer)), nil
}

// usernameEmailSchema is the form test_elicitation asks for.
const usernameEmailSchema = `{
  "type": "object",
  "properties": {
    "username": {"type": "string", "description": "User's response"},
    "email": {"type": "string", "description": "User's email address"}
  },
  "required": ["username", "email"]
}`

func (*tools) TestElicitation(ctx context.Context, req *conformancev1.TestElicitationRequest) (*mcpv1.ToolResult, error) {
	res, err := runtime.CallerFrom(ctx).Elicit(ctx, &runtime.ElicitParams{Message: req.GetMessage(), RequestedSchema: json.RawMessage(usernameEmailSchema)})
	if err != nil {
		return nil, err
	}
	return result(text("User response: " + describeElicitation(res))), nil
}

// sep1034Schema is a form whose fields all have defaults, one per primitive type (SEP-1034).
const sep1034Schema = `{
  "type": "object",
  "properties": {
    "name": {"type": "string", "description": "User name", "default": "John Doe"},
    "age": {"type": "integer", "description": "User age", "default": 30},
    "score": {"type": "number", "description": "User score", "default": 95.5},
    "status": {"type": "string", "description": "User status", "enum": ["active", "inactive", "pending"], "default": "active"},
    "verified": {"type": "boolean", "description": "Verification status", "default": true}
  }
}`

func (*tools) TestElicitationSep1034Defaults(ctx context.Context, _ *conformancev1.TestElicitationSep1034DefaultsRequest) (*mcpv1.ToolResult, error) {
	res, err := runtime.CallerFrom(ctx).Elicit(ctx, &runtime.ElicitParams{
		Message:         "Please review and update the form fields with defaults",
		RequestedSchema: json.RawMessage(sep1034Schema),
	})
	if err != nil {
		return nil, err
	}
	return result(text("Elicitation completed: " + describeElicitation(res))), nil
}

// sep1330Schema has the five enum shapes of SEP-1330.
const sep1330Schema = `{
  "type": "object",
  "properties": {
    "untitledSingle": {
      "type": "string",
      "description": "Untitled single-select",
      "enum": ["option1", "option2", "option3"]
    },
    "titledSingle": {
      "type": "string",
      "description": "Titled single-select",
      "oneOf": [
        {"const": "value1", "title": "First Option"},
        {"const": "value2", "title": "Second Option"},
        {"const": "value3", "title": "Third Option"}
      ]
    },
    "legacyEnum": {
      "type": "string",
      "description": "Legacy titled enum (enumNames, deprecated)",
      "enum": ["opt1", "opt2", "opt3"],
      "enumNames": ["Option One", "Option Two", "Option Three"]
    },
    "untitledMulti": {
      "type": "array",
      "description": "Untitled multi-select",
      "items": {"type": "string", "enum": ["option1", "option2", "option3"]}
    },
    "titledMulti": {
      "type": "array",
      "description": "Titled multi-select",
      "items": {
        "anyOf": [
          {"const": "value1", "title": "First Choice"},
          {"const": "value2", "title": "Second Choice"},
          {"const": "value3", "title": "Third Choice"}
        ]
      }
    }
  }
}`

func (*tools) TestElicitationSep1330Enums(ctx context.Context, _ *conformancev1.TestElicitationSep1330EnumsRequest) (*mcpv1.ToolResult, error) {
	res, err := runtime.CallerFrom(ctx).Elicit(ctx, &runtime.ElicitParams{
		Message:         "Please pick from each kind of enum",
		RequestedSchema: json.RawMessage(sep1330Schema),
	})
	if err != nil {
		return nil, err
	}
	return result(text("Elicitation completed: " + describeElicitation(res))), nil
}

func describeElicitation(res *runtime.ElicitResult) string {
	content, _ := json.Marshal(res.Content)
	if res.Content == nil {
		content = []byte("{}")
	}
	return fmt.Sprintf("action=%s, content=%s", res.Action, content)
}

// TestReconnection closes the HTTP connection of its SSE stream (the runtime first sends the
// client a retry: interval) and answers only afterwards, so that the result reaches the client
// on the GET stream it resumes with Last-Event-ID.
func (t *tools) TestReconnection(ctx context.Context, _ *conformancev1.TestReconnectionRequest) (*mcpv1.ToolResult, error) {
	if err := runtime.CallerFrom(ctx).CloseSSEStream(); err != nil {
		return nil, err
	}
	if err := sleep(ctx, t.reconnectDelay); err != nil {
		return nil, err
	}
	return result(text("Reconnection test completed successfully")), nil
}

// jsonSchema202012 is the input schema of json_schema_2020_12_tool, which the suite checks is
// listed verbatim: $schema, $defs and additionalProperties (SEP-1613), and $anchor, allOf/anyOf
// and if/then/else (SEP-2106) included.
const jsonSchema202012 = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "$defs": {
    "address": {
      "$anchor": "addressDef",
      "type": "object",
      "properties": {
        "street": {"type": "string"},
        "city": {"type": "string"}
      }
    }
  },
  "properties": {
    "name": {"type": "string"},
    "address": {"$ref": "#/$defs/address"},
    "contactMethod": {"type": "string", "enum": ["phone", "email"]},
    "phone": {"type": "string"},
    "email": {"type": "string"}
  },
  "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
  "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
  "then": {"required": ["phone"]},
  "else": {"required": ["email"]},
  "additionalProperties": false
}`

// addJSONSchemaTool registers json_schema_2020_12_tool with the raw AddTool. It is not in
// conformance.proto because its input schema must be sent verbatim, with a $schema and a
// $defs entry referenced by $ref, an $anchor and composition and conditional keywords, which
// no schema generated from a message produces (the generator inlines non-recursive messages
// and writes no $schema).
func addJSONSchemaTool(s *runtime.Server) {
	s.AddTool(runtime.ToolSpec{
		Name:        "json_schema_2020_12_tool",
		Description: "Tool with JSON Schema 2020-12 features",
		InputSchema: jsonSchema202012,
	}, func(_ context.Context, req *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		var args struct {
			Name    string `json:"name"`
			Address *struct {
				Street string `json:"street"`
				City   string `json:"city"`
			} `json:"address"`
		}
		if len(req.Arguments) > 0 {
			if err := json.Unmarshal(req.Arguments, &args); err != nil {
				return runtime.ErrorResult("invalid arguments: " + err.Error()), nil
			}
		}
		msg := "JSON Schema 2020-12 tool called"
		if args.Name != "" {
			msg += " with name " + args.Name
		}
		if a := args.Address; a != nil {
			msg += fmt.Sprintf(", address %s, %s", a.Street, a.City)
		}
		return &runtime.CallToolResult{Content: []runtime.Content{runtime.TextContent(msg)}}, nil
	})
}

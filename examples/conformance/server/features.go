package main

import (
	"context"
	"fmt"
	"strings"

	conformancev1 "github.com/protomcp/protomcp/gen/conformance/v1"
	"github.com/protomcp/protomcp/gen/conformance/v1/conformancev1mcp"
	mcpv1 "github.com/protomcp/protomcp/gen/mcp/v1"
	"github.com/protomcp/protomcp/runtime"
)

// The resources and prompts of the suite's fixed surface, declared in conformance.proto with
// (mcp.v1.prompt) and (mcp.v1.resource) and registered by RegisterConformanceServiceHandler
// with the tools.

var (
	_ conformancev1mcp.ConformanceServiceTestPromptWithArgumentsCompleter        = (*tools)(nil)
	_ conformancev1mcp.ConformanceServiceTestPromptWithEmbeddedResourceCompleter = (*tools)(nil)
	_ conformancev1mcp.ConformanceServiceTemplateDataCompleter                   = (*tools)(nil)
)

func userText(s string) *mcpv1.PromptMessage {
	return &mcpv1.PromptMessage{Role: mcpv1.Role_ROLE_USER, Content: text(s)}
}

func textContents(s string) *mcpv1.ResourceResult {
	// The URI and MIME type left empty are the resource's: the runtime fills them in.
	return &mcpv1.ResourceResult{Contents: []*mcpv1.EmbeddedResource{{MimeType: "text/plain", Contents: &mcpv1.EmbeddedResource_Text{Text: s}}}}
}

func (*tools) TestSimplePrompt(context.Context, *conformancev1.TestSimplePromptRequest) (*mcpv1.PromptResult, error) {
	return &mcpv1.PromptResult{Messages: []*mcpv1.PromptMessage{userText("This is a simple prompt for testing.")}}, nil
}

func (*tools) TestPromptWithArguments(_ context.Context, req *conformancev1.TestPromptWithArgumentsRequest) (*mcpv1.PromptResult, error) {
	msg := fmt.Sprintf("Prompt with arguments: arg1='%s', arg2='%s'", req.GetArg1(), req.GetArg2())
	return &mcpv1.PromptResult{Messages: []*mcpv1.PromptMessage{userText(msg)}}, nil
}

func (*tools) TestPromptWithEmbeddedResource(_ context.Context, req *conformancev1.TestPromptWithEmbeddedResourceRequest) (*mcpv1.PromptResult, error) {
	res := &mcpv1.EmbeddedResource{Uri: req.GetResourceUri(), MimeType: "text/plain", Contents: &mcpv1.EmbeddedResource_Text{Text: "Embedded resource content for testing."}}
	return &mcpv1.PromptResult{Messages: []*mcpv1.PromptMessage{
		{Role: mcpv1.Role_ROLE_USER, Content: &mcpv1.Content{Kind: &mcpv1.Content_Resource{Resource: res}}},
		userText("Please process the embedded resource above."),
	}}, nil
}

func (*tools) TestPromptWithImage(context.Context, *conformancev1.TestPromptWithImageRequest) (*mcpv1.PromptResult, error) {
	return &mcpv1.PromptResult{Messages: []*mcpv1.PromptMessage{
		{Role: mcpv1.Role_ROLE_USER, Content: imageBlock()},
		userText("Please analyze the image above."),
	}}, nil
}

func (*tools) StaticText(context.Context, *conformancev1.StaticTextRequest) (*mcpv1.ResourceResult, error) {
	return textContents("This is the content of the static text resource."), nil
}

func (*tools) StaticBinary(context.Context, *conformancev1.StaticBinaryRequest) (*mcpv1.ResourceResult, error) {
	return &mcpv1.ResourceResult{Contents: []*mcpv1.EmbeddedResource{{MimeType: "image/png", Contents: &mcpv1.EmbeddedResource_Blob{Blob: pngImage}}}}, nil
}

func (*tools) WatchedResource(context.Context, *conformancev1.WatchedResourceRequest) (*mcpv1.ResourceResult, error) {
	return textContents("Watched resource content"), nil
}

// TemplateData reads test://template/{id}/data: the runtime has matched the URI and decoded
// {id} into the request, and sends the response as JSON.
func (*tools) TemplateData(_ context.Context, req *conformancev1.TemplateDataRequest) (*conformancev1.TemplateDataResponse, error) {
	return &conformancev1.TemplateDataResponse{Id: req.GetId(), TemplateTest: true, Data: "Data for ID: " + req.GetId()}, nil
}

// completionValues are the suggestions offered for each completable argument.
var completionValues = map[string][]string{
	"arg1":        {"paris", "park", "party", "test", "testing", "testValue1"},
	"arg2":        {"blue", "green", "red", "testValue2"},
	"resourceUri": {"test://example-resource", "test://static-text", "test://static-binary"},
	"id":          {"1", "2", "3", "123"},
}

func (*tools) CompleteTestPromptWithArguments(_ context.Context, p *runtime.CompleteParams) (*runtime.Completion, error) {
	return complete(p), nil
}

func (*tools) CompleteTestPromptWithEmbeddedResource(_ context.Context, p *runtime.CompleteParams) (*runtime.Completion, error) {
	return complete(p), nil
}

func (*tools) CompleteTemplateData(_ context.Context, p *runtime.CompleteParams) (*runtime.Completion, error) {
	return complete(p), nil
}

// complete suggests the known values of an argument that start with what the user typed.
func complete(p *runtime.CompleteParams) *runtime.Completion {
	var out []string
	for _, v := range completionValues[p.Argument.Name] {
		if strings.HasPrefix(v, p.Argument.Value) {
			out = append(out, v)
		}
	}
	total := len(out)
	return &runtime.Completion{Values: out, Total: &total}
}

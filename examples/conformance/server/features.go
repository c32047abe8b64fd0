package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/protomcp/protomcp/runtime"
)

// The resources and prompts of the suite's fixed surface. MCP resources and prompts are not
// tools, so they are not declared in conformance.proto: they are added to the server directly.

const templateURI = "test://template/{id}/data"

// addResources adds the fixed resources, the resource template and the subscribable resource.
func addResources(s *runtime.Server) {
	s.AddResource(runtime.Resource{
		URI:         "test://static-text",
		Name:        "Static Text Resource",
		Description: "A static text resource for testing",
		MIMEType:    "text/plain",
	}, func(_ context.Context, uri string) (*runtime.ReadResourceResult, error) {
		return contents(runtime.TextResource(uri, "text/plain", "This is the content of the static text resource.")), nil
	})
	s.AddResource(runtime.Resource{
		URI:         "test://static-binary",
		Name:        "Static Binary Resource",
		Description: "A static binary resource (a PNG image) for testing",
		MIMEType:    "image/png",
	}, func(_ context.Context, uri string) (*runtime.ReadResourceResult, error) {
		return contents(runtime.BlobResource(uri, "image/png", base64.StdEncoding.EncodeToString(pngImage))), nil
	})
	s.AddResource(runtime.Resource{
		URI:         "test://watched-resource",
		Name:        "Watched Resource",
		Description: "A resource clients can subscribe to (resources/subscribe)",
		MIMEType:    "text/plain",
	}, func(_ context.Context, uri string) (*runtime.ReadResourceResult, error) {
		return contents(runtime.TextResource(uri, "text/plain", "Watched resource content")), nil
	})
	s.AddResourceTemplate(runtime.ResourceTemplate{
		URITemplate: templateURI,
		Name:        "Template Resource",
		Description: "A resource template with an {id} parameter",
		MIMEType:    "application/json",
	}, func(_ context.Context, uri string) (*runtime.ReadResourceResult, error) {
		id, ok := templateID(uri)
		if !ok {
			return nil, runtime.Errorf(runtime.CodeInvalidParams, "%q does not match %s", uri, templateURI)
		}
		body, err := json.Marshal(map[string]any{"id": id, "templateTest": true, "data": "Data for ID: " + id})
		if err != nil {
			return nil, err
		}
		return contents(runtime.TextResource(uri, "application/json", string(body))), nil
	})
}

// templateID extracts {id} from a URI of test://template/{id}/data.
func templateID(uri string) (string, bool) {
	rest, ok := strings.CutPrefix(uri, "test://template/")
	if !ok {
		return "", false
	}
	id, ok := strings.CutSuffix(rest, "/data")
	return id, ok && id != "" && !strings.Contains(id, "/")
}

func contents(c ...runtime.ResourceContents) *runtime.ReadResourceResult {
	return &runtime.ReadResourceResult{Contents: c}
}

func userText(s string) runtime.PromptMessage {
	return runtime.PromptMessage{Role: "user", Content: runtime.TextContent(s)}
}

// addPrompts adds the suite's four prompts.
func addPrompts(s *runtime.Server) {
	s.AddPrompt(runtime.Prompt{
		Name:        "test_simple_prompt",
		Description: "A simple prompt without arguments",
	}, func(context.Context, map[string]string) (*runtime.GetPromptResult, error) {
		return &runtime.GetPromptResult{Messages: []runtime.PromptMessage{userText("This is a simple prompt for testing.")}}, nil
	})
	s.AddPrompt(runtime.Prompt{
		Name:        "test_prompt_with_arguments",
		Description: "A prompt with two required arguments",
		Arguments: []runtime.PromptArgument{
			{Name: "arg1", Description: "First test argument", Required: true},
			{Name: "arg2", Description: "Second test argument", Required: true},
		},
	}, func(_ context.Context, args map[string]string) (*runtime.GetPromptResult, error) {
		msg := fmt.Sprintf("Prompt with arguments: arg1='%s', arg2='%s'", args["arg1"], args["arg2"])
		return &runtime.GetPromptResult{Messages: []runtime.PromptMessage{userText(msg)}}, nil
	})
	s.AddPrompt(runtime.Prompt{
		Name:        "test_prompt_with_embedded_resource",
		Description: "A prompt that embeds the resource it is given",
		Arguments:   []runtime.PromptArgument{{Name: "resourceUri", Description: "URI of the resource to embed", Required: true}},
	}, func(_ context.Context, args map[string]string) (*runtime.GetPromptResult, error) {
		rc := runtime.TextResource(args["resourceUri"], "text/plain", "Embedded resource content for testing.")
		return &runtime.GetPromptResult{Messages: []runtime.PromptMessage{
			{Role: "user", Content: runtime.Content{Type: "resource", Resource: &rc}},
			userText("Please process the embedded resource above."),
		}}, nil
	})
	s.AddPrompt(runtime.Prompt{
		Name:        "test_prompt_with_image",
		Description: "A prompt with an image",
	}, func(context.Context, map[string]string) (*runtime.GetPromptResult, error) {
		return &runtime.GetPromptResult{Messages: []runtime.PromptMessage{
			{Role: "user", Content: runtime.ImageContent(base64.StdEncoding.EncodeToString(pngImage), "image/png")},
			userText("Please analyze the image above."),
		}}, nil
	})
}

// completionValues are the suggestions offered for each completable argument.
var completionValues = map[string][]string{
	"arg1":        {"paris", "park", "party", "test", "testing", "testValue1"},
	"arg2":        {"blue", "green", "red", "testValue2"},
	"resourceUri": {"test://example-resource", "test://static-text", "test://static-binary"},
	"id":          {"1", "2", "3", "123"},
}

// complete suggests values for prompt arguments and for the template's {id}: the known values
// that start with what the user typed.
func complete(_ context.Context, p *runtime.CompleteParams) (*runtime.Completion, error) {
	switch {
	case p.Ref.Type == "ref/prompt" && strings.HasPrefix(p.Ref.Name, "test_prompt_"):
	case p.Ref.Type == "ref/resource" && p.Ref.URI == templateURI:
	default:
		return &runtime.Completion{}, nil
	}
	var out []string
	for _, v := range completionValues[p.Argument.Name] {
		if strings.HasPrefix(v, p.Argument.Value) {
			out = append(out, v)
		}
	}
	total := len(out)
	return &runtime.Completion{Values: out, Total: &total}, nil
}

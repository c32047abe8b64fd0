package runtime_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/protomcp/protomcp/runtime"
)

// TestListsAndIterators checks that the four list methods have one shape (a page and its
// NextCursor) and that the iterators follow every page.
func TestListsAndIterators(t *testing.T) {
	t.Parallel()
	e := newClientEnv(t, runtime.WithPageSize(2))
	var tools, prompts, resources, templates []string
	for i := range 5 {
		name := fmt.Sprintf("t%d", i)
		tools = append(tools, name)
		e.srv.AddTool(runtime.ToolSpec{Name: name}, func(context.Context, *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
			return &runtime.CallToolResult{}, nil
		})
		p := fmt.Sprintf("p%d", i)
		prompts = append(prompts, p)
		e.srv.AddPrompt(runtime.Prompt{Name: p}, func(context.Context, map[string]string) (*runtime.GetPromptResult, error) {
			return &runtime.GetPromptResult{}, nil
		})
		u := fmt.Sprintf("mem://r/%d", i)
		resources = append(resources, u)
		e.srv.AddResource(runtime.Resource{URI: u, Name: u}, func(context.Context, string) (*runtime.ReadResourceResult, error) {
			return &runtime.ReadResourceResult{}, nil
		})
		tmpl := fmt.Sprintf("mem://t%d/{id}", i)
		templates = append(templates, tmpl)
		e.srv.AddResourceTemplate(runtime.ResourceTemplate{URITemplate: tmpl, Name: tmpl}, func(context.Context, string) (*runtime.ReadResourceResult, error) {
			return &runtime.ReadResourceResult{}, nil
		})
	}
	c := e.client(t)
	ctx := testCtx(t)

	page, err := c.ListPrompts(ctx, "")
	require.NoError(t, err, "first prompts page")
	assert.Len(t, page.Prompts, 2, "first prompts page")
	assert.NotEmpty(t, page.NextCursor, "first prompts page")
	rp, err := c.ListResources(ctx, "")
	require.NoError(t, err, "first resources page")
	assert.Len(t, rp.Resources, 2, "first resources page")
	require.NotEmpty(t, rp.NextCursor, "first resources page")
	tp, err := c.ListResourceTemplates(ctx, rp.NextCursor)
	require.NoError(t, err, "templates page")
	assert.Len(t, tp.ResourceTemplates, 2, "templates page")

	collect := func(what string, seq func(yield func(string, error) bool)) []string {
		var out []string
		for name, err := range seq {
			require.NoError(t, err, what)
			out = append(out, name)
		}
		return out
	}
	gotTools := collect("Tools", func(yield func(string, error) bool) {
		for tool, err := range c.Tools(ctx) {
			if !yield(tool.Name, err) {
				return
			}
		}
	})
	gotPrompts := collect("Prompts", func(yield func(string, error) bool) {
		for p, err := range c.Prompts(ctx) {
			if !yield(p.Name, err) {
				return
			}
		}
	})
	gotResources := collect("Resources", func(yield func(string, error) bool) {
		for r, err := range c.Resources(ctx) {
			if !yield(r.URI, err) {
				return
			}
		}
	})
	gotTemplates := collect("ResourceTemplates", func(yield func(string, error) bool) {
		for r, err := range c.ResourceTemplates(ctx) {
			if !yield(r.URITemplate, err) {
				return
			}
		}
	})
	assert.Equal(t, tools, gotTools, "tools")
	assert.Equal(t, prompts, gotPrompts, "prompts")
	assert.Equal(t, resources, gotResources, "resources")
	assert.Equal(t, templates, gotTemplates, "templates")
	// Breaking out of an iterator stops it.
	n := 0
	for range c.Tools(ctx) {
		n++
		break
	}
	assert.Equal(t, 1, n, "tools yielded by an iterator broken out of after one")
}

// TestDuplicateRegistrationPanics checks that tools, prompts, resources and templates all
// refuse a second registration under the same name, as http.ServeMux does.
func TestDuplicateRegistrationPanics(t *testing.T) {
	t.Parallel()
	s := runtime.NewServer(runtime.Implementation{Name: "dup"}, runtime.WithLogger(discardLogger()))
	tool := func(context.Context, *runtime.CallToolRequest) (*runtime.CallToolResult, error) { return nil, nil }
	prompt := func(context.Context, map[string]string) (*runtime.GetPromptResult, error) { return nil, nil }
	read := func(context.Context, string) (*runtime.ReadResourceResult, error) { return nil, nil }
	for _, tc := range []struct {
		what string
		add  func()
	}{
		{"tool", func() { s.AddTool(runtime.ToolSpec{Name: "x"}, tool) }},
		{"prompt", func() { s.AddPrompt(runtime.Prompt{Name: "x"}, prompt) }},
		{"resource", func() { s.AddResource(runtime.Resource{URI: "mem://x", Name: "x"}, read) }},
		{"resource template", func() { s.AddResourceTemplate(runtime.ResourceTemplate{URITemplate: "mem://{x}", Name: "x"}, read) }},
	} {
		tc.add() // the first registration is fine
		func() {
			defer func() {
				p := recover()
				assert.Falsef(t, p == nil || !strings.Contains(fmt.Sprint(p), "already registered"), "second %s registration: panic %v; want 'already registered'", tc.what, p)
			}()
			tc.add()
		}()
	}
	// After removal, the name is free again.
	require.True(t, s.RemovePrompt("x"), "RemovePrompt")
	require.True(t, s.RemoveResource("mem://x"), "RemoveResource")
	require.True(t, s.RemoveResourceTemplate("mem://{x}"), "RemoveResourceTemplate")
	require.True(t, s.RemoveTool("x"), "RemoveTool")
	s.AddPrompt(runtime.Prompt{Name: "x"}, prompt)
}

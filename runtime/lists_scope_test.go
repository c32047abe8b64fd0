package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/protomcp/protomcp/runtime"
)

// listHints are the caching hints of a list result, as sent (spec 2026-07-28, Caching).
type listHints struct {
	TTLMs      *int64  `json:"ttlMs"`
	CacheScope *string `json:"cacheScope"`
	Tools      []struct {
		Name string `json:"name"`
	} `json:"tools"`
}

// rawToolsList sends tools/list through c and returns its result's hints and tool names.
func rawToolsList(t *testing.T, c *runtime.Client) (listHints, []string) {
	t.Helper()
	raw, err := c.Call(testCtx(t), "tools/list", nil)
	require.NoError(t, err, "tools/list")
	var h listHints
	require.NoError(t, json.Unmarshal(raw, &h), "tools/list result %s", raw)
	names := make([]string, 0, len(h.Tools))
	for _, tool := range h.Tools {
		names = append(names, tool.Name)
	}
	return h, names
}

// listEras are the two protocol listEras a client may speak, for tests that run in both.
var listEras = []struct {
	name string
	era  runtime.Era
}{{"2025-11-25", runtime.EraLegacy}, {"2026-07-28", runtime.EraModern}}

// TestListsByScope: with WithListsByScope, two tokens with different scopes see different
// tools/list results, marked private for caches in the 2026-07-28 era (spec 2026-07-28,
// Caching, Choosing a Cache Scope: filtered lists vary per user) even when the server's
// hint is public; calling a tool left out still answers 403 insufficient_scope, so that a
// client can step up.
func TestListsByScope(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, runtime.WithListsByScope(), runtime.WithListCacheHint(runtime.CacheHint{TTL: time.Minute, Scope: runtime.CachePublic}))
	for _, era := range listEras {
		t.Run(era.name, func(t *testing.T) {
			t.Parallel()
			reader := runtime.NewClient(e.url, runtime.WithEra(era.era), runtime.WithHeader("Authorization", "Bearer "+e.token("alice", "weather:read")))
			writer := runtime.NewClient(e.url, runtime.WithEra(era.era), runtime.WithHeader("Authorization", "Bearer "+e.token("bob", "weather:read", "weather:write")))
			t.Cleanup(func() { _ = reader.Close(context.Background()); _ = writer.Close(context.Background()) })

			rh, rnames := rawToolsList(t, reader)
			wh, wnames := rawToolsList(t, writer)
			assert.Equal(t, []string{"whoami", "poll"}, rnames, "the reader's tools")
			assert.Equal(t, []string{"whoami", "set_forecast", "poll"}, wnames, "the writer's tools")
			for who, h := range map[string]listHints{"reader": rh, "writer": wh} {
				require.NotNil(t, h.CacheScope, "%s: cacheScope", who)
				assert.Equal(t, "private", *h.CacheScope, "%s: a list filtered by scope is private", who)
				require.NotNil(t, h.TTLMs, "%s: ttlMs", who)
				assert.EqualValues(t, 60000, *h.TTLMs, "%s: ttlMs", who)
			}

			// The typed iterator sees the same.
			var typed []string
			for tool, err := range reader.Tools(testCtx(t)) {
				require.NoError(t, err)
				typed = append(typed, tool.Name)
			}
			assert.Equal(t, rnames, typed, "Tools()")

			_, err := reader.CallTool(testCtx(t), "set_forecast", nil)
			var he *runtime.HTTPError
			require.True(t, errors.As(err, &he), "calling a tool left out: %v", err)
			assert.Equal(t, http.StatusForbidden, he.StatusCode, "calling a tool left out: %v", err)
			res, err := writer.CallTool(testCtx(t), "set_forecast", nil)
			require.NoError(t, err, "the writer calls set_forecast")
			assert.Equal(t, "bob", resultText(t, res))
		})
	}
}

// TestListsUnfilteredByDefault: without WithListsByScope every token sees every tool, as
// before; the list stays immediately stale and private in the 2026-07-28 era, and carries no
// hint in 2025-11-25.
func TestListsUnfilteredByDefault(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	for _, era := range listEras {
		t.Run(era.name, func(t *testing.T) {
			t.Parallel()
			c := runtime.NewClient(e.url, runtime.WithEra(era.era), runtime.WithHeader("Authorization", "Bearer "+e.token("alice", "weather:read")))
			t.Cleanup(func() { _ = c.Close(context.Background()) })
			h, names := rawToolsList(t, c)
			assert.Equal(t, []string{"whoami", "set_forecast", "poll"}, names)
			if era.era == runtime.EraLegacy {
				assert.Nil(t, h.TTLMs, "2025-11-25 without a hint: no ttlMs")
				assert.Nil(t, h.CacheScope, "2025-11-25 without a hint: no cacheScope")
				return
			}
			require.NotNil(t, h.TTLMs)
			require.NotNil(t, h.CacheScope)
			assert.Zero(t, *h.TTLMs)
			assert.Equal(t, "private", *h.CacheScope)
		})
	}
}

// TestVisibilityPredicate: a registration given WithVisibility is listed only for the
// callers its predicate accepts, and is unknown to the others (tools/call, prompts/get and
// resources/read answer as for one that does not exist); lists that hold such a registration
// are private for caches.
func TestVisibilityPredicate(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, runtime.WithListCacheHint(runtime.CacheHint{TTL: time.Minute, Scope: runtime.CachePublic}))
	aliceOnly := runtime.WithVisibility(func(ctx context.Context, token *runtime.TokenInfo) bool {
		return token != nil && token.Subject == "alice" && runtime.TokenInfoFrom(ctx) == token
	})
	e.srv.AddTool(runtime.ToolSpec{Name: "beta"}, func(ctx context.Context, _ *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		return &runtime.CallToolResult{Content: []runtime.Content{runtime.TextContent("beta")}}, nil
	}, aliceOnly)
	// Hidden and scoped: the caller it is hidden from learns nothing, not even the scopes.
	e.srv.AddTool(runtime.ToolSpec{Name: "beta_write", Scopes: []string{"weather:write"}}, func(ctx context.Context, _ *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		return &runtime.CallToolResult{}, nil
	}, aliceOnly)
	e.srv.AddPrompt(runtime.Prompt{Name: "beta_prompt"}, func(context.Context, map[string]string) (*runtime.GetPromptResult, error) {
		return &runtime.GetPromptResult{}, nil
	}, aliceOnly)
	e.srv.AddPrompt(runtime.Prompt{Name: "open_prompt"}, func(context.Context, map[string]string) (*runtime.GetPromptResult, error) {
		return &runtime.GetPromptResult{}, nil
	})
	read := func(context.Context, string) (*runtime.ReadResourceResult, error) {
		return &runtime.ReadResourceResult{Contents: []runtime.ResourceContents{runtime.TextResource("mem://beta", "text/plain", "beta")}}, nil
	}
	e.srv.AddResource(runtime.Resource{URI: "mem://beta", Name: "beta"}, read, aliceOnly)
	e.srv.AddResourceTemplate(runtime.ResourceTemplate{URITemplate: "mem://beta/{id}", Name: "beta"}, read, aliceOnly)

	for _, era := range listEras {
		t.Run(era.name, func(t *testing.T) {
			t.Parallel()
			ctx := testCtx(t)
			alice := runtime.NewClient(e.url, runtime.WithEra(era.era), runtime.WithHeader("Authorization", "Bearer "+e.token("alice", "weather:read")))
			bob := runtime.NewClient(e.url, runtime.WithEra(era.era), runtime.WithHeader("Authorization", "Bearer "+e.token("bob", "weather:read")))
			t.Cleanup(func() { _ = alice.Close(context.Background()); _ = bob.Close(context.Background()) })

			ah, anames := rawToolsList(t, alice)
			_, bnames := rawToolsList(t, bob)
			assert.Contains(t, anames, "beta", "alice's tools")
			assert.NotContains(t, bnames, "beta", "bob's tools")
			require.NotNil(t, ah.CacheScope)
			assert.Equal(t, "private", *ah.CacheScope, "a list with a visibility predicate is private")

			res, err := alice.CallTool(ctx, "beta", nil)
			require.NoError(t, err, "alice calls beta")
			assert.Equal(t, "beta", resultText(t, res))
			_, err = bob.CallTool(ctx, "beta", nil)
			require.Error(t, err, "bob calls beta")
			assert.Equal(t, runtime.CodeInvalidParams, runtime.CodeOf(err), "bob calls beta: %v", err)
			assert.Contains(t, err.Error(), "unknown tool", "bob calls beta: as for a tool that does not exist")
			_, err = bob.CallTool(ctx, "beta_write", nil)
			assert.Equal(t, runtime.CodeInvalidParams, runtime.CodeOf(err), "bob calls beta_write: unknown, not 403: %v", err)
			_, err = alice.CallTool(ctx, "beta_write", nil)
			var he *runtime.HTTPError
			require.True(t, errors.As(err, &he), "alice calls beta_write without its scope: %v", err)
			assert.Equal(t, http.StatusForbidden, he.StatusCode, "alice calls beta_write without its scope")

			names := func(c *runtime.Client) (prompts, resources, templates []string) {
				for p, err := range c.Prompts(ctx) {
					require.NoError(t, err)
					prompts = append(prompts, p.Name)
				}
				for r, err := range c.Resources(ctx) {
					require.NoError(t, err)
					resources = append(resources, r.URI)
				}
				for tm, err := range c.ResourceTemplates(ctx) {
					require.NoError(t, err)
					templates = append(templates, tm.URITemplate)
				}
				return
			}
			ap, ar, at := names(alice)
			bp, br, bt := names(bob)
			assert.Equal(t, []string{"beta_prompt", "open_prompt"}, ap, "alice's prompts")
			assert.Equal(t, []string{"open_prompt"}, bp, "bob's prompts")
			assert.Equal(t, []string{"mem://beta"}, ar, "alice's resources")
			assert.Empty(t, br, "bob's resources")
			assert.Equal(t, []string{"mem://beta/{id}"}, at, "alice's templates")
			assert.Empty(t, bt, "bob's templates")

			_, err = alice.GetPrompt(ctx, "beta_prompt", nil)
			require.NoError(t, err, "alice gets beta_prompt")
			_, err = bob.GetPrompt(ctx, "beta_prompt", nil)
			require.Error(t, err, "bob gets beta_prompt")
			assert.Contains(t, err.Error(), "unknown prompt")
			for _, uri := range []string{"mem://beta", "mem://beta/1"} {
				_, err = alice.ReadResource(ctx, uri)
				require.NoError(t, err, "alice reads %s", uri)
				_, err = bob.ReadResource(ctx, uri)
				require.Error(t, err, "bob reads %s", uri)
				assert.True(t, slices.Contains([]runtime.Code{runtime.CodeResourceNotFound, runtime.CodeInvalidParams}, runtime.CodeOf(err)), "bob reads %s: %v", uri, err)
			}
		})
	}
}

// TestListCacheHints: a list page's hint is made of the server's (WithListCacheHint) and its
// entries' (ToolSpec.Cache, WithCacheHint): the shortest TTL on the page, and public only when
// every entry of the list is (spec 2026-07-28, Caching, Interaction with Pagination: one
// scope for every page). The 2025-11-25 era carries a hint with a positive TTL too.
func TestListCacheHints(t *testing.T) {
	t.Parallel()
	noop := func(context.Context, *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		return &runtime.CallToolResult{}, nil
	}
	noPrompt := func(context.Context, map[string]string) (*runtime.GetPromptResult, error) {
		return &runtime.GetPromptResult{}, nil
	}
	e := newClientEnv(t, runtime.WithPageSize(1), runtime.WithListCacheHint(runtime.CacheHint{TTL: 5 * time.Minute, Scope: runtime.CachePublic}))
	e.srv.AddTool(runtime.ToolSpec{Name: "short", Cache: &runtime.CacheHint{TTL: time.Minute}}, noop)
	e.srv.AddTool(runtime.ToolSpec{Name: "server_default"}, noop)
	e.srv.AddPrompt(runtime.Prompt{Name: "mine"}, noPrompt, runtime.WithCacheHint(runtime.CacheHint{TTL: 2 * time.Second, Scope: runtime.CachePrivate}))
	type hint struct {
		TTLMs      *int64  `json:"ttlMs"`
		CacheScope *string `json:"cacheScope"`
		NextCursor string  `json:"nextCursor"`
	}
	for _, era := range listEras {
		t.Run(era.name, func(t *testing.T) {
			t.Parallel()
			ctx := testCtx(t)
			c := e.client(t, runtime.WithEra(era.era))
			get := func(method, cursor string) hint {
				var params any
				if cursor != "" {
					params = map[string]string{"cursor": cursor}
				}
				raw, err := c.Call(ctx, method, params)
				require.NoError(t, err, method)
				var h hint
				require.NoError(t, json.Unmarshal(raw, &h), "%s: %s", method, raw)
				require.NotNil(t, h.TTLMs, "%s: ttlMs in %s", method, raw)
				require.NotNil(t, h.CacheScope, "%s: cacheScope in %s", method, raw)
				return h
			}
			first := get("tools/list", "")
			assert.EqualValues(t, 60000, *first.TTLMs, "the first page lists short")
			assert.Equal(t, "public", *first.CacheScope, "every tool is public")
			require.NotEmpty(t, first.NextCursor)
			second := get("tools/list", first.NextCursor)
			assert.EqualValues(t, 300000, *second.TTLMs, "the second page takes the server's TTL")
			assert.Equal(t, "public", *second.CacheScope)
			p := get("prompts/list", "")
			assert.EqualValues(t, 2000, *p.TTLMs, "the prompt's own TTL")
			assert.Equal(t, "private", *p.CacheScope, "the prompt's own scope")
			r := get("resources/list", "")
			assert.EqualValues(t, 300000, *r.TTLMs, "an empty list takes the server's hint")
			assert.Equal(t, "public", *r.CacheScope, "an empty list takes the server's hint")
		})
	}
}

// TestListsByScopeOverStdio: stdio carries no token, so a tool with scopes cannot be called
// there, and WithListsByScope leaves it out; a visibility predicate decides with a nil token,
// and a tool it hides is unknown, not refused for its scopes.
func TestListsByScopeOverStdio(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	srv := runtime.NewServer(runtime.Implementation{Name: "stdio-lists"}, runtime.WithListsByScope(), runtime.WithLogger(discardLogger()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	noop := func(context.Context, *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		return &runtime.CallToolResult{}, nil
	}
	var sawNil atomic.Bool
	hidden := runtime.WithVisibility(func(_ context.Context, token *runtime.TokenInfo) bool {
		if token == nil {
			sawNil.Store(true)
		}
		return token != nil
	})
	srv.AddTool(runtime.ToolSpec{Name: "open"}, noop)
	srv.AddTool(runtime.ToolSpec{Name: "scoped", Scopes: []string{"weather:write"}}, noop)
	srv.AddTool(runtime.ToolSpec{Name: "authenticated_only"}, noop, hidden)
	srv.AddTool(runtime.ToolSpec{Name: "hidden_scoped", Scopes: []string{"weather:write"}}, noop, hidden)
	c, err := runtime.NewInMemoryClient(ctx, srv)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	assert.Equal(t, []string{"open"}, toolNames(t, c))
	assert.True(t, sawNil.Load(), "the predicate saw no token")
	_, err = c.CallTool(ctx, "scoped", nil)
	assert.Equal(t, runtime.CodeInvalidRequest, runtime.CodeOf(err), "a scoped tool over stdio: %v", err)
	for _, name := range []string{"authenticated_only", "hidden_scoped"} {
		_, err = c.CallTool(ctx, name, nil)
		assert.Equal(t, runtime.CodeInvalidParams, runtime.CodeOf(err), "%s over stdio: %v", name, err)
		assert.ErrorContains(t, err, "unknown tool", "%s over stdio", name)
	}
}

package oauth_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/protomcp/protomcp/internal/testissuer"
	"github.com/protomcp/protomcp/jwtauth"
	"github.com/protomcp/protomcp/runtime"
)

// TestOAuthStepUpShowsFullerList: a server whose tools/list leaves out what the token does
// not grant (runtime.WithListsByScope) and lets clients cache it for an hour, privately. The
// client sees the tools of its first token, from its cache the second time; a call of a tool
// left out answers 403 insufficient_scope, the client steps up, and its next list, fetched
// anew because the token changed (spec 2026-07-28, Caching, Cache Scope Field), is the
// fuller one.
func TestOAuthStepUpShowsFullerList(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	is, err := testissuer.Start(testissuer.WithScopes("weather:read", "weather:write"))
	require.NoError(t, err, "test issuer")
	t.Cleanup(is.Close)
	mux := http.NewServeMux()
	ts := httptest.NewServer(mux)
	resource := ts.URL + "/mcp"
	v, err := jwtauth.NewVerifier(jwtauth.Config{Issuer: is.URL, Audience: resource})
	require.NoError(t, err, "verifier")
	pr := runtime.ProtectedResource{Resource: resource, AuthorizationServers: []string{is.URL}, ScopesSupported: []string{"weather:read"}}
	var lists atomic.Int64
	count := runtime.InterceptorFunc(func(next runtime.CallFunc) runtime.CallFunc {
		return func(ctx context.Context, req *runtime.Request) (*runtime.Response, error) {
			if req.Method == "tools/list" {
				lists.Add(1)
			}
			return next(ctx, req)
		}
	})
	srv := runtime.NewServer(runtime.Implementation{Name: "oauth-lists"},
		runtime.WithTokenVerifier(v, pr), runtime.WithListsByScope(), runtime.WithInterceptors(count),
		runtime.WithListCacheHint(runtime.CacheHint{TTL: time.Hour}),
		runtime.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	whoami := func(ctx context.Context, _ *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		return &runtime.CallToolResult{Content: []runtime.Content{runtime.TextContent(runtime.TokenInfoFrom(ctx).Subject)}}, nil
	}
	srv.AddTool(runtime.ToolSpec{Name: "whoami"}, whoami)
	srv.AddTool(runtime.ToolSpec{Name: "set_forecast", Scopes: []string{"weather:write"}}, whoami)
	mux.Handle("/mcp", srv)
	mux.Handle(pr.MetadataPath(), pr.MetadataHandler())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		ts.Close()
	})

	c, b := oauthClient(t, resource, nil)
	names := func() []string {
		t.Helper()
		var out []string
		for tool, err := range c.Tools(ctx) {
			require.NoError(t, err, "Tools")
			out = append(out, tool.Name)
		}
		return out
	}
	assert.Equal(t, []string{"whoami"}, names(), "the first token's tools")
	assert.Equal(t, []string{"whoami"}, names(), "the first token's tools, again")
	assert.EqualValues(t, 1, lists.Load(), "tools/list requests served: the second came from the cache")

	res, err := c.CallTool(ctx, "set_forecast", nil)
	require.NoError(t, err, "set_forecast, after a step-up")
	assert.Equal(t, "alice", resultText(t, res))
	require.Len(t, b.authorizations(), 2, "authorizations: the first, and the step-up")

	assert.Equal(t, []string{"whoami", "set_forecast"}, names(), "the stepped-up token's tools")
	assert.EqualValues(t, 2, lists.Load(), "tools/list requests served: the private page was not reused with the new token")
}

package oauth_test

import (
	"context"
	"encoding/json"
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
	"github.com/protomcp/protomcp/runtime/oauth"
)

// migrationEnv is a protected server whose authorization server can be switched: its
// metadata then names the new one, and it accepts only the new one's tokens.
type migrationEnv struct {
	url      string
	old, new *testissuer.Issuer
	moved    atomic.Bool
}

func newMigrationEnv(t *testing.T, opts ...testissuer.Option) *migrationEnv {
	t.Helper()
	e := new(migrationEnv)
	var err error
	e.old, err = testissuer.Start(append([]testissuer.Option{testissuer.WithSubject("alice")}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(e.old.Close)
	e.new, err = testissuer.Start(append([]testissuer.Option{testissuer.WithSubject("bob")}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(e.new.Close)
	mux := http.NewServeMux()
	ts := httptest.NewServer(mux)
	e.url = ts.URL + "/mcp"
	verifiers := map[bool]runtime.TokenVerifier{}
	for moved, is := range map[bool]*testissuer.Issuer{false: e.old, true: e.new} {
		v, err := jwtauth.NewVerifier(jwtauth.Config{Issuer: is.URL, Audience: e.url})
		require.NoError(t, err)
		verifiers[moved] = v
	}
	current := func() *testissuer.Issuer {
		if e.moved.Load() {
			return e.new
		}
		return e.old
	}
	pr := runtime.ProtectedResource{Resource: e.url, AuthorizationServers: []string{e.old.URL}}
	srv := runtime.NewServer(runtime.Implementation{Name: "migration-test"},
		runtime.WithTokenVerifier(runtime.TokenVerifierFunc(func(ctx context.Context, tok string) (*runtime.TokenInfo, error) {
			return verifiers[e.moved.Load()].VerifyToken(ctx, tok)
		}), pr), runtime.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	srv.AddTool(runtime.ToolSpec{Name: "whoami"}, func(ctx context.Context, _ *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		return &runtime.CallToolResult{Content: []runtime.Content{runtime.TextContent(runtime.TokenInfoFrom(ctx).Subject)}}, nil
	})
	mux.Handle("/mcp", srv)
	mux.HandleFunc(pr.MetadataPath(), func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(runtime.ProtectedResourceMetadata{Resource: e.url, AuthorizationServers: []string{current().URL}})
	})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		ts.Close()
	})
	return e
}

// TestOAuthAuthorizationServerMigration: when the resource's metadata names a new
// authorization server, the client registers there and presents none of the old server's
// credentials or tokens to it (spec 2026-07-28, Authorization, Client Registration,
// Authorization Server Binding).
func TestOAuthAuthorizationServerMigration(t *testing.T) {
	ctx := testCtx(t)
	e := newMigrationEnv(t)
	c, b := oauthClient(t, e.url, nil)
	res, err := c.CallTool(ctx, "whoami", nil)
	require.NoError(t, err)
	require.Equal(t, "alice", resultText(t, res), "whoami at the first authorization server")
	require.Len(t, e.old.Registrations(), 1, "registrations at the first authorization server")

	e.moved.Store(true)
	res, err = c.CallTool(ctx, "whoami", nil)
	require.NoError(t, err)
	require.Equal(t, "bob", resultText(t, res), "whoami after the move")
	regs := e.new.Registrations()
	require.Len(t, regs, 1, "registrations at the new authorization server")
	auths := b.authorizations()
	require.Len(t, auths, 2, "authorizations")
	assert.Equal(t, regs[0].ClientID, auths[1].Query().Get("client_id"), "the client_id presented to the new server")
	assert.NotEqual(t, e.old.Registrations()[0].ClientID, auths[1].Query().Get("client_id"), "the old client_id went to the new server")
	assert.Zero(t, e.new.TokenRequests("refresh_token"), "the old server's refresh token went to the new server")
	assert.Len(t, e.old.Registrations(), 1, "registrations at the first authorization server")
}

// TestOAuthPreRegisteredBound: pre-registered credentials are bound to their authorization
// server: when the resource moves to another one, the client says so instead of presenting
// them there.
func TestOAuthPreRegisteredBound(t *testing.T) {
	ctx := testCtx(t)
	e := newMigrationEnv(t, testissuer.WithClient("reporter", "s3cret"))
	c := runtime.NewClient(e.url, oauth.WithOAuth(oauth.Config{
		Grant: oauth.GrantClientCredentials, ClientID: "reporter", ClientSecret: "s3cret",
	}))
	defer c.Close(ctx)
	_, err := c.CallTool(ctx, "whoami", nil)
	require.NoError(t, err)
	e.moved.Store(true)
	_, err = c.CallTool(ctx, "whoami", nil)
	assert.ErrorIs(t, err, oauth.ErrOAuth)
	assert.ErrorContains(t, err, "registered with "+e.old.URL)
	assert.Zero(t, e.new.TokenRequests("client_credentials"), "the pre-registered client went to the new server")

	// Bound by configuration, they are never presented to another server.
	bound := runtime.NewClient(e.url, oauth.WithOAuth(oauth.Config{
		Grant: oauth.GrantClientCredentials, ClientID: "reporter", ClientSecret: "s3cret", ClientIssuer: e.old.URL,
	}))
	defer bound.Close(ctx)
	_, err = bound.CallTool(ctx, "whoami", nil)
	assert.ErrorContains(t, err, "registered with "+e.old.URL)
	assert.Zero(t, e.new.TokenRequests("client_credentials"), "the pre-registered client went to the new server")
}

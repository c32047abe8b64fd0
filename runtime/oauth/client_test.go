package oauth_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"

	"github.com/protomcp/protomcp/internal/testissuer"
	"github.com/protomcp/protomcp/jwtauth"
	"github.com/protomcp/protomcp/runtime"
	"github.com/protomcp/protomcp/runtime/oauth"
)

// testTimeout bounds every test's waits.
const testTimeout = 30 * time.Second

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// authEnv is a Server protected by a JWT verifier trusting a real test issuer, on loopback:
// the resource server the OAuth client authorizes against.
type authEnv struct {
	issuer   *testissuer.Issuer
	url      string // the MCP endpoint
	resource string
	calls    atomic.Int64 // handler invocations of every tool
}

func newAuthEnv(t *testing.T) *authEnv {
	t.Helper()
	return newAuthEnvWith(t, nil, nil)
}

// newAuthEnvWith is newAuthEnv with more options for the issuer and the protected resource's
// description changed by edit, and its handler wrapped by wrap, if given. Its tools whoami
// (any token) and set_forecast (scope weather:write) answer with the token's subject.
func newAuthEnvWith(t *testing.T, issOpts []testissuer.Option, edit func(*runtime.ProtectedResource), wrap ...func(http.Handler) http.Handler) *authEnv {
	t.Helper()
	is, err := testissuer.Start(append([]testissuer.Option{testissuer.WithScopes("weather:read", "weather:write")}, issOpts...)...)
	require.NoError(t, err, "test issuer")
	t.Cleanup(is.Close)
	e := &authEnv{issuer: is}
	mux := http.NewServeMux()
	ts := httptest.NewServer(mux)
	e.url = ts.URL + "/mcp"
	e.resource = e.url
	v, err := jwtauth.NewVerifier(jwtauth.Config{Issuer: is.URL, Audience: e.resource})
	require.NoError(t, err, "verifier")
	pr := runtime.ProtectedResource{Resource: e.resource, AuthorizationServers: []string{is.URL}, ScopesSupported: []string{"weather:read", "weather:write"}}
	if edit != nil {
		edit(&pr)
	}
	srv := runtime.NewServer(runtime.Implementation{Name: "oauth-test"},
		runtime.WithTokenVerifier(v, pr), runtime.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	whoami := func(ctx context.Context, _ *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		e.calls.Add(1)
		info := runtime.TokenInfoFrom(ctx)
		if info == nil {
			return nil, errors.New("no token info")
		}
		return &runtime.CallToolResult{Content: []runtime.Content{runtime.TextContent(info.Subject)}}, nil
	}
	srv.AddTool(runtime.ToolSpec{Name: "whoami"}, whoami)
	srv.AddTool(runtime.ToolSpec{Name: "set_forecast", Scopes: []string{"weather:write"}}, whoami)
	var h http.Handler = srv
	for _, w := range wrap {
		h = w(h)
	}
	mux.Handle("/mcp", h)
	mux.Handle(pr.MetadataPath(), pr.MetadataHandler())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		ts.Close()
	})
	return e
}

func resultText(t *testing.T, r *runtime.CallToolResult) string {
	t.Helper()
	require.NotEmpty(t, r.Content, "result content")
	return r.Content[0].Text
}

// browser plays the user: it follows the authorization URL to the test issuer, which
// approves at once and redirects to the client's loopback listener. It records the
// authorization URLs it was given.
type browser struct {
	mu   sync.Mutex
	urls []*url.URL
}

func (b *browser) open(authURL string) error {
	u, err := url.Parse(authURL)
	if err != nil {
		return err
	}
	b.mu.Lock()
	b.urls = append(b.urls, u)
	b.mu.Unlock()
	resp, err := http.Get(authURL)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return errors.New("the redirect ended in " + resp.Status)
	}
	return nil
}

func (b *browser) authorizations() []*url.URL {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]*url.URL(nil), b.urls...)
}

// oauthClient is a client that logs in with the authorization code grant through a real
// loopback redirect.
func oauthClient(t *testing.T, serverURL string, store oauth.TokenStore) (*runtime.Client, *browser) {
	t.Helper()
	lr, err := oauth.NewLoopbackRedirect("/callback")
	require.NoError(t, err)
	t.Cleanup(func() { lr.Close() })
	b := new(browser)
	c := runtime.NewClient(serverURL, oauth.WithOAuth(oauth.Config{
		ClientName:  "oauth test",
		RedirectURL: lr.RedirectURL(),
		Authorize:   lr.Authorize(b.open),
		TokenStore:  store,
	}))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = c.Close(ctx)
	})
	return c, b
}

// TestOAuthAuthorizationCode: discovery from the 401, dynamic registration, authorization
// code with PKCE and the resource, then the token is used until it expires and is refreshed
// without asking the user again.
func TestOAuthAuthorizationCode(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	e := newAuthEnv(t)
	store := new(oauth.MemoryTokenStore)
	c, b := oauthClient(t, e.url, store)
	for range 2 {
		res, err := c.CallTool(ctx, "whoami", nil)
		require.NoError(t, err)
		require.Equal(t, "alice", resultText(t, res), "whoami")
	}
	auths := b.authorizations()
	require.Len(t, auths, 1, "authorizations")
	q := auths[0].Query()
	assert.Equal(t, e.resource, q.Get("resource"), "authorization request %v", q)
	assert.Equal(t, "S256", q.Get("code_challenge_method"), "authorization request %v", q)
	assert.NotEmpty(t, q.Get("code_challenge"), "authorization request %v", q)
	assert.Equal(t, "weather:read weather:write", q.Get("scope"), "authorization request %v", q)
	assert.True(t, strings.HasPrefix(q.Get("client_id"), "client-"), "authorization request %v", q)
	tok, err := store.Token(ctx, e.resource)
	require.NoError(t, err, "stored token")
	require.NotNil(t, tok, "stored token")
	require.NotEmpty(t, tok.RefreshToken, "stored token %+v", tok)
	// An expired token is refreshed, and the user is not asked again.
	expired := *tok
	expired.Expiry = time.Now().Add(-time.Hour)
	require.NoError(t, store.SetToken(ctx, e.resource, &expired))
	_, err = c.CallTool(ctx, "whoami", nil)
	require.NoError(t, err)
	assert.Len(t, b.authorizations(), 1, "authorizations after the refresh")
	fresh, _ := store.Token(ctx, e.resource)
	assert.NotEqual(t, tok.AccessToken, fresh.AccessToken, "the token was not refreshed: %+v", fresh)
	assert.True(t, fresh.Valid(), "the token was not refreshed: %+v", fresh)
}

// TestOAuthStepUp: a tool needing a scope the token lacks gets 403 insufficient_scope; the
// client re-authorizes with the scopes of the challenge, keeping those it had, and retries.
func TestOAuthStepUp(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	e := newAuthEnvWith(t, nil, func(pr *runtime.ProtectedResource) { pr.ScopesSupported = []string{"weather:read"} })
	c, b := oauthClient(t, e.url, nil)
	_, err := c.CallTool(ctx, "whoami", nil)
	require.NoError(t, err)
	res, err := c.CallTool(ctx, "set_forecast", nil)
	require.NoError(t, err)
	require.Equal(t, "alice", resultText(t, res), "set_forecast")
	auths := b.authorizations()
	require.Len(t, auths, 2, "authorizations")
	assert.Equal(t, "weather:read", auths[0].Query().Get("scope"), "first scope")
	assert.Equal(t, []string{"weather:read", "weather:write"}, strings.Fields(auths[1].Query().Get("scope")), "step-up scope")
	assert.EqualValues(t, 2, e.calls.Load(), "handler runs")
}

// TestOAuthStepUpBounded: a server that keeps answering 403 insufficient_scope gets a
// bounded number of re-authorizations, then the 403 is the call's error.
func TestOAuthStepUpBounded(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	is, err := testissuer.Start()
	require.NoError(t, err)
	defer is.Close()
	var srvURL string
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(runtime.ProtectedResourceMetadata{Resource: srvURL, AuthorizationServers: []string{is.URL}})
	})
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "" {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+strings.TrimSuffix(srvURL, "/mcp")+`/.well-known/oauth-protected-resource/mcp"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="never:granted"`)
		w.WriteHeader(http.StatusForbidden)
	})
	ts := httptest.NewServer(mux)
	defer ts.Close()
	srvURL = ts.URL + "/mcp"
	c, b := oauthClient(t, srvURL, nil)
	err = c.Connect(ctx)
	var he *runtime.HTTPError
	require.ErrorAs(t, err, &he, "Connect")
	assert.Equal(t, http.StatusForbidden, he.StatusCode, "Connect: %v", err)
	assert.Len(t, b.authorizations(), 3, "authorizations (one, then two step-ups)")
}

// TestOAuthClientCredentials: a client acting on its own behalf gets its token with the
// client_credentials grant and its secret; the server sees the client as the subject.
func TestOAuthClientCredentials(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	e := newAuthEnvWith(t, []testissuer.Option{testissuer.WithClient("reporter", "s3cret")}, nil)
	c := runtime.NewClient(e.url, oauth.WithOAuth(oauth.Config{
		Grant: oauth.GrantClientCredentials, ClientID: "reporter", ClientSecret: "s3cret",
	}))
	defer c.Close(ctx)
	res, err := c.CallTool(ctx, "whoami", nil)
	require.NoError(t, err)
	require.Equal(t, "reporter", resultText(t, res), "whoami")
	// A wrong secret is an error that says where it failed.
	bad := runtime.NewClient(e.url, oauth.WithOAuth(oauth.Config{
		Grant: oauth.GrantClientCredentials, ClientID: "reporter", ClientSecret: "wrong",
	}))
	defer bad.Close(ctx)
	_, err = bad.CallTool(ctx, "whoami", nil)
	assert.ErrorIs(t, err, oauth.ErrOAuth, "wrong secret")
	var re *oauth2.RetrieveError
	require.ErrorAs(t, err, &re, "wrong secret")
	assert.Equal(t, "invalid_client", re.ErrorCode, "wrong secret: %v", err)
}

// TestOAuthRefusesForeignResource: metadata naming another resource stops the client before
// it asks anyone for a token.
func TestOAuthRefusesForeignResource(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	var srvURL string
	e := newAuthEnvWith(t, nil, func(pr *runtime.ProtectedResource) {
		srvURL = pr.Resource
		pr.MetadataURL = pr.WellKnownURL()
		pr.Resource = "https://evil.example.com/mcp"
	})
	c, b := oauthClient(t, srvURL, nil)
	_, err := c.CallTool(ctx, "whoami", nil)
	assert.ErrorIs(t, err, oauth.ErrOAuth)
	assert.ErrorContains(t, err, "refusing to authorize")
	assert.Empty(t, b.authorizations(), "authorizations")
	assert.Zero(t, e.calls.Load(), "handler runs")
}

// TestOAuthPrivateKeyJWT: client_credentials with a private_key_jwt client assertion (RFC
// 7523 Section 2.2) instead of a secret.
func TestOAuthPrivateKeyJWT(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	e := newAuthEnvWith(t, []testissuer.Option{testissuer.WithKeyClient("robot", &key.PublicKey)}, nil)
	assertion, err := jwtauth.PrivateKeyJWT("robot", key, jose.ES256, "robot-key-1")
	require.NoError(t, err)
	c := runtime.NewClient(e.url, oauth.WithOAuth(oauth.Config{
		Grant: oauth.GrantClientCredentials, ClientID: "robot", ClientAssertion: assertion,
	}))
	defer c.Close(ctx)
	res, err := c.CallTool(ctx, "whoami", nil)
	require.NoError(t, err)
	require.Equal(t, "robot", resultText(t, res), "whoami")
	// Another key's assertion is refused at the token endpoint.
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	forged, _ := jwtauth.PrivateKeyJWT("robot", other, jose.ES256, "")
	bad := runtime.NewClient(e.url, oauth.WithOAuth(oauth.Config{
		Grant: oauth.GrantClientCredentials, ClientID: "robot", ClientAssertion: forged,
	}))
	defer bad.Close(ctx)
	_, err = bad.CallTool(ctx, "whoami", nil)
	assert.ErrorIs(t, err, oauth.ErrOAuth, "forged assertion")
	assert.ErrorContains(t, err, "invalid_client", "forged assertion")
}

// TestOAuthEnterpriseManaged: SEP-990. The user's ID token from the enterprise IdP is
// exchanged there for an ID-JAG (RFC 8693), which the MCP server's authorization server takes
// in the JWT bearer grant (RFC 7523); the server sees the IdP's user.
func TestOAuthEnterpriseManaged(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	idp, err := testissuer.Start(testissuer.WithSubject("erin"), testissuer.WithClient("mcp-at-idp", "idp-secret"))
	require.NoError(t, err)
	defer idp.Close()
	e := newAuthEnvWith(t, []testissuer.Option{testissuer.WithAssertionIssuer(idp), testissuer.WithClient("mcp-client", "as-secret")}, nil)
	c := runtime.NewClient(e.url, oauth.WithOAuth(oauth.Config{
		Grant: oauth.GrantJWTBearer, ClientID: "mcp-client", ClientSecret: "as-secret",
		JWTBearerAssertion: oauth.IDJAGAssertion(oauth.IDJAGConfig{
			TokenEndpoint: idp.URL + "/token", ClientID: "mcp-at-idp", ClientSecret: "idp-secret",
			IDToken: func(context.Context) (string, error) {
				return idp.Mint(map[string]any{"aud": "mcp-at-idp"}), nil // the user's SSO
			},
		}),
	}))
	defer c.Close(ctx)
	res, err := c.CallTool(ctx, "whoami", nil)
	require.NoError(t, err)
	require.Equal(t, "erin", resultText(t, res), "whoami")
}

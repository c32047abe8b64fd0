package runtime_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/protomcp/protomcp/internal/testissuer"
	"github.com/protomcp/protomcp/jwtauth"
	"github.com/protomcp/protomcp/runtime"
)

// authEnv is a Server protected by a JWT verifier trusting a real test issuer, on loopback.
type authEnv struct {
	issuer   *testissuer.Issuer
	srv      *runtime.Server
	ts       *httptest.Server
	url      string // the MCP endpoint
	resource string
	calls    atomic.Int64 // handler invocations of every tool
	pr       runtime.ProtectedResource

	mu    sync.Mutex
	seen  []*runtime.TokenInfo // what handlers saw, via TokenInfoFrom
	icept []*runtime.TokenInfo // what the server interceptor saw
}

func newAuthEnv(t *testing.T, opts ...runtime.ServerOption) *authEnv {
	t.Helper()
	return newAuthEnvWith(t, nil, nil, opts...)
}

// newAuthEnvWith is newAuthEnv with more options for the issuer and the protected resource's
// description changed by edit.
func newAuthEnvWith(t *testing.T, issOpts []testissuer.Option, edit func(*runtime.ProtectedResource), opts ...runtime.ServerOption) *authEnv {
	t.Helper()
	is, err := testissuer.Start(append([]testissuer.Option{testissuer.WithScopes("weather:read", "weather:write")}, issOpts...)...)
	require.NoError(t, err)
	t.Cleanup(is.Close)
	e := &authEnv{issuer: is}
	mux := http.NewServeMux()
	e.ts = httptest.NewServer(mux)
	e.url = e.ts.URL + "/mcp"
	e.resource = e.url
	v, err := jwtauth.NewVerifier(jwtauth.Config{Issuer: is.URL, Audience: e.resource})
	require.NoError(t, err)
	e.pr = runtime.ProtectedResource{Resource: e.resource, AuthorizationServers: []string{is.URL}, ScopesSupported: []string{"weather:read", "weather:write"}}
	if edit != nil {
		edit(&e.pr)
	}
	record := runtime.InterceptorFunc(func(next runtime.CallFunc) runtime.CallFunc {
		return func(ctx context.Context, req *runtime.Request) (*runtime.Response, error) {
			e.mu.Lock()
			e.icept = append(e.icept, runtime.TokenInfoFrom(ctx))
			e.mu.Unlock()
			return next(ctx, req)
		}
	})
	e.srv = runtime.NewServer(runtime.Implementation{Name: "auth-test"}, append([]runtime.ServerOption{
		runtime.WithTokenVerifier(v, e.pr), runtime.WithInterceptors(record), runtime.WithRetryInterval(10 * time.Millisecond),
	}, opts...)...)
	whoami := func(ctx context.Context, _ *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		e.calls.Add(1)
		info := runtime.TokenInfoFrom(ctx)
		e.mu.Lock()
		e.seen = append(e.seen, info)
		e.mu.Unlock()
		if c := runtime.CallerFrom(ctx).TokenInfo(); c != info {
			return nil, errors.New("Caller.TokenInfo differs from TokenInfoFrom")
		}
		if info == nil {
			return &runtime.CallToolResult{Content: []runtime.Content{runtime.TextContent("anonymous")}}, nil
		}
		return &runtime.CallToolResult{Content: []runtime.Content{runtime.TextContent(info.Subject)}}, nil
	}
	e.srv.AddTool(runtime.ToolSpec{Name: "whoami"}, whoami)
	e.srv.AddTool(runtime.ToolSpec{Name: "set_forecast", Scopes: []string{"weather:write"}}, whoami)
	e.srv.AddTool(runtime.ToolSpec{Name: "poll"}, func(ctx context.Context, req *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		// Close the SSE connection first: the client resumes with GET and its token, and
		// the answer arrives on the resumed stream.
		if err := runtime.CallerFrom(ctx).CloseSSEStream(); err != nil {
			return nil, err
		}
		return whoami(ctx, req)
	})
	mux.Handle("/mcp", e.srv)
	mux.Handle(e.pr.MetadataPath(), e.pr.MetadataHandler())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = e.srv.Shutdown(ctx)
		e.ts.Close()
	})
	return e
}

// token mints a token for the server's resource with the given scopes, as sub.
func (e *authEnv) token(sub string, scopes ...string) string {
	c := map[string]any{"aud": e.resource, "sub": sub, "client_id": "test-client"}
	if len(scopes) > 0 {
		c["scope"] = strings.Join(scopes, " ")
	}
	return e.issuer.Mint(c)
}

func (e *authEnv) client(t *testing.T, token string) *runtime.Client {
	t.Helper()
	c := runtime.NewClient(e.url, runtime.WithHeader("Authorization", "Bearer "+token))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = c.Close(ctx)
	})
	return c
}

func resultText(t *testing.T, r *runtime.CallToolResult) string {
	t.Helper()
	require.NotEmpty(t, r.Content, "result content")
	return r.Content[0].Text
}

// TestAuthTokenInfoReachesHandlers: the verified token's identity is what handlers and
// interceptors see, in JSON and SSE response modes and when the answer comes on a resumed
// stream.
func TestAuthTokenInfoReachesHandlers(t *testing.T) {
	t.Parallel()
	for _, mode := range []struct {
		name string
		opts []runtime.ServerOption
	}{{"json", nil}, {"sse", []runtime.ServerOption{runtime.WithSSEResponses()}}} {
		t.Run(mode.name, func(t *testing.T) {
			ctx := testCtx(t)
			e := newAuthEnv(t, mode.opts...)
			c := e.client(t, e.token("alice", "weather:read"))
			for _, tool := range []string{"whoami", "poll"} {
				res, err := c.CallTool(ctx, tool, nil)
				require.NoError(t, err, tool)
				require.Equal(t, "alice", resultText(t, res), "%s: the subject the handler saw", tool)
			}
			e.mu.Lock()
			defer e.mu.Unlock()
			for _, info := range e.seen {
				require.NotNil(t, info, "handler's TokenInfo")
				assert.Equal(t, "alice", info.Subject, "handler's TokenInfo: %+v", info)
				assert.Equal(t, e.issuer.URL, info.Issuer, "handler's TokenInfo: %+v", info)
				assert.Equal(t, "test-client", info.ClientID, "handler's TokenInfo: %+v", info)
				assert.True(t, info.HasScope("weather:read"), "handler's TokenInfo: %+v", info)
				assert.False(t, info.Expiry.IsZero(), "handler's TokenInfo: %+v", info)
				assert.NotNil(t, info.Claims["jti"], "handler's TokenInfo: %+v", info)
			}
			require.GreaterOrEqual(t, len(e.icept), 3, "interceptor runs (initialize, whoami, poll)")
			for _, info := range e.icept {
				require.NotNil(t, info, "interceptor's TokenInfo")
				assert.Equal(t, "alice", info.Subject, "interceptor's TokenInfo: %+v", info)
			}
		})
	}
}

// rawPost sends one JSON-RPC message with the given bearer token (none when "").
func rawPost(t *testing.T, url, token, session, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", token)
	}
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("MCP-Protocol-Version", runtime.LatestProtocolVersion)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

const (
	initBody   = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	whoamiBody = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"whoami"}}`
	setBody    = `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"set_forecast"}}`
)

// session starts a session with token and returns its ID.
func (e *authEnv) session(t *testing.T, token string) string {
	t.Helper()
	resp := rawPost(t, e.url, "Bearer "+token, "", initBody)
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		require.Fail(t, fmt.Sprintf("initialize: %s %s", resp.Status, b))
	}
	return resp.Header.Get("Mcp-Session-Id")
}

// algNone returns an unsigned JWT ("alg": "none") with the claims.
func algNone(claims map[string]any) string {
	h := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`))
	p, _ := json.Marshal(claims)
	return h + "." + base64.RawURLEncoding.EncodeToString(p) + "."
}

// hs256WithPublicKey returns a JWT whose HMAC key is the issuer's public key (PEM and DER
// forms were both tried in the wild): the algorithm-confusion attack.
func hs256WithPublicKey(t *testing.T, pub *ecdsa.PublicKey, claims map[string]any) string {
	der, err := x509.MarshalPKIXPublicKey(pub)
	require.NoError(t, err)
	key := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	h := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`))
	p, _ := json.Marshal(claims)
	signing := h + "." + base64.RawURLEncoding.EncodeToString(p)
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(signing))
	return signing + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// foreignToken is signed by a key the issuer never published, with the issuer's key ID.
func foreignToken(t *testing.T, claims map[string]any) string {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key}, nil)
	require.NoError(t, err)
	tok, err := jwt.Signed(s).Claims(claims).Serialize()
	require.NoError(t, err)
	return tok
}

// TestAuthRefusesBadTokens: every bad token gets 401 with a WWW-Authenticate challenge naming
// the metadata, whether it starts a session or calls a tool on one, and no handler runs.
func TestAuthRefusesBadTokens(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	now := time.Now()
	good := map[string]any{"iss": e.issuer.URL, "aud": e.resource, "sub": "mallory", "exp": now.Add(time.Hour).Unix()}
	with := func(k string, v any) map[string]any {
		c := map[string]any{}
		for k2, v2 := range good {
			c[k2] = v2
		}
		c[k] = v
		return c
	}
	other, err := testissuer.Start()
	require.NoError(t, err)
	defer other.Close()
	sid := e.session(t, e.token("alice"))
	for _, tc := range []struct {
		name, header, errCode string
	}{
		{"no token", "", ""},
		{"not bearer", "Basic YWxpY2U6c2VjcmV0", ""},
		{"empty bearer", "Bearer ", ""},
		{"malformed", "Bearer not.a.jwt", "invalid_token"},
		{"expired", "Bearer " + e.issuer.Mint(with("exp", now.Add(-10*time.Minute).Unix())), "invalid_token"},
		{"not yet valid", "Bearer " + e.issuer.Mint(with("nbf", now.Add(10*time.Minute).Unix())), "invalid_token"},
		{"no exp", "Bearer " + e.issuer.Mint(with("exp", nil)), "invalid_token"},
		{"wrong audience", "Bearer " + e.issuer.Mint(with("aud", "https://other.example.com/mcp")), "invalid_token"},
		{"wrong issuer", "Bearer " + e.issuer.Mint(with("iss", "https://evil.example.com")), "invalid_token"},
		{"another issuer's key", "Bearer " + other.Mint(with("iss", e.issuer.URL)), "invalid_token"},
		{"unknown key", "Bearer " + foreignToken(t, good), "invalid_token"},
		{"alg none", "Bearer " + algNone(good), "invalid_token"},
		{"HS256 signed with the public key", "Bearer " + hs256WithPublicKey(t, e.issuer.PublicKey(), good), "invalid_token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, step := range []struct{ session, body string }{{"", initBody}, {sid, whoamiBody}} {
				resp := rawPost(t, e.url, tc.header, step.session, step.body)
				require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "status %s", resp.Status)
				wa := resp.Header.Get("WWW-Authenticate")
				assert.True(t, strings.HasPrefix(wa, "Bearer "), "WWW-Authenticate %q", wa)
				assert.Contains(t, wa, `resource_metadata="`+e.pr.WellKnownURL()+`"`, "WWW-Authenticate")
				if tc.errCode != "" {
					assert.Contains(t, wa, `error="`+tc.errCode+`"`, "WWW-Authenticate")
				}
				var body struct {
					Error struct{ Message string }
				}
				require.NoError(t, json.NewDecoder(resp.Body).Decode(&body), "body")
				assert.NotEmpty(t, body.Error.Message, "the body's error message")
			}
		})
	}
	assert.Zero(t, e.calls.Load(), "handler runs for refused requests")
	// The server keeps serving.
	resp := rawPost(t, e.url, "Bearer "+e.token("alice"), sid, whoamiBody)
	assert.Equal(t, http.StatusOK, resp.StatusCode, "a good token after the bad ones: %s", resp.Status)
}

// TestAuthToolScopes: a tool that needs a scope the token lacks gets 403 insufficient_scope
// with the scopes to ask for, before its handler runs; the same token calls other tools, and
// a token with the scope calls it.
func TestAuthToolScopes(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	read := e.token("alice", "weather:read")
	sid := e.session(t, read)
	resp := rawPost(t, e.url, "Bearer "+read, sid, setBody)
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "status %s", resp.Status)
	wa := resp.Header.Get("WWW-Authenticate")
	for _, want := range []string{`error="insufficient_scope"`, `scope="weather:read weather:write"`, `resource_metadata="` + e.pr.WellKnownURL() + `"`} {
		assert.Contains(t, wa, want, "WWW-Authenticate")
	}
	var body struct {
		ID    int
		Error struct{ Message string }
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body), "body")
	assert.Equal(t, 3, body.ID, "the body's id")
	assert.Contains(t, body.Error.Message, "weather:write", "the body's error message")
	require.Zero(t, e.calls.Load(), "handler runs")
	resp = rawPost(t, e.url, "Bearer "+read, sid, whoamiBody)
	require.Equal(t, http.StatusOK, resp.StatusCode, "whoami with weather:read: %s", resp.Status)
	// A stepped-up token of the same identity may use the same session.
	write := e.token("alice", "weather:read", "weather:write")
	resp = rawPost(t, e.url, "Bearer "+write, sid, setBody)
	require.Equal(t, http.StatusOK, resp.StatusCode, "set_forecast with weather:write: %s", resp.Status)
	assert.EqualValues(t, 2, e.calls.Load(), "handler runs")
}

// TestAuthServerScopes: ProtectedResource.Scopes are needed by every request and named in
// the 401 challenge.
func TestAuthServerScopes(t *testing.T) {
	t.Parallel()
	is, err := testissuer.Start()
	require.NoError(t, err)
	defer is.Close()
	v, err := jwtauth.NewVerifier(jwtauth.Config{Issuer: is.URL, Audience: "http://mcp.test/mcp"})
	require.NoError(t, err)
	pr := runtime.ProtectedResource{Resource: "http://mcp.test/mcp", AuthorizationServers: []string{is.URL}, Scopes: []string{"mcp"}}
	srv := runtime.NewServer(runtime.Implementation{}, runtime.WithTokenVerifier(v, pr))
	ts := httptest.NewServer(srv)
	defer ts.Close()
	defer srv.Shutdown(context.Background())
	resp := rawPost(t, ts.URL, "", "", initBody)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "without a token: %s", resp.Status)
	wa := resp.Header.Get("WWW-Authenticate")
	assert.Contains(t, wa, `scope="mcp"`, "WWW-Authenticate without a token")
	assert.Contains(t, wa, `resource_metadata="http://mcp.test/.well-known/oauth-protected-resource/mcp"`, "WWW-Authenticate without a token")
	resp = rawPost(t, ts.URL, "Bearer "+is.Mint(map[string]any{"aud": "http://mcp.test/mcp", "scope": "other"}), "", initBody)
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "without the scope: %s", resp.Status)
	wa = resp.Header.Get("WWW-Authenticate")
	assert.Contains(t, wa, `error="insufficient_scope"`, "WWW-Authenticate without the scope")
	assert.Contains(t, wa, `scope="mcp"`, "WWW-Authenticate without the scope")
	resp = rawPost(t, ts.URL, "Bearer "+is.Mint(map[string]any{"aud": "http://mcp.test/mcp", "scope": "mcp other"}), "", initBody)
	assert.Equal(t, http.StatusOK, resp.StatusCode, "with the scope: %s", resp.Status)
	// Mounted at the root, the server serves its metadata itself, without a token.
	mresp, err := http.Get(ts.URL + "/.well-known/oauth-protected-resource/mcp")
	require.NoError(t, err)
	defer mresp.Body.Close()
	require.Equal(t, http.StatusOK, mresp.StatusCode, "metadata: %s", mresp.Status)
	var md runtime.ProtectedResourceMetadata
	require.NoError(t, json.NewDecoder(mresp.Body).Decode(&md), "metadata")
	assert.Equal(t, pr.Resource, md.Resource, "metadata resource")
	assert.Equal(t, []string{is.URL}, md.AuthorizationServers, "metadata authorization servers")
	assert.Equal(t, []string{"mcp"}, md.ScopesSupported, "metadata scopes")
	assert.Equal(t, "*", mresp.Header.Get("Access-Control-Allow-Origin"), "metadata CORS")
}

// TestAuthSessionBoundToIdentity: a session started with one user's token refuses another
// user's token (403), for every method, and no handler runs; its owner keeps using it.
func TestAuthSessionBoundToIdentity(t *testing.T) {
	e := newAuthEnv(t)
	sid := e.session(t, e.token("alice", "weather:read", "weather:write"))
	bob := "Bearer " + e.token("bob", "weather:read", "weather:write")
	for _, body := range []string{whoamiBody, setBody, `{"jsonrpc":"2.0","method":"notifications/initialized"}`} {
		resp := rawPost(t, e.url, bob, sid, body)
		require.Equal(t, http.StatusForbidden, resp.StatusCode, "bob on alice's session: %s", resp.Status)
		b, _ := io.ReadAll(resp.Body)
		assert.Contains(t, string(b), "another identity", "body")
	}
	for _, method := range []string{http.MethodGet, http.MethodDelete} {
		req, _ := http.NewRequest(method, e.url, nil)
		req.Header.Set("Authorization", bob)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Mcp-Session-Id", sid)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusForbidden, resp.StatusCode, "bob's %s on alice's session: %s", method, resp.Status)
	}
	require.Zero(t, e.calls.Load(), "handler runs for bob")
	resp := rawPost(t, e.url, "Bearer "+e.token("alice"), sid, whoamiBody)
	assert.Equal(t, http.StatusOK, resp.StatusCode, "alice on her session: %s", resp.Status)
}

// TestAuthVerifierUnavailable: a verifier that cannot check tokens (its issuer is down) is a
// 503, not a 401 that would send clients to log in again.
func TestAuthVerifierUnavailable(t *testing.T) {
	t.Parallel()
	is, err := testissuer.Start()
	require.NoError(t, err)
	tok := is.Mint(map[string]any{"aud": "http://mcp.test/"})
	v, err := jwtauth.NewVerifier(jwtauth.Config{Issuer: is.URL, Audience: "http://mcp.test/"})
	require.NoError(t, err)
	is.Close() // the keys cannot be fetched
	srv := runtime.NewServer(runtime.Implementation{}, runtime.WithTokenVerifier(v, runtime.ProtectedResource{Resource: "http://mcp.test/"}))
	ts := httptest.NewServer(srv)
	defer ts.Close()
	defer srv.Shutdown(context.Background())
	resp := rawPost(t, ts.URL, "Bearer "+tok, "", initBody)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "%s", resp.Status)
}

// TestAuthMiddlewareIdentity: a TokenInfo set by the user's own HTTP middleware reaches
// handlers, binds sessions and is checked against tools' scopes, without a TokenVerifier.
func TestAuthMiddlewareIdentity(t *testing.T) {
	srv := runtime.NewServer(runtime.Implementation{})
	var calls atomic.Int64
	handler := func(ctx context.Context, _ *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		calls.Add(1)
		return &runtime.CallToolResult{Content: []runtime.Content{runtime.TextContent(runtime.TokenInfoFrom(ctx).Subject)}}, nil
	}
	srv.AddTool(runtime.ToolSpec{Name: "whoami"}, handler)
	srv.AddTool(runtime.ToolSpec{Name: "set_forecast", Scopes: []string{"admin"}}, handler)
	// A stand-in for an API-key middleware: the key names the user.
	mw := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user := r.Header.Get("X-User")
		if user == "" {
			http.Error(w, "no user", http.StatusUnauthorized)
			return
		}
		info := &runtime.TokenInfo{Subject: user, Issuer: "api-keys", Scopes: strings.Fields(r.Header.Get("X-Scopes"))}
		srv.ServeHTTP(w, r.WithContext(runtime.ContextWithTokenInfo(r.Context(), info)))
	})
	ts := httptest.NewServer(mw)
	defer ts.Close()
	defer srv.Shutdown(context.Background())
	ctx := testCtx(t)
	c := runtime.NewClient(ts.URL, runtime.WithEra(runtime.EraLegacy), runtime.WithHeader("X-User", "carol")) // sessions bound to an identity
	defer c.Close(ctx)
	res, err := c.CallTool(ctx, "whoami", nil)
	require.NoError(t, err)
	require.Equal(t, "carol", resultText(t, res), "the subject the handler saw")
	_, err = c.CallTool(ctx, "set_forecast", nil)
	var he *runtime.HTTPError
	require.ErrorAs(t, err, &he, "set_forecast without admin")
	require.Equal(t, http.StatusForbidden, he.StatusCode, "set_forecast without admin: %v", err)
	do := func(user string) int {
		req, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(whoamiBody))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", c.SessionID())
		req.Header.Set("X-User", user)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, http.StatusForbidden, do("dave"), "dave on carol's session")
	assert.EqualValues(t, 1, calls.Load(), "handler runs")
}

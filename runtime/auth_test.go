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
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(is.Close)
	e := &authEnv{issuer: is}
	mux := http.NewServeMux()
	e.ts = httptest.NewServer(mux)
	e.url = e.ts.URL + "/mcp"
	e.resource = e.url
	v, err := jwtauth.NewVerifier(jwtauth.Config{Issuer: is.URL, Audience: e.resource})
	if err != nil {
		t.Fatal(err)
	}
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
	if len(r.Content) == 0 {
		t.Fatalf("empty result")
	}
	return r.Content[0].Text
}

// TestAuthTokenInfoReachesHandlers: the verified token's identity is what handlers and
// interceptors see, in JSON and SSE response modes and when the answer comes on a resumed
// stream.
func TestAuthTokenInfoReachesHandlers(t *testing.T) {
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
				if err != nil {
					t.Fatalf("%s: %v", tool, err)
				}
				if got := resultText(t, res); got != "alice" {
					t.Fatalf("%s: handler saw %q, want alice", tool, got)
				}
			}
			e.mu.Lock()
			defer e.mu.Unlock()
			for _, info := range e.seen {
				if info == nil || info.Subject != "alice" || info.Issuer != e.issuer.URL || info.ClientID != "test-client" ||
					!info.HasScope("weather:read") || info.Expiry.IsZero() || info.Claims["jti"] == nil {
					t.Fatalf("handler's TokenInfo: %+v", info)
				}
			}
			if len(e.icept) < 3 { // initialize, whoami, poll
				t.Fatalf("the interceptor ran %d times", len(e.icept))
			}
			for _, info := range e.icept {
				if info == nil || info.Subject != "alice" {
					t.Fatalf("interceptor's TokenInfo: %+v", info)
				}
			}
		})
	}
}

// rawPost sends one JSON-RPC message with the given bearer token (none when "").
func rawPost(t *testing.T, url, token, session, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
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
	if err != nil {
		t.Fatal(err)
	}
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
		t.Fatalf("initialize: %s %s", resp.Status, b)
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
	if err != nil {
		t.Fatal(err)
	}
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
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(s).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestAuthRefusesBadTokens: every bad token gets 401 with a WWW-Authenticate challenge naming
// the metadata, whether it starts a session or calls a tool on one, and no handler runs.
func TestAuthRefusesBadTokens(t *testing.T) {
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
	if err != nil {
		t.Fatal(err)
	}
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
				if resp.StatusCode != http.StatusUnauthorized {
					t.Fatalf("status %s, want 401", resp.Status)
				}
				wa := resp.Header.Get("WWW-Authenticate")
				if !strings.HasPrefix(wa, "Bearer ") || !strings.Contains(wa, `resource_metadata="`+e.pr.WellKnownURL()+`"`) {
					t.Fatalf("WWW-Authenticate %q", wa)
				}
				if tc.errCode != "" && !strings.Contains(wa, `error="`+tc.errCode+`"`) {
					t.Fatalf("WWW-Authenticate %q lacks error=%q", wa, tc.errCode)
				}
				var body struct {
					Error struct{ Message string }
				}
				if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body.Error.Message == "" {
					t.Fatalf("body: %v %+v", err, body)
				}
			}
		})
	}
	if n := e.calls.Load(); n != 0 {
		t.Fatalf("handlers ran %d times for refused requests", n)
	}
	// The server keeps serving.
	resp := rawPost(t, e.url, "Bearer "+e.token("alice"), sid, whoamiBody)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("a good token after the bad ones: %s", resp.Status)
	}
}

// TestAuthToolScopes: a tool that needs a scope the token lacks gets 403 insufficient_scope
// with the scopes to ask for, before its handler runs; the same token calls other tools, and
// a token with the scope calls it.
func TestAuthToolScopes(t *testing.T) {
	e := newAuthEnv(t)
	read := e.token("alice", "weather:read")
	sid := e.session(t, read)
	resp := rawPost(t, e.url, "Bearer "+read, sid, setBody)
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("status %s, want 403", resp.Status)
	}
	wa := resp.Header.Get("WWW-Authenticate")
	for _, want := range []string{`error="insufficient_scope"`, `scope="weather:read weather:write"`, `resource_metadata="` + e.pr.WellKnownURL() + `"`} {
		if !strings.Contains(wa, want) {
			t.Fatalf("WWW-Authenticate %q lacks %s", wa, want)
		}
	}
	var body struct {
		ID    int
		Error struct{ Message string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body.ID != 3 || !strings.Contains(body.Error.Message, "weather:write") {
		t.Fatalf("body: %v %+v", err, body)
	}
	if n := e.calls.Load(); n != 0 {
		t.Fatalf("the handler ran %d times", n)
	}
	if resp := rawPost(t, e.url, "Bearer "+read, sid, whoamiBody); resp.StatusCode != http.StatusOK {
		t.Fatalf("whoami with weather:read: %s", resp.Status)
	}
	// A stepped-up token of the same identity may use the same session.
	write := e.token("alice", "weather:read", "weather:write")
	if resp := rawPost(t, e.url, "Bearer "+write, sid, setBody); resp.StatusCode != http.StatusOK {
		t.Fatalf("set_forecast with weather:write: %s", resp.Status)
	}
	if n := e.calls.Load(); n != 2 {
		t.Fatalf("handlers ran %d times, want 2", n)
	}
}

// TestAuthServerScopes: ProtectedResource.Scopes are needed by every request and named in
// the 401 challenge.
func TestAuthServerScopes(t *testing.T) {
	is, err := testissuer.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer is.Close()
	v, err := jwtauth.NewVerifier(jwtauth.Config{Issuer: is.URL, Audience: "http://mcp.test/mcp"})
	if err != nil {
		t.Fatal(err)
	}
	pr := runtime.ProtectedResource{Resource: "http://mcp.test/mcp", AuthorizationServers: []string{is.URL}, Scopes: []string{"mcp"}}
	srv := runtime.NewServer(runtime.Implementation{}, runtime.WithTokenVerifier(v, pr))
	ts := httptest.NewServer(srv)
	defer ts.Close()
	defer srv.Shutdown(context.Background())
	resp := rawPost(t, ts.URL, "", "", initBody)
	if wa := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != 401 || !strings.Contains(wa, `scope="mcp"`) ||
		!strings.Contains(wa, `resource_metadata="http://mcp.test/.well-known/oauth-protected-resource/mcp"`) {
		t.Fatalf("%s %q", resp.Status, wa)
	}
	resp = rawPost(t, ts.URL, "Bearer "+is.Mint(map[string]any{"aud": "http://mcp.test/mcp", "scope": "other"}), "", initBody)
	if wa := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != 403 || !strings.Contains(wa, `error="insufficient_scope"`) || !strings.Contains(wa, `scope="mcp"`) {
		t.Fatalf("%s %q", resp.Status, wa)
	}
	resp = rawPost(t, ts.URL, "Bearer "+is.Mint(map[string]any{"aud": "http://mcp.test/mcp", "scope": "mcp other"}), "", initBody)
	if resp.StatusCode != 200 {
		t.Fatalf("%s", resp.Status)
	}
	// Mounted at the root, the server serves its metadata itself, without a token.
	mresp, err := http.Get(ts.URL + "/.well-known/oauth-protected-resource/mcp")
	if err != nil {
		t.Fatal(err)
	}
	defer mresp.Body.Close()
	var md runtime.ProtectedResourceMetadata
	if err := json.NewDecoder(mresp.Body).Decode(&md); err != nil || mresp.StatusCode != 200 {
		t.Fatalf("metadata: %s %v", mresp.Status, err)
	}
	if md.Resource != pr.Resource || md.AuthorizationServers[0] != is.URL || md.ScopesSupported[0] != "mcp" || mresp.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("metadata %+v", md)
	}
}

// TestAuthSessionBoundToIdentity: a session started with one user's token refuses another
// user's token (403), for every method, and no handler runs; its owner keeps using it.
func TestAuthSessionBoundToIdentity(t *testing.T) {
	e := newAuthEnv(t)
	sid := e.session(t, e.token("alice", "weather:read", "weather:write"))
	bob := "Bearer " + e.token("bob", "weather:read", "weather:write")
	for _, body := range []string{whoamiBody, setBody, `{"jsonrpc":"2.0","method":"notifications/initialized"}`} {
		resp := rawPost(t, e.url, bob, sid, body)
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("bob on alice's session: %s, want 403", resp.Status)
		}
		b, _ := io.ReadAll(resp.Body)
		if !strings.Contains(string(b), "another identity") {
			t.Fatalf("body %s", b)
		}
	}
	for _, method := range []string{http.MethodGet, http.MethodDelete} {
		req, _ := http.NewRequest(method, e.url, nil)
		req.Header.Set("Authorization", bob)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Mcp-Session-Id", sid)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("bob's %s on alice's session: %s", method, resp.Status)
		}
	}
	if n := e.calls.Load(); n != 0 {
		t.Fatalf("handlers ran %d times for bob", n)
	}
	if resp := rawPost(t, e.url, "Bearer "+e.token("alice"), sid, whoamiBody); resp.StatusCode != 200 {
		t.Fatalf("alice on her session: %s", resp.Status)
	}
}

// TestAuthVerifierUnavailable: a verifier that cannot check tokens (its issuer is down) is a
// 503, not a 401 that would send clients to log in again.
func TestAuthVerifierUnavailable(t *testing.T) {
	is, err := testissuer.Start()
	if err != nil {
		t.Fatal(err)
	}
	tok := is.Mint(map[string]any{"aud": "http://mcp.test/"})
	v, err := jwtauth.NewVerifier(jwtauth.Config{Issuer: is.URL, Audience: "http://mcp.test/"})
	if err != nil {
		t.Fatal(err)
	}
	is.Close() // the keys cannot be fetched
	srv := runtime.NewServer(runtime.Implementation{}, runtime.WithTokenVerifier(v, runtime.ProtectedResource{Resource: "http://mcp.test/"}))
	ts := httptest.NewServer(srv)
	defer ts.Close()
	defer srv.Shutdown(context.Background())
	if resp := rawPost(t, ts.URL, "Bearer "+tok, "", initBody); resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("%s, want 503", resp.Status)
	}
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
	if err != nil || resultText(t, res) != "carol" {
		t.Fatalf("%v %+v", err, res)
	}
	_, err = c.CallTool(ctx, "set_forecast", nil)
	var he *runtime.HTTPError
	if !errors.As(err, &he) || he.StatusCode != http.StatusForbidden {
		t.Fatalf("set_forecast without admin: %v", err)
	}
	do := func(user string) int {
		req, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(whoamiBody))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", c.SessionID())
		req.Header.Set("X-User", user)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := do("dave"); got != http.StatusForbidden {
		t.Fatalf("dave on carol's session: %d", got)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("handlers ran %d times, want 1", n)
	}
}

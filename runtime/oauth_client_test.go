package runtime_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"golang.org/x/oauth2"

	"github.com/protomcp/protomcp/internal/testissuer"
	"github.com/protomcp/protomcp/jwtauth"
	"github.com/protomcp/protomcp/runtime"
)

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
func oauthClient(t *testing.T, serverURL string, store runtime.TokenStore) (*runtime.Client, *browser) {
	t.Helper()
	lr, err := runtime.NewLoopbackRedirect("/callback")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lr.Close() })
	b := new(browser)
	c := runtime.NewClient(serverURL, runtime.WithOAuth(runtime.OAuthConfig{
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
	ctx := testCtx(t)
	e := newAuthEnv(t)
	store := new(runtime.MemoryTokenStore)
	c, b := oauthClient(t, e.url, store)
	for range 2 {
		res, err := c.CallTool(ctx, "whoami", nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := resultText(t, res); got != "alice" {
			t.Fatalf("whoami: %q", got)
		}
	}
	auths := b.authorizations()
	if len(auths) != 1 {
		t.Fatalf("%d authorizations, want 1", len(auths))
	}
	q := auths[0].Query()
	if q.Get("resource") != e.resource || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" ||
		q.Get("scope") != "weather:read weather:write" || !strings.HasPrefix(q.Get("client_id"), "client-") {
		t.Fatalf("authorization request %v", q)
	}
	tok, err := store.Token(ctx, e.resource)
	if err != nil || tok == nil || tok.RefreshToken == "" {
		t.Fatalf("stored token %+v %v", tok, err)
	}
	// An expired token is refreshed, and the user is not asked again.
	expired := *tok
	expired.Expiry = time.Now().Add(-time.Hour)
	if err := store.SetToken(ctx, e.resource, &expired); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CallTool(ctx, "whoami", nil); err != nil {
		t.Fatal(err)
	}
	if n := len(b.authorizations()); n != 1 {
		t.Fatalf("%d authorizations after the refresh, want 1", n)
	}
	fresh, _ := store.Token(ctx, e.resource)
	if fresh.AccessToken == tok.AccessToken || !fresh.Valid() {
		t.Fatalf("the token was not refreshed: %+v", fresh)
	}
}

// TestOAuthStepUp: a tool needing a scope the token lacks gets 403 insufficient_scope; the
// client re-authorizes with the scopes of the challenge, keeping those it had, and retries.
func TestOAuthStepUp(t *testing.T) {
	ctx := testCtx(t)
	e := newAuthEnvWith(t, nil, func(pr *runtime.ProtectedResource) { pr.ScopesSupported = []string{"weather:read"} })
	c, b := oauthClient(t, e.url, nil)
	if _, err := c.CallTool(ctx, "whoami", nil); err != nil {
		t.Fatal(err)
	}
	res, err := c.CallTool(ctx, "set_forecast", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := resultText(t, res); got != "alice" {
		t.Fatalf("set_forecast: %q", got)
	}
	auths := b.authorizations()
	if len(auths) != 2 {
		t.Fatalf("%d authorizations, want 2", len(auths))
	}
	if s := auths[0].Query().Get("scope"); s != "weather:read" {
		t.Fatalf("first scope %q", s)
	}
	if s := strings.Fields(auths[1].Query().Get("scope")); len(s) != 2 || s[0] != "weather:read" || s[1] != "weather:write" {
		t.Fatalf("step-up scope %q", s)
	}
	if n := e.calls.Load(); n != 2 {
		t.Fatalf("handlers ran %d times, want 2", n)
	}
}

// TestOAuthStepUpBounded: a server that keeps answering 403 insufficient_scope gets a
// bounded number of re-authorizations, then the 403 is the call's error.
func TestOAuthStepUpBounded(t *testing.T) {
	ctx := testCtx(t)
	is, err := testissuer.Start()
	if err != nil {
		t.Fatal(err)
	}
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
	if !errors.As(err, &he) || he.StatusCode != http.StatusForbidden {
		t.Fatalf("Connect: %v, want the 403", err)
	}
	if n := len(b.authorizations()); n != 3 {
		t.Fatalf("%d authorizations, want 3 (one, then two step-ups)", n)
	}
}

// TestOAuthClientCredentials: a client acting on its own behalf gets its token with the
// client_credentials grant and its secret; the server sees the client as the subject.
func TestOAuthClientCredentials(t *testing.T) {
	ctx := testCtx(t)
	e := newAuthEnvWith(t, []testissuer.Option{testissuer.WithClient("reporter", "s3cret")}, nil)
	c := runtime.NewClient(e.url, runtime.WithOAuth(runtime.OAuthConfig{
		Grant: runtime.GrantClientCredentials, ClientID: "reporter", ClientSecret: "s3cret",
	}))
	defer c.Close(ctx)
	res, err := c.CallTool(ctx, "whoami", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := resultText(t, res); got != "reporter" {
		t.Fatalf("whoami: %q", got)
	}
	// A wrong secret is an error that says where it failed.
	bad := runtime.NewClient(e.url, runtime.WithOAuth(runtime.OAuthConfig{
		Grant: runtime.GrantClientCredentials, ClientID: "reporter", ClientSecret: "wrong",
	}))
	defer bad.Close(ctx)
	_, err = bad.CallTool(ctx, "whoami", nil)
	var re *oauth2.RetrieveError
	if !errors.Is(err, runtime.ErrOAuth) || !errors.As(err, &re) || re.ErrorCode != "invalid_client" {
		t.Fatalf("wrong secret: %v", err)
	}
}

// TestOAuthRefusesForeignResource: metadata naming another resource stops the client before
// it asks anyone for a token.
func TestOAuthRefusesForeignResource(t *testing.T) {
	ctx := testCtx(t)
	var srvURL string
	e := newAuthEnvWith(t, nil, func(pr *runtime.ProtectedResource) {
		srvURL = pr.Resource
		pr.MetadataURL = pr.WellKnownURL()
		pr.Resource = "https://evil.example.com/mcp"
	})
	c, b := oauthClient(t, srvURL, nil)
	_, err := c.CallTool(ctx, "whoami", nil)
	if !errors.Is(err, runtime.ErrOAuth) || !strings.Contains(err.Error(), "refusing to authorize") {
		t.Fatalf("err %v", err)
	}
	if n := len(b.authorizations()); n != 0 || e.calls.Load() != 0 {
		t.Fatalf("%d authorizations, %d calls", n, e.calls.Load())
	}
}

// TestOAuthPrivateKeyJWT: client_credentials with a private_key_jwt client assertion (RFC
// 7523 Section 2.2) instead of a secret.
func TestOAuthPrivateKeyJWT(t *testing.T) {
	ctx := testCtx(t)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	e := newAuthEnvWith(t, []testissuer.Option{testissuer.WithKeyClient("robot", &key.PublicKey)}, nil)
	assert, err := jwtauth.PrivateKeyJWT("robot", key, jose.ES256, "robot-key-1")
	if err != nil {
		t.Fatal(err)
	}
	c := runtime.NewClient(e.url, runtime.WithOAuth(runtime.OAuthConfig{
		Grant: runtime.GrantClientCredentials, ClientID: "robot", ClientAssertion: assert,
	}))
	defer c.Close(ctx)
	res, err := c.CallTool(ctx, "whoami", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := resultText(t, res); got != "robot" {
		t.Fatalf("whoami: %q", got)
	}
	// Another key's assertion is refused at the token endpoint.
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	forged, _ := jwtauth.PrivateKeyJWT("robot", other, jose.ES256, "")
	bad := runtime.NewClient(e.url, runtime.WithOAuth(runtime.OAuthConfig{
		Grant: runtime.GrantClientCredentials, ClientID: "robot", ClientAssertion: forged,
	}))
	defer bad.Close(ctx)
	if _, err := bad.CallTool(ctx, "whoami", nil); !errors.Is(err, runtime.ErrOAuth) || !strings.Contains(err.Error(), "invalid_client") {
		t.Fatalf("forged assertion: %v", err)
	}
}

// TestOAuthEnterpriseManaged: SEP-990. The user's ID token from the enterprise IdP is
// exchanged there for an ID-JAG (RFC 8693), which the MCP server's authorization server takes
// in the JWT bearer grant (RFC 7523); the server sees the IdP's user.
func TestOAuthEnterpriseManaged(t *testing.T) {
	ctx := testCtx(t)
	idp, err := testissuer.Start(testissuer.WithSubject("erin"), testissuer.WithClient("mcp-at-idp", "idp-secret"))
	if err != nil {
		t.Fatal(err)
	}
	defer idp.Close()
	e := newAuthEnvWith(t, []testissuer.Option{testissuer.WithAssertionIssuer(idp), testissuer.WithClient("mcp-client", "as-secret")}, nil)
	c := runtime.NewClient(e.url, runtime.WithOAuth(runtime.OAuthConfig{
		Grant: runtime.GrantJWTBearer, ClientID: "mcp-client", ClientSecret: "as-secret",
		JWTBearerAssertion: runtime.IDJAGAssertion(runtime.IDJAGConfig{
			TokenEndpoint: idp.URL + "/token", ClientID: "mcp-at-idp", ClientSecret: "idp-secret",
			IDToken: func(context.Context) (string, error) {
				return idp.Mint(map[string]any{"aud": "mcp-at-idp"}), nil // the user's SSO
			},
		}),
	}))
	defer c.Close(ctx)
	res, err := c.CallTool(ctx, "whoami", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := resultText(t, res); got != "erin" {
		t.Fatalf("whoami: %q", got)
	}
}

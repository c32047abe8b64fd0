package oauth

import (
	"bytes"
	"cmp"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/protomcp/protomcp/internal/origin"
	"github.com/protomcp/protomcp/runtime"
)

// Grant is how an OAuth client obtains its access tokens.
type Grant int

const (
	// GrantAuthorizationCode is the authorization code grant with PKCE (S256), for clients
	// acting for a user: the user approves in a browser (Config.Authorize).
	GrantAuthorizationCode Grant = iota
	// GrantClientCredentials is the client_credentials grant, for clients acting on their own
	// behalf, authenticated with a client secret or a signed JWT (Config.ClientAssertion).
	GrantClientCredentials
	// GrantJWTBearer is the JWT bearer grant (RFC 7523) with an assertion from
	// Config.JWTBearerAssertion, e.g. an identity assertion authorization grant obtained
	// from an enterprise identity provider by token exchange (SEP-990; see IDJAGAssertion).
	GrantJWTBearer
)

// Config configures a runtime.Client's OAuth 2.1 authorization (WithOAuth), following the MCP
// spec's Authorization section.
type Config struct {
	// Grant is how tokens are obtained (default GrantAuthorizationCode).
	Grant Grant

	// ClientID and ClientSecret are a client pre-registered with the authorization server.
	// Without a ClientID, the client uses ClientMetadataURL when the server supports Client
	// ID Metadata Documents, otherwise Dynamic Client Registration (RFC 7591).
	//
	// Client credentials are bound to the authorization server that issued them (spec
	// 2026-07-28, Authorization, Client Registration, Authorization Server Binding): when the
	// protected resource's metadata names another authorization server, the client
	// registers again there and never presents the first server's credentials or tokens to
	// it; pre-registered credentials are then an error.
	ClientID, ClientSecret string
	// ClientIssuer is the issuer identifier of the authorization server ClientID is
	// registered with. When set, the client refuses to present ClientID to any other; when
	// empty, ClientID is bound to the first authorization server the client uses.
	ClientIssuer string
	// ClientMetadataURL is the https URL of the client's metadata document, used as its
	// client_id with authorization servers that advertise
	// client_id_metadata_document_supported.
	ClientMetadataURL string
	// ClientName is the client_name to register dynamically (default "protomcp client").
	ClientName string
	// ApplicationType is the application_type to register dynamically: "native" for
	// desktop, mobile and command-line clients and web applications served from localhost,
	// "web" for browser-based applications served from a remote host (spec 2026-07-28,
	// Authorization, Client Registration, Application Type and Redirect URI Constraints).
	// By default it is "native" when RedirectURL is a loopback or private-use scheme URI
	// (RFC 8252 Sections 7.1 and 7.3), else "web".
	ApplicationType string
	// TokenEndpointAuthMethod forces how the client authenticates at the token endpoint
	// ("none", "client_secret_basic", "client_secret_post", "private_key_jwt"). By default it
	// picks one the authorization server supports.
	TokenEndpointAuthMethod string
	// ClientAssertion signs a private_key_jwt client assertion (RFC 7523 Section 2.2) for the
	// given audience (the authorization server's issuer). Setting it selects private_key_jwt;
	// jwtauth.PrivateKeyJWT makes one.
	ClientAssertion func(ctx context.Context, audience string) (string, error)

	// RedirectURL is where the authorization server sends the user back with the code
	// (authorization code grant). LoopbackRedirect provides one for command-line tools.
	RedirectURL string
	// Authorize shows the user the authorization URL (opens a browser, prints it) and returns
	// the URL the authorization server redirected back to, carrying the code and state.
	// Required for the authorization code grant.
	Authorize func(ctx context.Context, authURL string) (*url.URL, error)

	// JWTBearerAssertion returns the assertion of the JWT bearer grant, for the authorization
	// server (its metadata) and the resource. Required for GrantJWTBearer.
	JWTBearerAssertion func(ctx context.Context, as *AuthServerMetadata, resource string) (string, error)

	// Scopes, when set, are requested in addition to those the spec's Scope Selection
	// Strategy picks (the challenge's scope, else the resource's scopes_supported).
	Scopes []string
	// TokenStore keeps tokens between calls and runs (default: in memory).
	TokenStore TokenStore
	// HTTPClient talks to the authorization server and fetches metadata (default: a client
	// with a 30 s timeout).
	HTTPClient *http.Client
	// MaxStepUps bounds the re-authorizations for one request answered 403
	// insufficient_scope (default 2).
	MaxStepUps int

	// DPoPKey, when set, sender-constrains the access tokens with DPoP (RFC 9449; the MCP
	// DPoP extension, SEP-1932): every token request carries a proof signed with the key, the
	// authorization code is bound to it (dpop_jkt, asked of authorization servers that list
	// ES256 in dpop_signing_alg_values_supported), and a token the authorization server
	// issues as DPoP-bound is presented with the DPoP scheme and a fresh proof on every
	// request, with the nonce a server asks for. An authorization server without DPoP
	// issues bearer tokens, which are used as such. It must be an ECDSA P-256 key (ES256),
	// and the same across runs that share a TokenStore: the stored tokens are bound to it.
	DPoPKey crypto.Signer
}

// TokenStore keeps a Client's OAuth tokens, keyed by the resource they are for.
type TokenStore interface {
	// Token returns the stored token for key, or nil.
	Token(ctx context.Context, key string) (*oauth2.Token, error)
	// SetToken stores tok for key.
	SetToken(ctx context.Context, key string, tok *oauth2.Token) error
}

// MemoryTokenStore is a TokenStore in memory, the default. Its zero value is ready to use.
type MemoryTokenStore struct {
	mu     sync.Mutex
	tokens map[string]*oauth2.Token
}

// Token implements TokenStore.
func (m *MemoryTokenStore) Token(_ context.Context, key string) (*oauth2.Token, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.tokens[key], nil
}

// SetToken implements TokenStore.
func (m *MemoryTokenStore) SetToken(_ context.Context, key string, tok *oauth2.Token) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.tokens == nil {
		m.tokens = map[string]*oauth2.Token{}
	}
	m.tokens[key] = tok
	return nil
}

// AuthServerMetadata is an authorization server's metadata (RFC 8414 Section 2, and the
// OpenID Connect Discovery fields MCP uses).
type AuthServerMetadata struct {
	// Issuer is the authorization server's issuer identifier.
	Issuer string `json:"issuer"`
	// AuthorizationEndpoint is where the user authorizes (authorization code grant).
	AuthorizationEndpoint string `json:"authorization_endpoint,omitempty"`
	// TokenEndpoint is where tokens are requested.
	TokenEndpoint string `json:"token_endpoint,omitempty"`
	// RegistrationEndpoint is where clients register dynamically (RFC 7591), if supported.
	RegistrationEndpoint string `json:"registration_endpoint,omitempty"`
	// JWKSURI is where the server publishes its signing keys.
	JWKSURI string `json:"jwks_uri,omitempty"`
	// ScopesSupported are the scopes the server issues, if it says.
	ScopesSupported []string `json:"scopes_supported,omitempty"`
	// ResponseTypesSupported are the authorization response types ("code").
	ResponseTypesSupported []string `json:"response_types_supported,omitempty"`
	// GrantTypesSupported are the grants the server supports, if it says.
	GrantTypesSupported []string `json:"grant_types_supported,omitempty"`
	// CodeChallengeMethodsSupported are the PKCE methods ("S256").
	CodeChallengeMethodsSupported []string `json:"code_challenge_methods_supported,omitempty"`
	// TokenEndpointAuthMethodsSupported are the client authentication methods at the token
	// endpoint (default client_secret_basic).
	TokenEndpointAuthMethodsSupported []string `json:"token_endpoint_auth_methods_supported,omitempty"`
	// ClientIDMetadataDocumentSupported says the server accepts a metadata document URL as
	// client_id.
	ClientIDMetadataDocumentSupported bool `json:"client_id_metadata_document_supported,omitempty"`
	// AuthorizationResponseISSParameterSupported says the server's authorization responses
	// carry iss (RFC 9207 Section 3), which the client then requires.
	AuthorizationResponseISSParameterSupported bool `json:"authorization_response_iss_parameter_supported,omitempty"`
	// DPoPSigningAlgValuesSupported are the algorithms of the DPoP proofs the server accepts,
	// when it supports DPoP (RFC 9449 Section 5.1).
	DPoPSigningAlgValuesSupported []string `json:"dpop_signing_alg_values_supported,omitempty"`
}

// ErrOAuth is wrapped by the errors of a Client's OAuth authorization: discovery,
// registration, the user's consent, the token request.
var ErrOAuth = errors.New("mcp: oauth")

func oauthErrorf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrOAuth}, args...)...)
}

// WithOAuth makes the Client authorize its requests with OAuth 2.1 as the MCP spec's
// Authorization section describes. On a 401 it discovers the server's Protected Resource
// Metadata (RFC 9728; from the WWW-Authenticate challenge, then the well-known URLs) and its
// authorization server's metadata (RFC 8414 or OpenID Connect Discovery, with the
// 2025-03-26 fallbacks to the server's root), registers the client if needed (pre-registered,
// Client ID Metadata Document, or RFC 7591 Dynamic Client Registration), obtains a token
// with the configured grant for the server's resource (RFC 8707), and retries the request.
// It refreshes expired tokens, re-authorizes with the larger scope on 403
// insufficient_scope (at most MaxStepUps times per request), and refuses a server whose
// metadata names another resource.
//
// It wraps the transport of the Client's HTTP client (runtime.WithTransportWrapper); the
// rest of the Client is unchanged.
func WithOAuth(cfg Config) runtime.ClientOption {
	return runtime.WithTransportWrapper(func(next http.RoundTripper, endpoint string, log *slog.Logger) http.RoundTripper {
		return newOAuthTransport(cfg, next, endpoint, log)
	})
}

// oauthTransport adds the bearer token to each request and runs the authorization flows.
type oauthTransport struct {
	cfg       Config
	base      http.RoundTripper
	serverURL string
	log       *slog.Logger
	hc        *http.Client

	mu sync.Mutex // serialises the flows and guards the state below
	// What discovery found; nil until the first 401.
	prm      *runtime.ProtectedResourceMetadata
	as       *AuthServerMetadata
	resource string
	// The registered client, for the authorization server as; regs keeps those of other
	// authorization servers, by issuer.
	clientID, clientSecret, authMethod string
	regs                               map[string]registration
	// preIssuer is the issuer the pre-registered client (Config.ClientID) is bound to.
	preIssuer string
	scopes    []string // the scopes of the current token's request
	tok       *oauth2.Token

	dpop    *dpopSigner  // nil without Config.DPoPKey
	tokenHC *http.Client // the client of token requests: hc, with DPoP proofs
	initErr error        // an unusable Config, returned by every request
}

// newOAuthTransport makes the transport that authorizes the requests to serverURL, sent on
// base, as cfg says.
func newOAuthTransport(cfg Config, base http.RoundTripper, serverURL string, log *slog.Logger) *oauthTransport {
	if cfg.TokenStore == nil {
		cfg.TokenStore = new(MemoryTokenStore)
	}
	cfg.MaxStepUps = cmp.Or(cfg.MaxStepUps, 2)
	cfg.ClientName = cmp.Or(cfg.ClientName, "protomcp client")
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second, Transport: base}
	}
	t := &oauthTransport{cfg: cfg, base: base, serverURL: serverURL, log: log, hc: hc, tokenHC: hc,
		clientID: cfg.ClientID, clientSecret: cfg.ClientSecret, regs: map[string]registration{},
		preIssuer: cfg.ClientIssuer}
	if cfg.DPoPKey != nil {
		t.dpop, t.initErr = newDPoPSigner(cfg.DPoPKey)
		if t.dpop != nil {
			t.tokenHC = tokenHTTPClient(hc, t.dpop)
		}
	}
	return t
}

// registration is a client's credentials at one authorization server.
type registration struct {
	clientID, clientSecret, authMethod string
}

// RoundTrip implements http.RoundTripper.
func (t *oauthTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !t.sameOrigin(req.URL) {
		// A redirect elsewhere: the token is for the MCP server only (the spec's Token
		// Passthrough and Access Token Privilege Restriction), so it goes without one.
		return t.base.RoundTrip(req)
	}
	if t.initErr != nil {
		return nil, t.initErr
	}
	ctx := req.Context()
	body, err := replayableBody(req)
	if err != nil {
		return nil, err
	}
	tok, err := t.currentToken(ctx)
	if err != nil {
		return nil, err
	}
	var tried retries
	for {
		resp, err := t.send(req, body, tok)
		if err != nil {
			return nil, err
		}
		again, err := t.answerRefusal(ctx, req, resp, &tok, &tried)
		if err != nil {
			return nil, err
		}
		if !again {
			return resp, nil
		}
	}
}

// retries is what one request has tried so far after the server refused it.
type retries struct {
	stepUps      int
	reauthorized bool // after a 401
	nonce        bool // with the server's DPoP nonce
}

// answerRefusal decides whether the request answered with resp goes again, and with which
// token (*tok): once with the DPoP nonce the server asked for (RFC 9449 Section 9), with the
// same token; once after a new authorization for a 401; after a step-up for a 403
// insufficient_scope, up to Config.MaxStepUps (spec 2025-11-25, Authorization, Step-Up
// Authorization Flow). A response that goes again is drained and closed; one that does not
// is left to the caller.
func (t *oauthTransport) answerRefusal(ctx context.Context, req *http.Request, resp *http.Response, tok **oauth2.Token, tried *retries) (bool, error) {
	freshNonce := t.dpop != nil && t.dpop.noteNonce(req.URL, resp)
	ch, isChallenge := challengeOf(resp)
	if resp.StatusCode == http.StatusUnauthorized && freshNonce && !tried.nonce && ch.params["error"] == "use_dpop_nonce" {
		drainClose(resp)
		tried.nonce = true
		return true, nil
	}
	stepUp, again := tried.reauthorization(resp.StatusCode, ch, isChallenge, t.cfg.MaxStepUps)
	if !again {
		return false, nil
	}
	if stepUp {
		t.log.Debug("mcp: oauth step-up", "scope", ch.params["scope"], "attempt", tried.stepUps)
	}
	drainClose(resp)
	nt, err := t.authorize(ctx, *tok, ch, stepUp)
	if err != nil {
		return false, refused(err, resp)
	}
	*tok = nt
	return true, nil
}

// reauthorization decides whether a request refused with status and the challenge ch is sent
// again after a new authorization: once after a 401, and after a 403 insufficient_scope
// (a step-up) up to maxStepUps times. It counts the tries it allows.
func (tried *retries) reauthorization(status int, ch challenge, isChallenge bool, maxStepUps int) (stepUp, again bool) {
	switch {
	case status == http.StatusUnauthorized && !tried.reauthorized:
		tried.reauthorized = true
		return false, true
	case status == http.StatusForbidden && isChallenge && ch.params["error"] == "insufficient_scope" && tried.stepUps < maxStepUps:
		tried.stepUps++
		return true, true
	}
	return false, false
}

// refusedError is a failed authorization after the server refused a request: it is the
// OAuth error, and also the server's refusal (a *runtime.HTTPError with its status), so that
// the Client treats it as the server's answer (not, for example, as a sign of an older
// server to retry in another way, which would run the flow again: a second consent, a
// second assertion after a refused one).
type refusedError struct {
	err  error
	resp *runtime.HTTPError
}

func refused(err error, resp *http.Response) error {
	return &refusedError{err: err, resp: &runtime.HTTPError{StatusCode: resp.StatusCode, Status: resp.Status}}
}

func (e *refusedError) Error() string   { return e.err.Error() }
func (e *refusedError) Unwrap() []error { return []error{e.err, e.resp} }

// sameOrigin reports whether u is on the MCP server's origin.
func (t *oauthTransport) sameOrigin(u *url.URL) bool {
	s, err := url.Parse(t.serverURL)
	return err == nil && origin.Same(u, s)
}

// wellKnownPRM is the well-known path of Protected Resource Metadata (RFC 9728 Section 3).
const wellKnownPRM = "/.well-known/oauth-protected-resource"

// truncate shortens s to at most n bytes for an error message.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// send sends a copy of req with the token.
func (t *oauthTransport) send(req *http.Request, body []byte, tok *oauth2.Token) (*http.Response, error) {
	r := req.Clone(req.Context())
	if body != nil {
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		r.ContentLength = int64(len(body))
	}
	if tok != nil {
		if err := t.authorizeRequest(r, tok); err != nil {
			return nil, err
		}
	}
	return t.base.RoundTrip(r)
}

// authorizeRequest adds tok to r: a bearer token (RFC 6750 Section 2.1), or a DPoP-bound
// one with a fresh proof naming it (RFC 9449 Section 7.1).
func (t *oauthTransport) authorizeRequest(r *http.Request, tok *oauth2.Token) error {
	if t.dpop == nil || !isDPoP(tok) {
		r.Header.Set("Authorization", "Bearer "+tok.AccessToken)
		return nil
	}
	p, err := t.dpop.proof(r.Method, r.URL, tok.AccessToken)
	if err != nil {
		return err
	}
	r.Header.Set("Authorization", "DPoP "+tok.AccessToken)
	r.Header.Set("DPoP", p)
	return nil
}

// replayableBody reads the request's body so that it can be sent again after authorizing.
func replayableBody(req *http.Request) ([]byte, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, nil
	}
	defer req.Body.Close()
	b, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, fmt.Errorf("mcp: read request body: %w", err)
	}
	return b, nil
}

func drainClose(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}

// AuthorizationContext implements runtime.AuthorizationContextTransport: a digest of the
// access token the transport sends now ("" before it has one), so that the Client reuses a
// list page marked private only with the token that fetched it (spec 2026-07-28, Caching,
// Cache Scope Field); after a step-up or a new authorization it is another.
func (t *oauthTransport) AuthorizationContext() string {
	t.mu.Lock()
	tok := t.tok
	t.mu.Unlock()
	if tok == nil {
		return ""
	}
	sum := sha256.Sum256([]byte(tok.AccessToken))
	return hex.EncodeToString(sum[:16])
}

// currentToken returns the token to send: the stored one, refreshed when expired; nil before
// the first authorization.
func (t *oauthTransport) currentToken(ctx context.Context) (*oauth2.Token, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.resource == "" {
		return t.tok, nil // before discovery: the first request finds out what is needed
	}
	tok, err := t.cfg.TokenStore.Token(ctx, t.resource)
	if err != nil {
		return nil, oauthErrorf("token store: %w", err)
	}
	t.tok = t.freshen(ctx, tok)
	return t.tok, nil
}

// freshen returns tok, refreshed first when it has expired and can be; a failed refresh
// leaves the expired token, and the server's 401 leads to a new authorization.
func (t *oauthTransport) freshen(ctx context.Context, tok *oauth2.Token) *oauth2.Token {
	if tok == nil || tok.Valid() || tok.RefreshToken == "" {
		return tok
	}
	nt, err := t.refresh(ctx, tok)
	if err != nil {
		t.log.Debug("mcp: oauth refresh failed; will re-authorize on 401", "error", err)
		return tok
	}
	return nt
}

// challenge is a parsed WWW-Authenticate Bearer (RFC 6750 Section 3) or DPoP (RFC 9449
// Section 7.1) challenge.
type challenge struct {
	params map[string]string
}

// challengeOf parses the response's Bearer or DPoP challenge.
func challengeOf(resp *http.Response) (challenge, bool) {
	for _, v := range resp.Header.Values("WWW-Authenticate") {
		if p, ok := parseBearerChallenge(v); ok {
			return challenge{params: p}, true
		}
	}
	return challenge{params: map[string]string{}}, false
}

// parseBearerChallenge parses `Bearer k="v", k2=v2` (RFC 9110 Section 11.6.1), or the same
// with the DPoP scheme, whose parameters are the same (RFC 9449 Section 7.1).
func parseBearerChallenge(h string) (map[string]string, bool) {
	s := strings.TrimSpace(h)
	scheme, rest, _ := strings.Cut(s, " ")
	if !strings.EqualFold(scheme, "Bearer") && !strings.EqualFold(scheme, "DPoP") {
		return nil, false
	}
	params := map[string]string{}
	for rest = strings.TrimSpace(rest); rest != ""; {
		eq := strings.IndexByte(rest, '=')
		if eq < 0 {
			break
		}
		key := strings.ToLower(strings.TrimSpace(strings.TrimLeft(rest[:eq], ", ")))
		var val string
		val, rest = cutParamValue(strings.TrimSpace(rest[eq+1:]))
		params[key] = val
		rest = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(rest), ","))
	}
	return params, true
}

// cutParamValue cuts the value of an auth parameter from the start of s, a quoted string
// (with its backslash escapes) or a token up to the next comma, and returns it and the rest
// (RFC 9110 Section 11.2).
func cutParamValue(s string) (val, rest string) {
	if !strings.HasPrefix(s, `"`) {
		end := strings.IndexByte(s, ',')
		if end < 0 {
			end = len(s)
		}
		return strings.TrimSpace(s[:end]), s[end:]
	}
	var b strings.Builder
	i := 1
	for ; i < len(s) && s[i] != '"'; i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String(), s[min(i+1, len(s)):]
}

// authorize obtains a new token after the server refused failed (nil if none was sent)
// with the challenge ch: first a refresh, unless this is a step-up; otherwise the full flow.
func (t *oauthTransport) authorize(ctx context.Context, failed *oauth2.Token, ch challenge, stepUp bool) (*oauth2.Token, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !stepUp && t.authorizedMeanwhile(failed) {
		return t.tok, nil
	}
	asChanged := false
	if t.as == nil || (failed != nil && !stepUp) {
		// Before the first token, and when a token is refused: the resource's metadata may
		// name another authorization server now (spec 2026-07-28, Authorization, Client
		// Registration, Authorization Server Binding).
		var err error
		if asChanged, err = t.rediscover(ctx, ch); err != nil {
			return nil, err
		}
	}
	if !stepUp && !asChanged && failed != nil && failed.RefreshToken != "" {
		if tok, err := t.refresh(ctx, failed); err == nil {
			return tok, nil
		}
	}
	scopes := t.selectScopes(ch, stepUp)
	tok, err := t.grant(ctx, scopes)
	if err != nil {
		return nil, err
	}
	t.scopes = scopes
	return tok, t.store(ctx, tok)
}

// authorizedMeanwhile reports whether another request obtained a token since failed (nil
// if none was sent) was sent.
func (t *oauthTransport) authorizedMeanwhile(failed *oauth2.Token) bool {
	return t.tok != nil && (failed == nil || t.tok.AccessToken != failed.AccessToken)
}

// rediscover finds the resource's authorization server again and makes it the one of the
// next flows, reporting whether it changed.
func (t *oauthTransport) rediscover(ctx context.Context, ch challenge) (changed bool, err error) {
	prev := t.as
	as, err := t.discover(ctx, ch)
	if err != nil {
		return false, err
	}
	if err := t.useAuthServer(as); err != nil {
		return false, err
	}
	return prev != nil && prev.Issuer != as.Issuer, nil
}

// grant runs the configured grant for scopes.
func (t *oauthTransport) grant(ctx context.Context, scopes []string) (*oauth2.Token, error) {
	switch t.cfg.Grant {
	case GrantClientCredentials:
		return t.clientCredentials(ctx, scopes)
	case GrantJWTBearer:
		return t.jwtBearer(ctx, scopes)
	default:
		return t.authorizationCode(ctx, scopes)
	}
}

func (t *oauthTransport) store(ctx context.Context, tok *oauth2.Token) error {
	t.tok = tok
	if err := t.cfg.TokenStore.SetToken(ctx, t.resource, tok); err != nil {
		return oauthErrorf("token store: %w", err)
	}
	return nil
}

// selectScopes follows the spec's Scope Selection Strategy: the challenge's scope, else the
// resource's scopes_supported, else none; a step-up keeps what was asked before. It adds
// offline_access when the authorization server offers it and refresh tokens (SEP-2207).
func (t *oauthTransport) selectScopes(ch challenge, stepUp bool) []string {
	var scopes []string
	if s := ch.params["scope"]; s != "" {
		scopes = strings.Fields(s)
	} else if t.prm != nil {
		scopes = slices.Clone(t.prm.ScopesSupported)
	}
	if stepUp {
		scopes = union(t.scopes, scopes)
	}
	scopes = union(scopes, t.cfg.Scopes)
	if t.cfg.Grant == GrantAuthorizationCode && len(scopes) > 0 && t.offersRefresh() {
		scopes = union(scopes, []string{"offline_access"})
	}
	return scopes
}

// offersRefresh reports whether the authorization server offers offline_access and refresh
// tokens (a server that lists no grant types supports the default ones, refresh_token among
// them: RFC 8414 Section 2).
func (t *oauthTransport) offersRefresh() bool {
	grants := t.as.GrantTypesSupported
	return slices.Contains(t.as.ScopesSupported, "offline_access") && (len(grants) == 0 || slices.Contains(grants, "refresh_token"))
}

func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// useAuthServer makes as the authorization server of the next flows, with the client
// credentials it issued: credentials are bound to their authorization server, never
// presented to another, and the client registers again with a new one (spec 2026-07-28,
// Authorization, Client Registration, Authorization Server Binding). Pre-registered
// credentials bound to another server are an error.
func (t *oauthTransport) useAuthServer(as *AuthServerMetadata) error {
	if t.as != nil && t.as.Issuer == as.Issuer {
		t.as = as
		return nil
	}
	if t.cfg.ClientID != "" {
		return t.usePreRegistered(as)
	}
	if t.as != nil {
		t.log.Info("mcp: oauth: the resource's authorization server changed; registering with the new one", "from", t.as.Issuer, "to", as.Issuer)
		if t.clientID != "" {
			t.regs[t.as.Issuer] = registration{t.clientID, t.clientSecret, t.authMethod}
		}
		t.tok = nil // issued by the other authorization server
	}
	r := t.regs[as.Issuer]
	t.clientID, t.clientSecret, t.authMethod = r.clientID, r.clientSecret, r.authMethod
	t.as = as
	return nil
}

// usePreRegistered makes as the authorization server of a pre-registered client
// (Config.ClientID): the one it is bound to (Config.ClientIssuer, else the first one found),
// never another.
func (t *oauthTransport) usePreRegistered(as *AuthServerMetadata) error {
	if t.preIssuer == "" {
		t.preIssuer = as.Issuer
	}
	if t.preIssuer != as.Issuer {
		t.as = nil
		return oauthErrorf("the resource's authorization server is %s, but oauth.Config.ClientID is registered with %s: refusing to present it to another authorization server", as.Issuer, t.preIssuer)
	}
	t.as = as
	return nil
}

// discover finds the resource's metadata and its authorization server's: the current one
// when the metadata still names it.
func (t *oauthTransport) discover(ctx context.Context, ch challenge) (*AuthServerMetadata, error) {
	server, err := url.Parse(t.serverURL)
	if err != nil {
		return nil, oauthErrorf("server URL %q: %w", t.serverURL, err)
	}
	for _, u := range prmCandidates(server, ch) {
		var prm runtime.ProtectedResourceMetadata
		if err := t.getJSON(ctx, u, &prm); err != nil {
			t.log.Debug("mcp: oauth protected resource metadata", "url", u, "error", err)
			continue
		}
		return t.useResourceMetadata(ctx, u, server, &prm)
	}
	return t.legacyAuthServer(ctx, server)
}

// prmCandidates lists the URLs of the resource's Protected Resource Metadata to try, in
// order: the challenge's resource_metadata, else the well-known path inserted before the
// endpoint's path, then at the root (RFC 9728 Section 3.1).
func prmCandidates(server *url.URL, ch challenge) []string {
	if u := ch.params["resource_metadata"]; u != "" {
		return []string{u}
	}
	origin := server.Scheme + "://" + server.Host
	var candidates []string
	if p := strings.TrimSuffix(server.EscapedPath(), "/"); p != "" {
		candidates = append(candidates, origin+wellKnownPRM+p)
	}
	return append(candidates, origin+wellKnownPRM)
}

// useResourceMetadata checks the Protected Resource Metadata found at u, records it, and
// returns the authorization server to use: the current one when the metadata still names
// it, else the first of those it names whose metadata can be fetched.
func (t *oauthTransport) useResourceMetadata(ctx context.Context, u string, server *url.URL, prm *runtime.ProtectedResourceMetadata) (*AuthServerMetadata, error) {
	if prm.Resource == "" {
		return nil, oauthErrorf("the protected resource metadata at %s has no resource", u)
	}
	if !resourceCovers(prm.Resource, server) {
		return nil, oauthErrorf("the protected resource metadata at %s is for %q, not for this server %q: refusing to authorize (RFC 9728 Section 3.3)", u, prm.Resource, t.serverURL)
	}
	if len(prm.AuthorizationServers) == 0 {
		return nil, oauthErrorf("the protected resource metadata at %s names no authorization server", u)
	}
	t.prm, t.resource = prm, prm.Resource
	if t.as != nil && slices.Contains(prm.AuthorizationServers, t.as.Issuer) {
		return t.as, nil
	}
	var errs []error
	for _, issuer := range prm.AuthorizationServers {
		as, err := t.discoverAS(ctx, issuer)
		if err == nil {
			return as, nil
		}
		errs = append(errs, err)
	}
	return nil, oauthErrorf("no usable authorization server: %w", errors.Join(errs...))
}

// legacyAuthServer is the authorization server of a server without resource metadata, as
// the 2025-03-26 spec has it: at the MCP server's origin, with its metadata there or,
// failing that, the default endpoints. One found before is kept.
func (t *oauthTransport) legacyAuthServer(ctx context.Context, server *url.URL) (*AuthServerMetadata, error) {
	t.resource = canonicalResource(server)
	if t.as != nil {
		// Rediscovery found no resource metadata this time: keep the authorization server
		// (and its credentials) found before.
		return t.as, nil
	}
	origin := server.Scheme + "://" + server.Host
	var as AuthServerMetadata
	if err := t.getJSON(ctx, origin+"/.well-known/oauth-authorization-server", &as); err == nil && as.TokenEndpoint != "" {
		return &as, nil
	}
	t.log.Debug("mcp: oauth: no metadata; using the 2025-03-26 default endpoints", "origin", origin)
	return &AuthServerMetadata{
		Issuer:                origin,
		AuthorizationEndpoint: origin + "/authorize",
		TokenEndpoint:         origin + "/token",
		RegistrationEndpoint:  origin + "/register",
	}, nil
}

// resourceCovers reports whether the resource identifier names the server's endpoint: the
// same origin, and a path that is the endpoint's or a parent of it.
func resourceCovers(resource string, server *url.URL) bool {
	r, err := url.Parse(resource)
	if err != nil || !strings.EqualFold(r.Scheme, server.Scheme) || !strings.EqualFold(r.Host, server.Host) || r.Fragment != "" {
		return false
	}
	rp, sp := strings.TrimSuffix(r.Path, "/"), strings.TrimSuffix(server.Path, "/")
	return rp == "" || rp == sp || strings.HasPrefix(sp, rp+"/")
}

// canonicalResource is the server's URI as RFC 8707 and the spec's Canonical Server URI
// want it: lower-case scheme and host, no fragment, no trailing slash.
func canonicalResource(u *url.URL) string {
	c := &url.URL{Scheme: strings.ToLower(u.Scheme), Host: strings.ToLower(u.Host), Path: strings.TrimSuffix(u.Path, "/"), RawQuery: u.RawQuery}
	return c.String()
}

// discoverAS fetches the authorization server's metadata from the URLs the spec's
// Authorization Server Metadata Discovery lists, in order.
func (t *oauthTransport) discoverAS(ctx context.Context, issuer string) (*AuthServerMetadata, error) {
	iu, err := url.Parse(issuer)
	if err != nil {
		return nil, fmt.Errorf("issuer %q: %w", issuer, err)
	}
	origin := iu.Scheme + "://" + iu.Host
	path := strings.TrimSuffix(iu.EscapedPath(), "/")
	candidates := []string{
		origin + "/.well-known/oauth-authorization-server" + path,
		origin + "/.well-known/openid-configuration" + path,
	}
	if path != "" {
		candidates = append(candidates, origin+path+"/.well-known/openid-configuration")
	}
	var errs []error
	for _, u := range candidates {
		var as AuthServerMetadata
		if err := t.getJSON(ctx, u, &as); err != nil {
			errs = append(errs, err)
			continue
		}
		if strings.TrimSuffix(as.Issuer, "/") != strings.TrimSuffix(issuer, "/") {
			errs = append(errs, fmt.Errorf("%s names issuer %q, not %q (RFC 8414 Section 3.3)", u, as.Issuer, issuer))
			continue
		}
		return &as, nil
	}
	return nil, fmt.Errorf("authorization server %s: %w", issuer, errors.Join(errs...))
}

// getJSON GETs a metadata document.
func (t *oauthTransport) getJSON(ctx context.Context, u string, out any) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Mcp-Protocol-Version", runtime.LatestProtocolVersion) // spec 2025-11-25, Transports, Protocol Version Header
	resp, err := t.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(out); err != nil {
		return fmt.Errorf("GET %s: %w", u, err)
	}
	return nil
}

// oauthCtx carries the HTTP client x/oauth2 uses for token requests.
func (t *oauthTransport) oauthCtx(ctx context.Context) context.Context {
	return context.WithValue(ctx, oauth2.HTTPClient, t.tokenHC)
}

// ensureClient registers the client if it has no client_id: by its metadata document when
// the server supports those, else dynamically (RFC 7591).
func (t *oauthTransport) ensureClient(ctx context.Context) error {
	if t.clientID != "" {
		if t.authMethod == "" {
			t.authMethod = t.pickAuthMethod(t.clientSecret != "")
		}
		return nil
	}
	if t.cfg.ClientMetadataURL != "" && t.as.ClientIDMetadataDocumentSupported {
		t.clientID, t.authMethod = t.cfg.ClientMetadataURL, "none"
		return nil
	}
	if t.as.RegistrationEndpoint == "" {
		return oauthErrorf("the authorization server %s supports neither Client ID Metadata Documents nor Dynamic Client Registration: configure oauth.Config.ClientID (a pre-registered client)", t.as.Issuer)
	}
	return t.register(ctx)
}

// register registers the client at the authorization server's registration endpoint
// (Dynamic Client Registration, RFC 7591 Section 3) and takes the credentials it issues.
func (t *oauthTransport) register(ctx context.Context) error {
	method := t.pickAuthMethod(false)
	reg := map[string]any{
		"client_name":                t.cfg.ClientName,
		"application_type":           t.applicationType(),
		"redirect_uris":              []string{t.cfg.RedirectURL},
		"grant_types":                []string{"authorization_code", "refresh_token"},
		"response_types":             []string{"code"},
		"token_endpoint_auth_method": method,
	}
	body, _ := json.Marshal(reg)
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, t.as.RegistrationEndpoint, bytes.NewReader(body))
	if err != nil {
		return oauthErrorf("registration: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := t.hc.Do(req)
	if err != nil {
		return oauthErrorf("dynamic client registration at %s: %w", t.as.RegistrationEndpoint, err)
	}
	defer resp.Body.Close()
	r, err := registrationOf(resp)
	if err != nil {
		return oauthErrorf("dynamic client registration at %s: %w", t.as.RegistrationEndpoint, err)
	}
	t.clientID, t.clientSecret, t.authMethod = r.clientID, r.clientSecret, cmp.Or(r.authMethod, method)
	return nil
}

// registrationOf reads the credentials from the answer to a registration request (RFC 7591
// Section 3.2.1).
func registrationOf(resp *http.Response) (registration, error) {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		return registration{}, fmt.Errorf("%s: %s", resp.Status, truncate(string(b), 300))
	}
	var out struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
		AuthMethod   string `json:"token_endpoint_auth_method"`
	}
	if err := json.Unmarshal(b, &out); err != nil || out.ClientID == "" {
		return registration{}, errors.New("no client_id in the answer")
	}
	return registration{out.ClientID, out.ClientSecret, out.AuthMethod}, nil
}

// applicationType is the application_type to register: the configured one, else "native"
// for a loopback or private-use scheme redirect URI and "web" otherwise. The spec requires
// one (spec 2026-07-28, Authorization, Client Registration, Application Type and Redirect
// URI Constraints): an OpenID Connect server defaults an omitted one to "web", which
// conflicts with a native client's loopback redirect.
func (t *oauthTransport) applicationType() string {
	if t.cfg.ApplicationType != "" {
		return t.cfg.ApplicationType
	}
	u, err := url.Parse(t.cfg.RedirectURL)
	if err != nil {
		return "web"
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
		if isLoopbackHost(u.Hostname()) {
			return "native"
		}
		return "web"
	case "":
		return "web"
	default:
		return "native" // a private-use URI scheme (RFC 8252 Section 7.1)
	}
}

// isLoopbackHost reports whether host names the local machine: localhost or a loopback IP
// address.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// pickAuthMethod chooses a token endpoint authentication method the server supports.
func (t *oauthTransport) pickAuthMethod(haveSecret bool) string {
	if m := t.cfg.TokenEndpointAuthMethod; m != "" {
		return m
	}
	if t.cfg.ClientAssertion != nil {
		return "private_key_jwt"
	}
	supported := t.as.TokenEndpointAuthMethodsSupported
	if len(supported) == 0 {
		supported = []string{"client_secret_basic"} // RFC 8414 Section 2's default
	}
	for _, m := range authMethodPrefs(haveSecret) {
		if slices.Contains(supported, m) {
			return m
		}
	}
	return supported[0]
}

// authMethodPrefs lists the token endpoint authentication methods in the order the client
// prefers them: a client with a secret sends it, one without is a public client.
func authMethodPrefs(haveSecret bool) []string {
	if haveSecret {
		return []string{"client_secret_basic", "client_secret_post", "none"}
	}
	return []string{"none", "client_secret_basic", "client_secret_post"}
}

// authStyle is how x/oauth2 sends the client's credentials for its authentication method.
func (t *oauthTransport) authStyle() oauth2.AuthStyle {
	if t.authMethod == "client_secret_basic" {
		return oauth2.AuthStyleInHeader
	}
	return oauth2.AuthStyleInParams
}

// secret is the client secret to send: none for public clients and assertions.
func (t *oauthTransport) secret() string {
	if t.authMethod == "client_secret_basic" || t.authMethod == "client_secret_post" {
		return t.clientSecret
	}
	return ""
}

// clientAuthParams adds a private_key_jwt assertion (RFC 7523 Section 2.2) when configured.
func (t *oauthTransport) clientAuthParams(ctx context.Context, v url.Values) error {
	if t.authMethod != "private_key_jwt" {
		return nil
	}
	if t.cfg.ClientAssertion == nil {
		return oauthErrorf("private_key_jwt needs oauth.Config.ClientAssertion")
	}
	a, err := t.cfg.ClientAssertion(ctx, t.as.Issuer)
	if err != nil {
		return oauthErrorf("client assertion: %w", err)
	}
	v.Set("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
	v.Set("client_assertion", a)
	return nil
}

// authorizationCode runs the authorization code grant with PKCE S256.
func (t *oauthTransport) authorizationCode(ctx context.Context, scopes []string) (*oauth2.Token, error) {
	if err := t.canAuthorizeCode(); err != nil {
		return nil, err
	}
	if err := t.ensureClient(ctx); err != nil {
		return nil, err
	}
	conf := &oauth2.Config{
		ClientID: t.clientID, ClientSecret: t.secret(), RedirectURL: t.cfg.RedirectURL, Scopes: scopes,
		Endpoint: oauth2.Endpoint{AuthURL: t.as.AuthorizationEndpoint, TokenURL: t.as.TokenEndpoint, AuthStyle: t.authStyle()},
	}
	verifier := oauth2.GenerateVerifier()
	state := randomState()
	// The issuer is recorded with the verifier and the state, from the validated metadata,
	// before the user is sent to the authorization server (spec 2026-07-28, Authorization,
	// Authorization Response Validation).
	issuer, issRequired := t.as.Issuer, t.as.AuthorizationResponseISSParameterSupported
	back, err := t.cfg.Authorize(ctx, conf.AuthCodeURL(state, t.authCodeOptions(verifier)...))
	if err != nil {
		return nil, oauthErrorf("authorization: %w", err)
	}
	code, err := codeOf(back, state, issuer, issRequired)
	if err != nil {
		return nil, err
	}
	opts := []oauth2.AuthCodeOption{oauth2.VerifierOption(verifier), oauth2.SetAuthURLParam("resource", t.resource)}
	extra := url.Values{}
	if err := t.clientAuthParams(ctx, extra); err != nil {
		return nil, err
	}
	for k := range extra {
		opts = append(opts, oauth2.SetAuthURLParam(k, extra.Get(k)))
	}
	tok, err := conf.Exchange(t.oauthCtx(ctx), code, opts...)
	if err != nil {
		return nil, oauthErrorf("token request at %s: %w", t.as.TokenEndpoint, err)
	}
	return tok, nil
}

// canAuthorizeCode reports, as an error, what the authorization code grant lacks: the
// Config's Authorize and RedirectURL, the authorization server's endpoints, or its support
// of PKCE with S256 (spec 2025-11-25, Authorization, Authorization Code Protection).
func (t *oauthTransport) canAuthorizeCode() error {
	if t.cfg.Authorize == nil || t.cfg.RedirectURL == "" {
		return oauthErrorf("the server needs authorization: set oauth.Config.Authorize and RedirectURL (see oauth.NewLoopbackRedirect) or another grant")
	}
	if t.as.AuthorizationEndpoint == "" || t.as.TokenEndpoint == "" {
		return oauthErrorf("the authorization server %s has no authorization or token endpoint", t.as.Issuer)
	}
	if m := t.as.CodeChallengeMethodsSupported; len(m) > 0 && !slices.Contains(m, "S256") {
		return oauthErrorf("the authorization server %s does not support PKCE with S256 (it lists %v); refusing to authorize", t.as.Issuer, m)
	}
	return nil
}

// authCodeOptions are the parameters of the authorization request besides the client's:
// the PKCE challenge, the resource (RFC 8707), and with DPoP the key's thumbprint.
func (t *oauthTransport) authCodeOptions(verifier string) []oauth2.AuthCodeOption {
	opts := []oauth2.AuthCodeOption{oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", t.resource)}
	if t.dpop != nil && slices.Contains(t.as.DPoPSigningAlgValuesSupported, "ES256") {
		// RFC 9449 Section 10: the code is bound to the key, so that only this client
		// can redeem it; asked only of a server that says it does DPoP, as a parameter
		// others do not know.
		opts = append(opts, oauth2.SetAuthURLParam("dpop_jkt", t.dpop.jkt))
	}
	return opts
}

// codeOf validates the redirect back from the authorization server, in this order: its
// state against the request's, its issuer (checkResponseIssuer), then its error; and returns
// its code.
func codeOf(back *url.URL, state, issuer string, issRequired bool) (string, error) {
	if back == nil {
		return "", oauthErrorf("authorization: no redirect URL")
	}
	q := back.Query()
	if q.Get("state") != state {
		return "", oauthErrorf("authorization: the redirect's state does not match the request's (a forged or stale redirect)")
	}
	if err := checkResponseIssuer(q, issuer, issRequired); err != nil {
		return "", err
	}
	if e := q.Get("error"); e != "" {
		return "", oauthErrorf("authorization refused: %s %s", e, q.Get("error_description"))
	}
	code := q.Get("code")
	if code == "" {
		return "", oauthErrorf("authorization: the redirect carries no code")
	}
	return code, nil
}

// checkResponseIssuer validates the authorization response's iss against the issuer
// recorded for the request, before the code goes to any token endpoint and before an error
// in the response is acted on (spec 2026-07-28, Authorization, Authorization Response
// Validation; RFC 9207 Section 2.4): a present iss must equal it by simple string comparison,
// without normalizing case, default ports, trailing slashes or percent-encoding (RFC 3986
// Section 6.2.1), whether or not the server advertised iss; an absent one is refused only
// when the server advertised it.
func checkResponseIssuer(q url.Values, issuer string, required bool) error {
	iss, present := q["iss"]
	switch {
	case present && (len(iss) != 1 || iss[0] != issuer):
		return oauthErrorf("authorization: the response comes from issuer %q, not %q: refusing it (a mix-up attack? RFC 9207)", strings.Join(iss, ","), issuer)
	case !present && required:
		return oauthErrorf("authorization: the response has no iss though the authorization server %s advertises it: refusing it (RFC 9207 Section 2.4)", issuer)
	}
	return nil
}

// tokenRequest sends a token request of any grant through x/oauth2 (whose client
// credentials flow lets grant_type be replaced) and returns the token.
func (t *oauthTransport) tokenRequest(ctx context.Context, tokenURL string, params url.Values, scopes []string) (*oauth2.Token, error) {
	if err := t.clientAuthParams(ctx, params); err != nil {
		return nil, err
	}
	conf := &clientcredentials.Config{
		ClientID: t.clientID, ClientSecret: t.secret(), TokenURL: tokenURL, Scopes: scopes,
		EndpointParams: params, AuthStyle: t.authStyle(),
	}
	tok, err := conf.Token(t.oauthCtx(ctx))
	if err != nil {
		return nil, oauthErrorf("token request (%s) at %s: %w", params.Get("grant_type"), tokenURL, err)
	}
	return tok, nil
}

// refresh uses the refresh token, with the resource (RFC 8707 Section 2.2).
func (t *oauthTransport) refresh(ctx context.Context, old *oauth2.Token) (*oauth2.Token, error) {
	if t.as == nil || t.as.TokenEndpoint == "" || t.clientID == "" {
		return nil, oauthErrorf("cannot refresh before discovery")
	}
	tok, err := t.tokenRequest(ctx, t.as.TokenEndpoint, url.Values{
		"grant_type": {"refresh_token"}, "refresh_token": {old.RefreshToken}, "resource": {t.resource},
	}, nil)
	if err != nil {
		return nil, err
	}
	if tok.RefreshToken == "" {
		tok.RefreshToken = old.RefreshToken
	}
	return tok, t.store(ctx, tok)
}

// clientCredentials runs the client_credentials grant.
func (t *oauthTransport) clientCredentials(ctx context.Context, scopes []string) (*oauth2.Token, error) {
	if t.clientID == "" {
		return nil, oauthErrorf("the client_credentials grant needs oauth.Config.ClientID")
	}
	if t.authMethod == "" {
		t.authMethod = t.pickAuthMethod(t.clientSecret != "")
	}
	return t.tokenRequest(ctx, t.as.TokenEndpoint, url.Values{"grant_type": {"client_credentials"}, "resource": {t.resource}}, scopes)
}

// jwtBearer runs the JWT bearer grant (RFC 7523 Section 2.1).
func (t *oauthTransport) jwtBearer(ctx context.Context, scopes []string) (*oauth2.Token, error) {
	if t.cfg.JWTBearerAssertion == nil {
		return nil, oauthErrorf("GrantJWTBearer needs oauth.Config.JWTBearerAssertion")
	}
	if t.clientID == "" {
		return nil, oauthErrorf("the JWT bearer grant needs oauth.Config.ClientID")
	}
	if t.authMethod == "" {
		t.authMethod = t.pickAuthMethod(t.clientSecret != "")
	}
	assertion, err := t.cfg.JWTBearerAssertion(ctx, t.as, t.resource)
	if err != nil {
		return nil, oauthErrorf("JWT bearer assertion: %w", err)
	}
	return t.tokenRequest(ctx, t.as.TokenEndpoint, url.Values{
		"grant_type": {"urn:ietf:params:oauth:grant-type:jwt-bearer"}, "assertion": {assertion}, "resource": {t.resource},
	}, scopes)
}

func randomState() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// CloseIdleConnections closes the idle connections of the wrapped transport.
func (t *oauthTransport) CloseIdleConnections() {
	if ci, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

// The transport tells the Client when its credentials change (AuthorizationContext).
var _ runtime.AuthorizationContextTransport = (*oauthTransport)(nil)

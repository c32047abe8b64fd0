// Package testissuer is a small OAuth 2.1 authorization server for tests and examples: it
// publishes its metadata (RFC 8414) and keys (a JWKS), registers clients dynamically (RFC
// 7591, recording what they ask), runs the authorization code grant with PKCE S256
// (approving every request at once, as the configured user, with iss in the response as RFC
// 9207 says, or wrongly on request), the refresh_token grant, the client_credentials grant
// and the JWT bearer grant (ID-JAGs of a trusted identity provider, workload JWTs of a
// trusted platform), and issues ES256-signed JWT access tokens whose audience is the
// requested resource (RFC 8707), bound to a DPoP key on request (RFC 9449; DPoPResource is
// the matching check at a resource server).
//
// It keeps everything in memory and is meant for loopback use only.
package testissuer

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Issuer is a running authorization server.
type Issuer struct {
	// URL is the issuer identifier and base URL, e.g. http://127.0.0.1:PORT.
	URL string

	key    *ecdsa.PrivateKey
	kid    string
	signer jose.Signer
	srv    *http.Server
	ln     net.Listener
	done   chan struct{}
	cfg    config

	mu      sync.Mutex
	clients map[string]*client
	codes   map[string]*grant
	refresh map[string]*grant
	regs    []Registration
	grants  map[string]int // token requests by grant_type
}

// Registration is a client's Dynamic Client Registration request (RFC 7591 Section 2), as
// the issuer received it.
type Registration struct {
	// ClientID is the client_id the issuer gave the client.
	ClientID string
	// ClientName, RedirectURIs, AuthMethod and ApplicationType are the client metadata
	// fields client_name, redirect_uris, token_endpoint_auth_method and application_type
	// (OpenID Connect Dynamic Client Registration 1.0 Section 2); ApplicationType is empty
	// when the client omitted it.
	ClientName      string
	RedirectURIs    []string
	AuthMethod      string
	ApplicationType string
}

// IssMode is what the issuer's authorization responses say about their issuer (RFC 9207).
type IssMode int

const (
	// IssCorrect sends iss, the issuer identifier, and advertises it in the metadata with
	// authorization_response_iss_parameter_supported (the default).
	IssCorrect IssMode = iota
	// IssUnadvertised sends the correct iss without advertising it.
	IssUnadvertised
	// IssOmitted advertises iss but leaves it out of the responses.
	IssOmitted
	// IssNone neither advertises nor sends iss.
	IssNone
	// IssWrong advertises iss and sends another issuer's.
	IssWrong
	// IssTrailingSlash advertises iss and sends the issuer with a trailing slash: equal
	// after URL normalization, which RFC 9207 Section 2.4 does not allow.
	IssTrailingSlash
)

type client struct {
	id, secret   string
	key          crypto.PublicKey // private_key_jwt clients
	redirectURIs []string
	authMethod   string
}

type grant struct {
	clientID, subject, scope, resource string
	redirectURI, challenge             string
	expires                            time.Time
	jkt                                string // the DPoP key the grant is bound to (RFC 9449 Sections 5 and 10)
}

type config struct {
	subject   string
	scopes    []string
	ttl       time.Duration
	preClient *client
	keyClient *client
	addr      string
	trusts    *Issuer // accepts ID-JAGs it issued in the JWT bearer grant
	workloads *Issuer // accepts the workload JWTs it signs in the JWT bearer grant
	iss       IssMode
	dpop      bool   // binds tokens to the key of the token request's DPoP proof
	dpopNonce string // the nonce DPoP proofs at the token endpoint must carry, if any
}

// Option configures an Issuer.
type Option func(*config)

// WithSubject sets the user every authorization is approved for (default "alice").
func WithSubject(sub string) Option { return func(c *config) { c.subject = sub } }

// WithScopes sets the scopes_supported the metadata advertises.
func WithScopes(scopes ...string) Option { return func(c *config) { c.scopes = scopes } }

// WithTokenTTL sets the access tokens' lifetime (default 1 hour).
func WithTokenTTL(d time.Duration) Option { return func(c *config) { c.ttl = d } }

// WithClient pre-registers a confidential client (client_secret_basic or _post) for the
// client_credentials and authorization code grants; redirect URIs on loopback are accepted
// with any port.
func WithClient(id, secret string) Option {
	return func(c *config) { c.preClient = &client{id: id, secret: secret, authMethod: "client_secret_basic"} }
}

// WithKeyClient pre-registers a client that authenticates with private_key_jwt (RFC 7523
// Section 2.2) signed by the private half of key.
func WithKeyClient(id string, key crypto.PublicKey) Option {
	return func(c *config) { c.keyClient = &client{id: id, key: key, authMethod: "private_key_jwt"} }
}

// WithAssertionIssuer makes the issuer accept, in the JWT bearer grant (RFC 7523), the
// Identity Assertion Authorization Grants (ID-JAGs, SEP-990) that idp issues by token
// exchange.
func WithAssertionIssuer(idp *Issuer) Option { return func(c *config) { c.trusts = idp } }

// WithWorkloadIssuer makes the issuer accept, in the JWT bearer grant (RFC 7523 Section
// 2.1), JWTs that wl signs (Mint) for this issuer's audience: workload identity federation,
// where a workload's platform-issued identity token is its grant.
func WithWorkloadIssuer(wl *Issuer) Option { return func(c *config) { c.workloads = wl } }

// WithDPoP makes the issuer bind access tokens to the key of the token request's DPoP proof
// (RFC 9449 Section 5): it advertises dpop_signing_alg_values_supported, verifies the proof,
// issues token_type DPoP with the key's thumbprint as cnf.jkt, and holds the authorization
// code (dpop_jkt) and the refresh token to the key. With a nonce, a proof without it is
// answered use_dpop_nonce with the nonce (RFC 9449 Section 8). Requests without a proof
// get bearer tokens.
func WithDPoP(nonce string) Option {
	return func(c *config) { c.dpop, c.dpopNonce = true, nonce }
}

// WithIss sets what the authorization responses carry as iss and whether the metadata
// advertises it (default IssCorrect).
func WithIss(mode IssMode) Option { return func(c *config) { c.iss = mode } }

// WithAddr sets the address to listen on (default 127.0.0.1:0, a free loopback port).
func WithAddr(addr string) Option { return func(c *config) { c.addr = addr } }

// Start starts an issuer on a loopback port.
func Start(opts ...Option) (*Issuer, error) {
	cfg := config{subject: "alice", ttl: time.Hour, addr: "127.0.0.1:0"}
	for _, o := range opts {
		o(&cfg)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	kid := randomString(8)
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: key, KeyID: kid}},
		(&jose.SignerOptions{}).WithType("at+jwt"))
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return nil, err
	}
	is := &Issuer{
		URL: "http://" + ln.Addr().String(), key: key, kid: kid, signer: signer, ln: ln, cfg: cfg,
		done:    make(chan struct{}),
		clients: map[string]*client{}, codes: map[string]*grant{}, refresh: map[string]*grant{},
		grants: map[string]int{},
	}
	for _, c := range []*client{cfg.preClient, cfg.keyClient} {
		if c != nil {
			is.clients[c.id] = c
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", is.serveMetadata)
	mux.HandleFunc("GET /.well-known/openid-configuration", is.serveMetadata)
	mux.HandleFunc("GET /jwks", is.serveJWKS)
	mux.HandleFunc("POST /register", is.serveRegister)
	mux.HandleFunc("GET /authorize", is.serveAuthorize)
	mux.HandleFunc("POST /token", is.serveToken)
	is.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		defer close(is.done)
		_ = is.srv.Serve(ln)
	}()
	return is, nil
}

// Close stops the issuer.
func (is *Issuer) Close() {
	_ = is.srv.Close()
	<-is.done
}

// PublicKey returns the issuer's signing key's public half.
func (is *Issuer) PublicKey() *ecdsa.PublicKey { return &is.key.PublicKey }

// Mint signs an access token with the issuer's key. Claims not given get defaults: iss the
// issuer, sub the configured user, iat now and exp after the token lifetime; a nil value
// removes a claim.
func (is *Issuer) Mint(claims map[string]any) string {
	now := time.Now()
	c := map[string]any{
		"iss": is.URL, "sub": is.cfg.subject, "iat": now.Unix(), "exp": now.Add(is.cfg.ttl).Unix(),
		"jti": randomString(8),
	}
	for k, v := range claims {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	tok, err := jwt.Signed(is.signer).Claims(c).Serialize()
	if err != nil {
		panic(fmt.Sprintf("testissuer: sign: %v", err))
	}
	return tok
}

// TokenRequests returns how many token requests of the grant type the issuer received,
// answered or refused.
func (is *Issuer) TokenRequests(grantType string) int {
	is.mu.Lock()
	defer is.mu.Unlock()
	return is.grants[grantType]
}

// Registrations returns the Dynamic Client Registration requests received, in order.
func (is *Issuer) Registrations() []Registration {
	is.mu.Lock()
	defer is.mu.Unlock()
	return slices.Clone(is.regs)
}

func (is *Issuer) serveMetadata(w http.ResponseWriter, _ *http.Request) {
	md := map[string]any{
		"issuer":                   is.URL,
		"authorization_endpoint":   is.URL + "/authorize",
		"token_endpoint":           is.URL + "/token",
		"registration_endpoint":    is.URL + "/register",
		"jwks_uri":                 is.URL + "/jwks",
		"scopes_supported":         is.cfg.scopes,
		"response_types_supported": []string{"code"},
		"grant_types_supported": []string{"authorization_code", "refresh_token", "client_credentials",
			"urn:ietf:params:oauth:grant-type:jwt-bearer", "urn:ietf:params:oauth:grant-type:token-exchange"},
		"code_challenge_methods_supported":      []string{"S256"},
		"token_endpoint_auth_methods_supported": []string{"none", "client_secret_basic", "client_secret_post", "private_key_jwt"},
		"id_token_signing_alg_values_supported": []string{"ES256"},
		"subject_types_supported":               []string{"public"},
	}
	if is.cfg.dpop {
		md["dpop_signing_alg_values_supported"] = []string{"ES256"} // RFC 9449 Section 5.1
	}
	switch is.cfg.iss {
	case IssCorrect, IssOmitted, IssWrong, IssTrailingSlash:
		md["authorization_response_iss_parameter_supported"] = true // RFC 9207 Section 3
	}
	writeJSON(w, http.StatusOK, md)
}

// respIss is the iss of an authorization response, or "" for none (RFC 9207 Section 2).
func (is *Issuer) respIss() string {
	switch is.cfg.iss {
	case IssCorrect, IssUnadvertised:
		return is.URL
	case IssWrong:
		return "https://evil.example.com"
	case IssTrailingSlash:
		return is.URL + "/"
	}
	return ""
}

func (is *Issuer) serveJWKS(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{
		Key: &is.key.PublicKey, KeyID: is.kid, Algorithm: string(jose.ES256), Use: "sig",
	}}})
}

func (is *Issuer) serveRegister(w http.ResponseWriter, r *http.Request) {
	var req struct {
		RedirectURIs    []string `json:"redirect_uris"`
		AuthMethod      string   `json:"token_endpoint_auth_method"`
		ClientName      string   `json:"client_name"`
		ApplicationType string   `json:"application_type"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&req); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_client_metadata", "the body must be a JSON client metadata document")
		return
	}
	switch req.ApplicationType {
	case "", "web":
	case "native":
		// OpenID Connect Dynamic Client Registration 1.0 Section 2: native clients use
		// private-use schemes or http on loopback.
		for _, ru := range req.RedirectURIs {
			if u, err := url.Parse(ru); err != nil || u.Scheme == "https" || (u.Scheme == "http" && !isLoopback(u.Hostname())) {
				oauthError(w, http.StatusBadRequest, "invalid_redirect_uri", "a native client's redirect URI must use a private-use scheme or http on loopback: "+ru)
				return
			}
		}
	default:
		oauthError(w, http.StatusBadRequest, "invalid_client_metadata", "application_type must be native or web")
		return
	}
	if req.AuthMethod == "" {
		req.AuthMethod = "client_secret_basic"
	}
	c := &client{id: "client-" + randomString(8), redirectURIs: req.RedirectURIs, authMethod: req.AuthMethod}
	resp := map[string]any{
		"client_id": c.id, "redirect_uris": c.redirectURIs, "token_endpoint_auth_method": c.authMethod,
		"grant_types": []string{"authorization_code", "refresh_token"}, "client_name": req.ClientName,
	}
	if c.authMethod != "none" {
		c.secret = randomString(16)
		resp["client_secret"] = c.secret
	}
	is.mu.Lock()
	is.clients[c.id] = c
	is.regs = append(is.regs, Registration{
		ClientID: c.id, ClientName: req.ClientName, RedirectURIs: req.RedirectURIs,
		AuthMethod: c.authMethod, ApplicationType: req.ApplicationType,
	})
	is.mu.Unlock()
	writeJSON(w, http.StatusCreated, resp)
}

func (is *Issuer) serveAuthorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	is.mu.Lock()
	c := is.clients[q.Get("client_id")]
	is.mu.Unlock()
	redirect := q.Get("redirect_uri")
	if c == nil || !c.allowsRedirect(redirect) {
		http.Error(w, "unknown client_id or unregistered redirect_uri", http.StatusBadRequest)
		return
	}
	back := func(params url.Values) {
		u, _ := url.Parse(redirect)
		params.Set("state", q.Get("state"))
		if iss := is.respIss(); iss != "" {
			params.Set("iss", iss)
		}
		u.RawQuery = params.Encode()
		http.Redirect(w, r, u.String(), http.StatusFound)
	}
	if q.Get("response_type") != "code" {
		back(url.Values{"error": {"unsupported_response_type"}})
		return
	}
	if q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" {
		back(url.Values{"error": {"invalid_request"}, "error_description": {"PKCE with S256 is required"}})
		return
	}
	code := randomString(16)
	is.mu.Lock()
	is.codes[code] = &grant{
		clientID: c.id, subject: is.cfg.subject, scope: q.Get("scope"), resource: q.Get("resource"),
		redirectURI: redirect, challenge: q.Get("code_challenge"), expires: time.Now().Add(time.Minute),
	}
	if is.cfg.dpop {
		is.codes[code].jkt = q.Get("dpop_jkt")
	}
	is.mu.Unlock()
	back(url.Values{"code": {code}})
}

func (c *client) allowsRedirect(uri string) bool {
	if slices.Contains(c.redirectURIs, uri) {
		return true
	}
	// Loopback redirects may use any port (RFC 8252 Section 7.3).
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "http" || !isLoopback(u.Hostname()) {
		return false
	}
	for _, reg := range c.redirectURIs {
		ru, err := url.Parse(reg)
		if err == nil && ru.Hostname() == u.Hostname() && ru.Path == u.Path {
			return true
		}
	}
	return c.secret != "" && len(c.redirectURIs) == 0 // a pre-registered client
}

func isLoopback(host string) bool {
	return host == "127.0.0.1" || host == "localhost" || host == "::1"
}

func (is *Issuer) serveToken(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request", "the body must be form-encoded")
		return
	}
	is.mu.Lock()
	is.grants[r.PostForm.Get("grant_type")]++
	is.mu.Unlock()
	jkt := ""
	if p := r.Header.Values("DPoP"); is.cfg.dpop && len(p) > 0 {
		var err error
		jkt, _, err = VerifyDPoPProof(p, http.MethodPost, is.URL+"/token", "", is.cfg.dpopNonce)
		if errors.Is(err, ErrDPoPNonce) {
			w.Header().Set("DPoP-Nonce", is.cfg.dpopNonce)
			oauthError(w, http.StatusBadRequest, "use_dpop_nonce", "the authorization server requires a DPoP nonce")
			return
		}
		if err != nil {
			oauthError(w, http.StatusBadRequest, "invalid_dpop_proof", err.Error())
			return
		}
	}
	c, ok := is.authenticateClient(r)
	if !ok {
		oauthError(w, http.StatusUnauthorized, "invalid_client", "client authentication failed")
		return
	}
	var g *grant
	switch r.PostForm.Get("grant_type") {
	case "authorization_code":
		is.mu.Lock()
		g = is.codes[r.PostForm.Get("code")]
		delete(is.codes, r.PostForm.Get("code"))
		is.mu.Unlock()
		if g == nil || g.clientID != c.id || time.Now().After(g.expires) || g.redirectURI != r.PostForm.Get("redirect_uri") {
			oauthError(w, http.StatusBadRequest, "invalid_grant", "unknown, expired or mismatched authorization code")
			return
		}
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		if subtle.ConstantTimeCompare([]byte(base64.RawURLEncoding.EncodeToString(sum[:])), []byte(g.challenge)) != 1 {
			oauthError(w, http.StatusBadRequest, "invalid_grant", "the PKCE code_verifier does not match the code_challenge")
			return
		}
		if res := r.PostForm.Get("resource"); res != "" && res != g.resource {
			oauthError(w, http.StatusBadRequest, "invalid_target", "the resource differs from the authorization request's")
			return
		}
	case "refresh_token":
		is.mu.Lock()
		g = is.refresh[r.PostForm.Get("refresh_token")]
		delete(is.refresh, r.PostForm.Get("refresh_token")) // rotated (OAuth 2.1 Section 4.3.1)
		is.mu.Unlock()
		if g == nil || g.clientID != c.id {
			oauthError(w, http.StatusBadRequest, "invalid_grant", "unknown refresh token")
			return
		}
		if res := r.PostForm.Get("resource"); res != "" {
			g.resource = res
		}
	case "urn:ietf:params:oauth:grant-type:token-exchange":
		is.tokenExchange(w, r, c)
		return
	case "urn:ietf:params:oauth:grant-type:jwt-bearer":
		if g = is.jwtBearer(w, r, c); g == nil {
			return
		}
	case "client_credentials":
		if c.secret == "" && c.key == nil {
			oauthError(w, http.StatusUnauthorized, "invalid_client", "client_credentials needs a confidential client")
			return
		}
		g = &grant{clientID: c.id, subject: c.id, scope: r.PostForm.Get("scope"), resource: r.PostForm.Get("resource")}
	default:
		oauthError(w, http.StatusBadRequest, "unsupported_grant_type", "grant_type "+r.PostForm.Get("grant_type")+" is not supported")
		return
	}
	if g.jkt != "" && g.jkt != jkt {
		// A code or refresh token bound to a key is redeemed only with a proof of it (RFC
		// 9449 Sections 5 and 10).
		oauthError(w, http.StatusBadRequest, "invalid_grant", "the grant is bound to another DPoP key")
		return
	}
	claims := map[string]any{"sub": g.subject, "client_id": g.clientID}
	if g.resource != "" {
		claims["aud"] = g.resource
	}
	if g.scope != "" {
		claims["scope"] = g.scope
	}
	tokenType := "Bearer"
	if jkt != "" {
		claims["cnf"] = map[string]string{"jkt": jkt} // RFC 9449 Section 6.1
		tokenType = "DPoP"
		g.jkt = jkt
	}
	resp := map[string]any{
		"access_token": is.Mint(claims), "token_type": tokenType, "expires_in": int(is.cfg.ttl.Seconds()),
	}
	if g.scope != "" {
		resp["scope"] = g.scope
	}
	if r.PostForm.Get("grant_type") != "client_credentials" {
		rt := randomString(16)
		is.mu.Lock()
		is.refresh[rt] = g
		is.mu.Unlock()
		resp["refresh_token"] = rt
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, resp)
}

func (is *Issuer) authenticateClient(r *http.Request) (*client, bool) {
	if r.PostForm.Get("client_assertion_type") == "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" {
		return is.assertedClient(r.PostForm.Get("client_assertion"))
	}
	id, secret, basic := r.BasicAuth()
	if basic {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
	} else {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	is.mu.Lock()
	c := is.clients[id]
	is.mu.Unlock()
	if c == nil {
		return nil, false
	}
	if c.secret == "" {
		return c, secret == ""
	}
	return c, subtle.ConstantTimeCompare([]byte(secret), []byte(c.secret)) == 1
}

func oauthError(w http.ResponseWriter, status int, code, desc string) {
	writeJSON(w, status, map[string]string{"error": code, "error_description": desc})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func randomString(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return strings.ToLower(hex.EncodeToString(b))
}

// assertedClient authenticates a private_key_jwt client: iss and sub its ID, aud this
// issuer, signed with its key.
func (is *Issuer) assertedClient(assertion string) (*client, bool) {
	tok, err := jwt.ParseSigned(assertion, []jose.SignatureAlgorithm{jose.ES256, jose.RS256, jose.PS256, jose.EdDSA})
	if err != nil {
		return nil, false
	}
	var unverified jwt.Claims
	if tok.UnsafeClaimsWithoutVerification(&unverified) != nil {
		return nil, false
	}
	is.mu.Lock()
	c := is.clients[unverified.Subject]
	is.mu.Unlock()
	if c == nil || c.key == nil {
		return nil, false
	}
	var claims jwt.Claims
	if tok.Claims(c.key, &claims) != nil || claims.Issuer != c.id || claims.Expiry == nil ||
		claims.Validate(jwt.Expected{AnyAudience: jwt.Audience{is.URL, is.URL + "/token"}, Time: time.Now()}) != nil {
		return nil, false
	}
	return c, true
}

const (
	idJAGType   = "urn:ietf:params:oauth:token-type:id-jag"
	idTokenType = "urn:ietf:params:oauth:token-type:id_token"
)

// tokenExchange issues an ID-JAG (SEP-990) for an ID token this issuer signed (RFC 8693).
func (is *Issuer) tokenExchange(w http.ResponseWriter, r *http.Request, c *client) {
	f := r.PostForm
	if f.Get("subject_token_type") != idTokenType || f.Get("requested_token_type") != idJAGType || f.Get("audience") == "" {
		oauthError(w, http.StatusBadRequest, "invalid_request", "token exchange needs an id_token subject, an id-jag requested type and an audience")
		return
	}
	tok, err := jwt.ParseSigned(f.Get("subject_token"), []jose.SignatureAlgorithm{jose.ES256})
	var id jwt.Claims
	if err != nil || tok.Claims(&is.key.PublicKey, &id) != nil || id.Issuer != is.URL ||
		id.Validate(jwt.Expected{Time: time.Now()}) != nil {
		oauthError(w, http.StatusBadRequest, "invalid_grant", "the subject token is not a valid ID token of this issuer")
		return
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: is.key, KeyID: is.kid}},
		(&jose.SignerOptions{}).WithType("oauth-id-jag+jwt"))
	if err != nil {
		oauthError(w, http.StatusInternalServerError, "server_error", err.Error())
		return
	}
	now := time.Now()
	jag, err := jwt.Signed(signer).Claims(map[string]any{
		"iss": is.URL, "sub": id.Subject, "aud": f.Get("audience"), "resource": f.Get("resource"),
		"client_id": c.id, "iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(), "jti": randomString(8),
	}).Serialize()
	if err != nil {
		oauthError(w, http.StatusInternalServerError, "server_error", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"access_token": jag, "issued_token_type": idJAGType, "token_type": "N_A"})
}

// jwtBearer accepts an ID-JAG from the trusted identity provider (RFC 7523 Section 2.1).
func (is *Issuer) jwtBearer(w http.ResponseWriter, r *http.Request, c *client) *grant {
	idp := is.cfg.trusts
	if idp == nil && is.cfg.workloads == nil {
		oauthError(w, http.StatusBadRequest, "unsupported_grant_type", "this issuer trusts no identity provider")
		return nil
	}
	tok, err := jwt.ParseSigned(r.PostForm.Get("assertion"), []jose.SignatureAlgorithm{jose.ES256})
	if err == nil && is.cfg.workloads != nil && len(tok.Headers) == 1 && tok.Headers[0].ExtraHeaders["typ"] != "oauth-id-jag+jwt" {
		var claims jwt.Claims
		if tok.Claims(is.cfg.workloads.PublicKey(), &claims) != nil || claims.Expiry == nil ||
			claims.Validate(jwt.Expected{Issuer: is.cfg.workloads.URL, AnyAudience: jwt.Audience{is.URL}, Time: time.Now()}) != nil {
			oauthError(w, http.StatusBadRequest, "invalid_grant", "the workload JWT is not valid for this issuer")
			return nil
		}
		return &grant{clientID: c.id, subject: claims.Subject, scope: r.PostForm.Get("scope"), resource: r.PostForm.Get("resource")}
	}
	if err != nil || idp == nil || len(tok.Headers) != 1 || tok.Headers[0].ExtraHeaders["typ"] != "oauth-id-jag+jwt" {
		oauthError(w, http.StatusBadRequest, "invalid_grant", "the assertion is not an ID-JAG")
		return nil
	}
	var claims jwt.Claims
	var extra struct {
		Resource string `json:"resource"`
	}
	if tok.Claims(idp.PublicKey(), &claims, &extra) != nil ||
		claims.Validate(jwt.Expected{Issuer: idp.URL, AnyAudience: jwt.Audience{is.URL}, Time: time.Now()}) != nil {
		oauthError(w, http.StatusBadRequest, "invalid_grant", "the ID-JAG is not valid for this issuer")
		return nil
	}
	if res := r.PostForm.Get("resource"); res != "" && res != extra.Resource {
		oauthError(w, http.StatusBadRequest, "invalid_target", "the resource differs from the ID-JAG's")
		return nil
	}
	return &grant{clientID: c.id, subject: claims.Subject, scope: r.PostForm.Get("scope"), resource: extra.Resource}
}

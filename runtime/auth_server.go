package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// A TokenVerifier checks a bearer access token presented to a Server and says whom it
// identifies. It must check that the token was issued for this server (its audience, RFC 8707)
// by a trusted authorization server, and that it is in date. The jwtauth package has one for
// JWTs signed with the keys of an issuer's JWKS.
//
// VerifyToken returns an error wrapping ErrInvalidToken for a token that is malformed,
// expired, badly signed or not meant for this server: the Server answers 401 and the client
// obtains a new token. Any other error means the token could not be checked (say, the
// issuer's keys could not be fetched): the Server answers 503 and logs it.
type TokenVerifier interface {
	VerifyToken(ctx context.Context, token string) (*TokenInfo, error)
}

// TokenVerifierFunc is a function that is a TokenVerifier.
type TokenVerifierFunc func(ctx context.Context, token string) (*TokenInfo, error)

// VerifyToken implements TokenVerifier.
func (f TokenVerifierFunc) VerifyToken(ctx context.Context, token string) (*TokenInfo, error) {
	return f(ctx, token)
}

// ErrInvalidToken is wrapped by a TokenVerifier's errors for tokens that are not valid for the
// server (RFC 6750 Section 3.1, "invalid_token").
var ErrInvalidToken = errors.New("invalid access token")

// ProtectedResource describes a Server as an OAuth 2.0 protected resource: what its Protected
// Resource Metadata (RFC 9728) says, and the scopes every request needs.
type ProtectedResource struct {
	// Resource is the canonical URI of the MCP endpoint (RFC 8707, RFC 9728 "resource"), e.g.
	// "https://mcp.example.com/mcp": what clients ask tokens for and what tokens' audience
	// must name. Required.
	Resource string
	// AuthorizationServers are the issuer URLs of the authorization servers that issue tokens
	// for this server (RFC 9728 "authorization_servers").
	AuthorizationServers []string
	// ScopesSupported are the scopes clients may request (RFC 9728 "scopes_supported"); when
	// nil, Scopes are advertised.
	ScopesSupported []string
	// Scopes are needed by every request: a token without them gets 403 insufficient_scope,
	// and they are the scope of the 401 challenge. Tools may require more (ToolSpec.Scopes).
	Scopes []string
	// ResourceName is a human-readable name of the server (RFC 9728 "resource_name").
	ResourceName string
	// ResourceDocumentation is the URL of documentation for developers (RFC 9728
	// "resource_documentation").
	ResourceDocumentation string
	// MetadataURL is where the metadata is served; by default the well-known URL that RFC
	// 9728 Section 3.1 derives from Resource (see WellKnownURL).
	MetadataURL string
}

// WellKnownURL returns the URL of the resource's metadata: MetadataURL when set, otherwise
// "/.well-known/oauth-protected-resource" inserted between the host and the path of Resource
// (RFC 9728 Section 3.1): https://mcp.example.com/.well-known/oauth-protected-resource/mcp for
// https://mcp.example.com/mcp.
func (p *ProtectedResource) WellKnownURL() string {
	if p.MetadataURL != "" {
		return p.MetadataURL
	}
	u, err := url.Parse(p.Resource)
	if err != nil {
		return ""
	}
	path := strings.TrimSuffix(u.EscapedPath(), "/")
	return (&url.URL{Scheme: u.Scheme, Host: u.Host}).String() + wellKnownPRM + path
}

// MetadataPath returns the path part of WellKnownURL: where to mount MetadataHandler.
func (p *ProtectedResource) MetadataPath() string {
	u, err := url.Parse(p.WellKnownURL())
	if err != nil {
		return ""
	}
	return u.Path
}

const wellKnownPRM = "/.well-known/oauth-protected-resource"

// ProtectedResourceMetadata is the JSON document of RFC 9728 Section 2.
type ProtectedResourceMetadata struct {
	// Resource is the resource identifier: the MCP endpoint's canonical URI.
	Resource string `json:"resource"`
	// AuthorizationServers are the issuer identifiers of the authorization servers.
	AuthorizationServers []string `json:"authorization_servers,omitempty"`
	// ScopesSupported are the scopes clients may request for the resource.
	ScopesSupported []string `json:"scopes_supported,omitempty"`
	// BearerMethodsSupported are the ways to send a bearer token: "header".
	BearerMethodsSupported []string `json:"bearer_methods_supported,omitempty"`
	// ResourceName is a human-readable name of the resource.
	ResourceName string `json:"resource_name,omitempty"`
	// ResourceDocumentation is the URL of the resource's documentation for developers.
	ResourceDocumentation string `json:"resource_documentation,omitempty"`
}

// Metadata returns the resource's Protected Resource Metadata.
func (p *ProtectedResource) Metadata() *ProtectedResourceMetadata {
	scopes := p.ScopesSupported
	if scopes == nil {
		scopes = p.Scopes
	}
	return &ProtectedResourceMetadata{
		Resource:               p.Resource,
		AuthorizationServers:   p.AuthorizationServers,
		ScopesSupported:        scopes,
		BearerMethodsSupported: []string{"header"},
		ResourceName:           p.ResourceName,
		ResourceDocumentation:  p.ResourceDocumentation,
	}
}

// MetadataHandler serves the resource's Protected Resource Metadata (RFC 9728 Section 3) to
// GET, with CORS headers so that browser-based clients can read it. Mount it at
// MetadataPath on the server's mux; a Server given WithTokenVerifier also serves it itself at
// that path, which is enough when the Server is the http.Server's root handler.
func (p *ProtectedResource) MetadataHandler() http.Handler {
	body, err := json.Marshal(p.Metadata())
	if err != nil {
		panic(fmt.Sprintf("mcp: protected resource metadata: %v", err)) // strings and slices only
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", "*")
		switch r.Method {
		case http.MethodGet, http.MethodHead:
		case http.MethodOptions:
			h.Set("Access-Control-Allow-Methods", "GET, OPTIONS")
			w.WriteHeader(http.StatusNoContent)
			return
		default:
			h.Set("Allow", "GET, HEAD, OPTIONS")
			http.Error(w, "use GET to read the protected resource metadata", http.StatusMethodNotAllowed)
			return
		}
		h.Set("Content-Type", "application/json")
		h.Set("Cache-Control", "max-age=300")
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodGet {
			_, _ = w.Write(body)
		}
	})
}

// WithTokenVerifier makes the Server require a bearer access token (RFC 6750) on every HTTP
// request and check it with v:
//
//   - no token, or one v refuses: 401 with WWW-Authenticate: Bearer resource_metadata="..."
//     (and scope="..." when pr.Scopes is set), as the MCP spec's Authorization section asks;
//   - a token without pr.Scopes, or (for tools/call) without the tool's ToolSpec.Scopes: 403
//     with error="insufficient_scope" and the scopes needed, so that the client can step up;
//   - a token of another identity on a session: 403 (sessions are bound to who started them).
//
// The token's TokenInfo reaches handlers and interceptors (TokenInfoFrom). The Server also
// serves pr's metadata at pr.MetadataPath(), for when it is the root handler; mounted under a
// path, mount pr.MetadataHandler() at pr.MetadataPath() too. Over stdio there is no token and
// nothing is checked (the spec's Authorization section applies to HTTP transports only).
func WithTokenVerifier(v TokenVerifier, pr ProtectedResource) ServerOption {
	return serverOptionFunc(func(c *serverConfig) {
		c.auth = &serverAuth{verifier: v, pr: pr, metadata: pr.MetadataHandler(), metadataPath: pr.MetadataPath()}
	})
}

// serverAuth is what WithTokenVerifier configures.
type serverAuth struct {
	verifier     TokenVerifier
	pr           ProtectedResource
	metadata     http.Handler
	metadataPath string
}

// authenticate checks the request's bearer token. It returns the request with the token's
// TokenInfo in its context, or answers the error itself and returns false.
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	a := s.cfg.auth
	if r.URL.Path == a.metadataPath && a.metadataPath != "" {
		a.metadata.ServeHTTP(w, r)
		return nil, false
	}
	token, ok := bearerToken(r)
	if !ok {
		a.challenge(w, http.StatusUnauthorized, "", "", a.pr.Scopes)
		s.httpError(w, http.StatusUnauthorized, CodeInvalidRequest, "authorization required: send an OAuth access token in an Authorization: Bearer header (see the WWW-Authenticate header for where to get one)")
		return nil, false
	}
	info, err := a.verify(r.Context(), token)
	if err != nil {
		s.refuseToken(w, err)
		return nil, false
	}
	if missing := info.missingScopes(a.pr.Scopes); len(missing) > 0 {
		desc := "the token lacks the scopes " + strings.Join(missing, " ")
		a.challenge(w, http.StatusForbidden, "insufficient_scope", desc, a.pr.Scopes)
		s.httpError(w, http.StatusForbidden, CodeInvalidRequest, desc)
		return nil, false
	}
	return r.WithContext(ContextWithTokenInfo(r.Context(), info)), true
}

// bearerToken returns the access token of the request's Authorization: Bearer header (RFC 6750
// Section 2.1), if it has one.
func bearerToken(r *http.Request) (string, bool) {
	scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	token = strings.TrimSpace(token)
	return token, strings.EqualFold(scheme, "Bearer") && token != ""
}

// verify asks the verifier who token identifies, refusing a token it returns no identity for
// and one past its expiry (the verifier need not check it) with ErrInvalidToken.
func (a *serverAuth) verify(ctx context.Context, token string) (*TokenInfo, error) {
	info, err := a.verifier.VerifyToken(ctx, token)
	if err != nil {
		return nil, err
	}
	if info == nil {
		return nil, fmt.Errorf("%w: the verifier returned no identity", ErrInvalidToken)
	}
	if !info.Expiry.IsZero() && time.Now().After(info.Expiry) {
		return nil, fmt.Errorf("%w: the token expired at %s", ErrInvalidToken, info.Expiry.UTC().Format(time.RFC3339))
	}
	return info, nil
}

// refuseToken answers a request whose token was not verified: 401 with the invalid_token
// challenge when the token is invalid, 503 when the verifier failed (the token may be valid).
func (s *Server) refuseToken(w http.ResponseWriter, err error) {
	if !errors.Is(err, ErrInvalidToken) {
		s.peerError("mcp: could not verify an access token", "error", err)
		s.httpError(w, http.StatusServiceUnavailable, CodeInternalError, "the access token could not be verified right now; try again later")
		return
	}
	s.peerDebug("mcp: access token refused", "error", err)
	s.cfg.auth.challenge(w, http.StatusUnauthorized, "invalid_token", err.Error(), s.cfg.auth.pr.Scopes)
	s.httpError(w, http.StatusUnauthorized, CodeInvalidRequest, "the access token is not valid for this server: "+err.Error())
}

// challenge sets the WWW-Authenticate header of an answer (RFC 6750 Section 3, RFC 9728
// Section 5.1).
func (a *serverAuth) challenge(w http.ResponseWriter, status int, code, desc string, scopes []string) {
	var b strings.Builder
	b.WriteString("Bearer")
	sep := " "
	param := func(k, v string) {
		b.WriteString(sep)
		b.WriteString(k)
		b.WriteString(`="`)
		b.WriteString(strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\r", " ", "\n", " ").Replace(v))
		b.WriteString(`"`)
		sep = ", "
	}
	if code != "" {
		param("error", code)
	}
	if desc != "" {
		param("error_description", truncate(desc, 200))
	}
	if len(scopes) > 0 {
		param("scope", strings.Join(scopes, " "))
	}
	if u := a.pr.WellKnownURL(); u != "" {
		param("resource_metadata", u)
	}
	w.Header().Set("WWW-Authenticate", b.String())
}

// ownedBy reports whether info is the identity the session was started with.
func (sess *session) ownedBy(info *TokenInfo) bool {
	return sess.owner == info.identity()
}

// authorizeCall checks, before a tools/call runs, that the token grants the tool's scopes
// (ToolSpec.Scopes): a token without them gets 403 insufficient_scope (the spec's Scope
// Challenge Handling) and the handler never runs. It answers the error itself and returns
// false.
func (s *Server) authorizeCall(w http.ResponseWriter, r *http.Request, msg *wireMessage) bool {
	t := s.scopedTool(msg.Params)
	if t == nil {
		return true
	}
	info := TokenInfoFrom(r.Context())
	if !t.listing.shows(r.Context(), info) {
		return true // hidden from this caller (WithVisibility): the route answers it as unknown
	}
	missing := info.missingScopes(t.scopes)
	if len(missing) == 0 {
		return true
	}
	name := truncate(t.tool.Name, 64)
	desc := fmt.Sprintf("tool %q needs the scopes %s", name, strings.Join(missing, " "))
	if info == nil {
		desc = fmt.Sprintf("tool %q needs an access token with the scopes %s", name, strings.Join(t.scopes, " "))
	}
	if a := s.cfg.auth; a != nil {
		a.challenge(w, http.StatusForbidden, "insufficient_scope", desc, a.stepUpScopes(info, t.scopes))
	}
	s.writeJSON(w, http.StatusForbidden, encodeResponse(msg.ID, nil, NewError(CodeInvalidRequest, "forbidden: "+desc)))
	return false
}

// scopedTool returns the tool a tools/call's params name when it needs OAuth scopes
// (ToolSpec.Scopes), or nil: no tool needs scopes, the tool needs none or does not exist, or
// the params are malformed (the route answers them).
func (s *Server) scopedTool(params json.RawMessage) *toolEntry {
	if !s.scoped.Load() {
		return nil
	}
	p, ok := scanCallToolParams(params)
	if !ok {
		var q CallToolParams // declared here: only this rare path moves it to the heap
		if json.Unmarshal(params, &q) != nil {
			return nil
		}
		p = q
	}
	if t, ok := s.tools.get(p.Name); ok && len(t.scopes) > 0 {
		return t
	}
	return nil
}

// stepUpScopes returns the scopes a request for a tool that needs scopes asks for: the
// server's, those already granted that the server advertises, and the tool's, so that a
// step-up loses none of them.
func (a *serverAuth) stepUpScopes(info *TokenInfo, scopes []string) []string {
	need := append([]string(nil), a.pr.Scopes...)
	for _, sc := range info.grantedOf(a.pr.Metadata().ScopesSupported) {
		need = appendNew(need, sc)
	}
	for _, sc := range scopes {
		need = appendNew(need, sc)
	}
	return need
}

// grantedOf returns those of scopes the token grants.
func (t *TokenInfo) grantedOf(scopes []string) []string {
	var out []string
	for _, s := range scopes {
		if t.HasScope(s) {
			out = append(out, s)
		}
	}
	return out
}

// appendNew appends s to list unless list holds it.
func appendNew(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

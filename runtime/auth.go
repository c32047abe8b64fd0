package runtime

import (
	"context"
	"slices"
	"time"
)

// TokenInfo is the identity an access token establishes: who is calling, for which client,
// with which scopes. A Server's TokenVerifier produces one for every HTTP request; an HTTP
// middleware of the user's own can set one with ContextWithTokenInfo instead. Handlers and
// interceptors read it with TokenInfoFrom (or Caller.TokenInfo), for every request of a
// session, whatever the response mode and on resumed streams.
//
// A TokenInfo is shared by everything serving the request: treat it as read-only.
type TokenInfo struct {
	// Subject is the user or client the token was issued for (the JWT "sub" claim).
	Subject string
	// Issuer is the authorization server that issued the token (the JWT "iss" claim).
	Issuer string
	// ClientID is the OAuth client the token was issued to ("client_id" or "azp"), if known.
	ClientID string
	// Audience lists the resources the token is for (the JWT "aud" claim, RFC 8707).
	Audience []string
	// Scopes are the scopes the token grants.
	Scopes []string
	// Expiry is when the token expires; zero when it does not say.
	Expiry time.Time
	// Claims are all of the token's claims, when the verifier has them (nil otherwise).
	Claims map[string]any
}

// HasScope reports whether the token grants scope.
func (t *TokenInfo) HasScope(scope string) bool {
	return t != nil && slices.Contains(t.Scopes, scope)
}

// missingScopes returns those of want the token does not grant.
func (t *TokenInfo) missingScopes(want []string) []string {
	var missing []string
	for _, s := range want {
		if !t.HasScope(s) {
			missing = append(missing, s)
		}
	}
	return missing
}

// identity is what a session is bound to: the issuer, the subject and the client. Two
// requests with the same identity may share a session; the zero identity is anonymous.
type identity struct {
	authenticated             bool
	issuer, subject, clientID string
}

// identity returns the token's identity (comparable, and free to compute on every request).
func (t *TokenInfo) identity() identity {
	if t == nil {
		return identity{}
	}
	return identity{authenticated: true, issuer: t.Issuer, subject: t.Subject, clientID: t.ClientID}
}

type tokenInfoKey struct{}

// ContextWithTokenInfo returns ctx carrying info. An HTTP middleware in front of a Server
// that authenticates requests itself uses it on the request's context: the Server then binds
// sessions to the identity and shows it to handlers and interceptors, as it does for its own
// TokenVerifier (WithTokenVerifier).
func ContextWithTokenInfo(ctx context.Context, info *TokenInfo) context.Context {
	return context.WithValue(ctx, tokenInfoKey{}, info)
}

// TokenInfoFrom returns the TokenInfo of the request ctx belongs to: in a handler or a
// server interceptor, that of the HTTP request that carried the MCP request. It returns nil
// when the request was not authenticated (no verifier and no middleware, or stdio).
func TokenInfoFrom(ctx context.Context) *TokenInfo {
	info, _ := ctx.Value(tokenInfoKey{}).(*TokenInfo)
	return info
}

// TokenInfo returns the TokenInfo of the HTTP request that carried the request, or nil; the
// same as TokenInfoFrom on the handler's context.
func (c *Caller) TokenInfo() *TokenInfo {
	if rs := c.state(); rs != nil {
		return rs.token
	}
	return nil
}

// Package jwtauth verifies JWT access tokens for a protomcp Server: a runtime.TokenVerifier
// that checks a token's signature against the keys its issuer publishes (a JWKS, fetched and
// cached), its issuer, its audience (the server's resource, RFC 8707), its validity period
// with a leeway, and its algorithm against an allow-list of asymmetric algorithms, so that
// neither "alg": "none" nor an HMAC token keyed with the public key is ever accepted.
//
//	v, err := jwtauth.NewVerifier(jwtauth.Config{
//		Issuer:   "https://auth.example.com",
//		Audience: "https://mcp.example.com/mcp",
//	})
//	srv := runtime.NewServer(impl, runtime.WithTokenVerifier(v, runtime.ProtectedResource{
//		Resource:             "https://mcp.example.com/mcp",
//		AuthorizationServers: []string{"https://auth.example.com"},
//	}))
//
// It is a package of its own so that servers that do not verify JWTs do not link a JOSE
// library; it uses github.com/go-jose/go-jose/v4, which has no dependencies of its own.
package jwtauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/protomcp/protomcp/runtime"
)

// Config configures a Verifier.
type Config struct {
	// Issuer is the authorization server's issuer identifier: the "iss" claim must equal it.
	// Required.
	Issuer string
	// Audience is the server's resource (ProtectedResource.Resource): the "aud" claim must
	// contain it (RFC 8707). Required.
	Audience string
	// JWKSURL is where the issuer publishes its keys. When empty, it is the jwks_uri of the
	// issuer's metadata: RFC 8414 authorization server metadata, then OpenID Connect
	// discovery.
	JWKSURL string
	// Algorithms are the signature algorithms accepted (default RS256, PS256, ES256, ES384,
	// EdDSA). Only asymmetric algorithms can be allowed: a JWKS publishes public keys.
	Algorithms []jose.SignatureAlgorithm
	// Leeway is the clock skew allowed on exp, nbf and iat (default 1 minute).
	Leeway time.Duration
	// HTTPClient fetches the metadata and the keys (default: a client with a 10 s timeout).
	HTTPClient *http.Client
	// CacheTTL is how long fetched keys are used before they are fetched again (default 10
	// minutes). A token signed with an unknown key ID makes the Verifier fetch the keys again
	// sooner, at most once per MinRefresh (default 30 s), so that key rotation is picked up.
	CacheTTL, MinRefresh time.Duration
	// Now returns the current time (default time.Now); for tests of expiry.
	Now func() time.Time
}

// Verifier is a runtime.TokenVerifier for JWT access tokens. It is safe for concurrent use.
type Verifier struct {
	cfg Config

	mu        sync.Mutex
	keys      *jose.JSONWebKeySet
	fetchedAt time.Time
	jwksURL   string
}

var _ runtime.TokenVerifier = (*Verifier)(nil)

// DefaultAlgorithms are the algorithms a Verifier accepts unless told otherwise.
var DefaultAlgorithms = []jose.SignatureAlgorithm{jose.RS256, jose.PS256, jose.ES256, jose.ES384, jose.EdDSA}

// NewVerifier returns a Verifier. It does not contact the issuer until the first token.
func NewVerifier(cfg Config) (*Verifier, error) {
	if cfg.Issuer == "" {
		return nil, errors.New("jwtauth: Config.Issuer is required")
	}
	if cfg.Audience == "" {
		return nil, errors.New("jwtauth: Config.Audience is required (the server's resource URI, RFC 8707)")
	}
	if len(cfg.Algorithms) == 0 {
		cfg.Algorithms = DefaultAlgorithms
	}
	for _, a := range cfg.Algorithms {
		switch a {
		case jose.HS256, jose.HS384, jose.HS512, "none", "":
			return nil, fmt.Errorf("jwtauth: algorithm %q cannot be allowed: only asymmetric algorithms verify against a JWKS", a)
		}
	}
	if cfg.Leeway == 0 {
		cfg.Leeway = time.Minute
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	if cfg.CacheTTL == 0 {
		cfg.CacheTTL = 10 * time.Minute
	}
	if cfg.MinRefresh == 0 {
		cfg.MinRefresh = 30 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Verifier{cfg: cfg, jwksURL: cfg.JWKSURL}, nil
}

// claims are the claims the Verifier reads besides the registered ones.
type claims struct {
	Scope    string          `json:"scope"`
	Scp      json.RawMessage `json:"scp"`
	ClientID string          `json:"client_id"`
	Azp      string          `json:"azp"`
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{runtime.ErrInvalidToken}, args...)...)
}

// VerifyToken implements runtime.TokenVerifier. Its errors wrap runtime.ErrInvalidToken,
// except when the issuer's keys cannot be fetched.
func (v *Verifier) VerifyToken(ctx context.Context, token string) (*runtime.TokenInfo, error) {
	tok, err := jwt.ParseSigned(token, v.cfg.Algorithms)
	if err != nil {
		return nil, invalid("not a JWT signed with an allowed algorithm (%s): %v", algNames(v.cfg.Algorithms), err)
	}
	if len(tok.Headers) != 1 {
		return nil, invalid("the JWT must have exactly one signature")
	}
	hdr := tok.Headers[0]
	keys, err := v.keysFor(ctx, hdr)
	if err != nil {
		return nil, err
	}
	if len(keys) == 0 {
		return nil, invalid("no key of the issuer matches the token's key ID %q and algorithm %s", hdr.KeyID, hdr.Algorithm)
	}
	var (
		reg   jwt.Claims
		extra claims
		all   map[string]any
	)
	verified := false
	for _, k := range keys {
		if err = tok.Claims(k.Key, &reg, &extra, &all); err == nil {
			verified = true
			break
		}
	}
	if !verified {
		return nil, invalid("bad signature: %v", err)
	}
	if reg.Expiry == nil {
		return nil, invalid("the token has no exp claim")
	}
	err = reg.ValidateWithLeeway(jwt.Expected{
		Issuer:      v.cfg.Issuer,
		AnyAudience: jwt.Audience{v.cfg.Audience},
		Time:        v.cfg.Now(),
	}, v.cfg.Leeway)
	switch {
	case err == nil:
	case errors.Is(err, jwt.ErrInvalidIssuer):
		return nil, invalid("issuer %q is not the trusted issuer %q", reg.Issuer, v.cfg.Issuer)
	case errors.Is(err, jwt.ErrInvalidAudience):
		return nil, invalid("audience %q does not include this server's resource %q", []string(reg.Audience), v.cfg.Audience)
	case errors.Is(err, jwt.ErrExpired):
		return nil, invalid("the token expired at %s", reg.Expiry.Time().UTC().Format(time.RFC3339))
	case errors.Is(err, jwt.ErrNotValidYet):
		return nil, invalid("the token is not valid before %s", reg.NotBefore.Time().UTC().Format(time.RFC3339))
	default:
		return nil, invalid("%v", err)
	}
	info := &runtime.TokenInfo{
		Subject:  reg.Subject,
		Issuer:   reg.Issuer,
		ClientID: extra.ClientID,
		Audience: reg.Audience,
		Scopes:   scopes(extra),
		Expiry:   reg.Expiry.Time(),
		Claims:   all,
	}
	if info.ClientID == "" {
		info.ClientID = extra.Azp
	}
	return info, nil
}

// scopes reads "scope" (RFC 8693 Section 4.2, RFC 9068: space-separated) or "scp" (a list or a
// string, as some issuers write it).
func scopes(c claims) []string {
	if c.Scope != "" {
		return strings.Fields(c.Scope)
	}
	if len(c.Scp) == 0 {
		return nil
	}
	var list []string
	if json.Unmarshal(c.Scp, &list) == nil {
		return list
	}
	var s string
	if json.Unmarshal(c.Scp, &s) == nil {
		return strings.Fields(s)
	}
	return nil
}

func algNames(algs []jose.SignatureAlgorithm) string {
	names := make([]string, len(algs))
	for i, a := range algs {
		names[i] = string(a)
	}
	return strings.Join(names, ", ")
}

// keysFor returns the issuer's keys that may have signed a token with header h, fetching the
// key set when it is stale or lacks the key ID.
func (v *Verifier) keysFor(ctx context.Context, h jose.Header) ([]jose.JSONWebKey, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	now := v.cfg.Now()
	if v.keys == nil || now.Sub(v.fetchedAt) > v.cfg.CacheTTL {
		if err := v.fetch(ctx); err != nil {
			return nil, err
		}
	}
	keys := match(v.keys, h)
	if len(keys) == 0 && h.KeyID != "" && now.Sub(v.fetchedAt) > v.cfg.MinRefresh {
		if err := v.fetch(ctx); err != nil {
			return nil, err
		}
		keys = match(v.keys, h)
	}
	return keys, nil
}

func match(set *jose.JSONWebKeySet, h jose.Header) []jose.JSONWebKey {
	var out []jose.JSONWebKey
	for _, k := range set.Keys {
		if h.KeyID != "" && k.KeyID != h.KeyID {
			continue
		}
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		if k.Algorithm != "" && k.Algorithm != h.Algorithm {
			continue
		}
		if !k.IsPublic() {
			continue // never a symmetric or private key from a JWKS
		}
		out = append(out, k)
	}
	return out
}

// fetch loads the key set, discovering its URL first when needed. Called with v.mu held.
func (v *Verifier) fetch(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if v.jwksURL == "" {
		u, err := v.discoverJWKS(ctx)
		if err != nil {
			return err
		}
		v.jwksURL = u
	}
	var set jose.JSONWebKeySet
	if err := getJSON(ctx, v.cfg.HTTPClient, v.jwksURL, &set); err != nil {
		return fmt.Errorf("jwtauth: fetch the issuer's keys: %w", err)
	}
	v.keys, v.fetchedAt = &set, v.cfg.Now()
	return nil
}

// discoverJWKS reads jwks_uri from the issuer's metadata: RFC 8414 Section 3.1 (the
// well-known path inserted before the issuer's path), then OpenID Connect Discovery 1.0.
func (v *Verifier) discoverJWKS(ctx context.Context) (string, error) {
	iss, err := url.Parse(v.cfg.Issuer)
	if err != nil {
		return "", fmt.Errorf("jwtauth: issuer %q is not a URL: %w", v.cfg.Issuer, err)
	}
	path := strings.TrimSuffix(iss.Path, "/")
	base := iss.Scheme + "://" + iss.Host
	candidates := []string{
		base + "/.well-known/oauth-authorization-server" + path,
		base + "/.well-known/openid-configuration" + path,
		base + path + "/.well-known/openid-configuration",
	}
	var errs []error
	for _, u := range slices.Compact(candidates) {
		var md struct {
			Issuer  string `json:"issuer"`
			JWKSURI string `json:"jwks_uri"`
		}
		if err := getJSON(ctx, v.cfg.HTTPClient, u, &md); err != nil {
			errs = append(errs, err)
			continue
		}
		if md.Issuer != v.cfg.Issuer {
			errs = append(errs, fmt.Errorf("%s names issuer %q, not %q", u, md.Issuer, v.cfg.Issuer))
			continue
		}
		if md.JWKSURI == "" {
			errs = append(errs, fmt.Errorf("%s has no jwks_uri", u))
			continue
		}
		return md.JWKSURI, nil
	}
	return "", fmt.Errorf("jwtauth: discover the issuer's jwks_uri (set Config.JWKSURL to skip this): %w", errors.Join(errs...))
}

func getJSON(ctx context.Context, hc *http.Client, u string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
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

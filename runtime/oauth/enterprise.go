package oauth

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// AssertionFile returns a Config.JWTBearerAssertion that reads the assertion from a file at
// each token request, for workload identity federation: the platform (Kubernetes' projected
// service account tokens, a CI system's OIDC token) writes a short-lived JWT for the
// authorization server's audience there and rotates it, and the client presents it in the
// JWT bearer grant (RFC 7523 Section 2.1). A refused assertion is the request's error: the
// client tries no other grant.
func AssertionFile(path string) func(ctx context.Context, as *AuthServerMetadata, resource string) (string, error) {
	return func(context.Context, *AuthServerMetadata, string) (string, error) {
		b, err := os.ReadFile(path)
		if err != nil {
			return "", fmt.Errorf("workload assertion: %w", err)
		}
		a := strings.TrimSpace(string(b))
		if a == "" {
			return "", fmt.Errorf("workload assertion: %s is empty", path)
		}
		return a, nil
	}
}

// IDJAGConfig configures IDJAGAssertion: the enterprise identity provider's token endpoint
// and how the client is known there.
type IDJAGConfig struct {
	// TokenEndpoint is the identity provider's token endpoint.
	TokenEndpoint string
	// ClientID and ClientSecret authenticate the client at the identity provider
	// (client_secret_post when ClientSecret is set; otherwise client_id only).
	ClientID, ClientSecret string
	// IDToken returns the user's ID token from the identity provider (from the user's
	// single sign-on).
	IDToken func(ctx context.Context) (string, error)
	// Scopes are requested for the grant, if any.
	Scopes []string
	// HTTPClient sends the token exchange (default: one with a 30 s timeout).
	HTTPClient *http.Client
}

// IDJAGAssertion returns an Config.JWTBearerAssertion for the enterprise-managed
// authorization of SEP-990: it exchanges the user's ID token at the identity provider for an
// Identity Assertion JWT Authorization Grant (ID-JAG) for the MCP server's authorization
// server and resource (OAuth 2.0 Token Exchange, RFC 8693), which the client then presents to
// the authorization server with the JWT bearer grant (RFC 7523).
func IDJAGAssertion(cfg IDJAGConfig) func(ctx context.Context, as *AuthServerMetadata, resource string) (string, error) {
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	return cfg.assertion
}

// assertion obtains an ID-JAG for the authorization server as and the resource.
func (cfg IDJAGConfig) assertion(ctx context.Context, as *AuthServerMetadata, resource string) (string, error) {
	if cfg.IDToken == nil {
		return "", fmt.Errorf("IDJAGConfig.IDToken is required")
	}
	idToken, err := cfg.IDToken(ctx)
	if err != nil {
		return "", fmt.Errorf("ID token: %w", err)
	}
	return cfg.exchange(ctx, cfg.exchangeForm(idToken, as.Issuer, resource))
}

// exchangeForm is the token exchange request for an ID-JAG (SEP-990; RFC 8693 Section 2.1):
// the user's ID token for the authorization server audience and the resource, with the
// client's credentials and scopes where configured.
func (cfg IDJAGConfig) exchangeForm(idToken, audience, resource string) url.Values {
	form := url.Values{
		"grant_type":           {"urn:ietf:params:oauth:grant-type:token-exchange"},
		"requested_token_type": {"urn:ietf:params:oauth:token-type:id-jag"},
		"subject_token":        {idToken},
		"subject_token_type":   {"urn:ietf:params:oauth:token-type:id_token"},
		"audience":             {audience},
		"resource":             {resource},
	}
	if cfg.ClientID != "" {
		form.Set("client_id", cfg.ClientID)
	}
	if cfg.ClientSecret != "" {
		form.Set("client_secret", cfg.ClientSecret)
	}
	if len(cfg.Scopes) > 0 {
		form.Set("scope", strings.Join(cfg.Scopes, " "))
	}
	return form
}

// exchange sends the token exchange request form to the identity provider and returns the
// ID-JAG it issues, refusing a token of another type (RFC 8693 Section 2.2.1).
func (cfg IDJAGConfig) exchange(ctx context.Context, form url.Values) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cfg.TokenEndpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := cfg.HTTPClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("token exchange at %s: %w", cfg.TokenEndpoint, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var out struct {
		AccessToken      string `json:"access_token"`
		IssuedTokenType  string `json:"issued_token_type"`
		Error            string `json:"error"`
		ErrorDescription string `json:"error_description"`
	}
	_ = json.Unmarshal(b, &out)
	if resp.StatusCode != http.StatusOK || out.AccessToken == "" {
		return "", fmt.Errorf("token exchange at %s: %s: %s %s", cfg.TokenEndpoint, resp.Status, out.Error, out.ErrorDescription)
	}
	if out.IssuedTokenType != "" && out.IssuedTokenType != "urn:ietf:params:oauth:token-type:id-jag" {
		return "", fmt.Errorf("token exchange at %s issued a %s, not an ID-JAG", cfg.TokenEndpoint, out.IssuedTokenType)
	}
	return out.AccessToken, nil
}

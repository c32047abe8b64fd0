package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/protomcp/protomcp/jwtauth"
	"github.com/protomcp/protomcp/runtime/oauth"
)

// conformanceContext is MCP_CONFORMANCE_CONTEXT: what some auth scenarios give the client.
type conformanceContext struct {
	ClientID         string `json:"client_id"`
	ClientSecret     string `json:"client_secret"`
	PrivateKeyPEM    string `json:"private_key_pem"`
	SigningAlgorithm string `json:"signing_algorithm"`
	IdPClientID      string `json:"idp_client_id"`
	IdPIDToken       string `json:"idp_id_token"`
	IdPIssuer        string `json:"idp_issuer"`
	IdPTokenEndpoint string `json:"idp_token_endpoint"`
	// ValidJWT is the workload's identity token (auth/wif-jwt-bearer).
	ValidJWT string `json:"valid_jwt"`
}

// clientMetadataURL is the Client ID Metadata Document URL the suite expects as client_id
// from authorization servers that support those documents.
const clientMetadataURL = "https://conformance-test.local/client-metadata.json"

// redirectURL is the redirect URI the client registers. The suite's authorization servers
// redirect to it at once; headlessAuthorize reads the redirect without following it.
const redirectURL = "http://localhost:3000/callback"

// runAuth runs every auth/* scenario: the mock server answers 401 until the client has a
// token; the oauth package discovers, registers and authorizes as the scenario's
// authorization server allows. The client lists the tools and calls test-tool.
func runAuth(ctx context.Context, serverURL string, log *slog.Logger) error {
	cfg, err := oauthConfig(os.Getenv("MCP_CONFORMANCE_SCENARIO"), os.Getenv("MCP_CONFORMANCE_CONTEXT"), log)
	if err != nil {
		return err
	}
	c := newClient(serverURL, log, oauth.WithOAuth(cfg))
	defer closeClient(c, log)
	if err := c.Connect(ctx); err != nil {
		return err
	}
	tools, err := c.ListTools(ctx, "")
	if err != nil {
		return err
	}
	log.Info("listed tools", "count", len(tools.Tools))
	res, err := c.CallTool(ctx, "test-tool", json.RawMessage(`{}`))
	if err != nil {
		return err
	}
	log.Info("called test-tool", "isError", res.IsError)
	return nil
}

// oauthConfig maps a scenario and its context to the client's OAuth configuration, as an
// application would configure it for its kind of deployment.
func oauthConfig(scenario, rawCtx string, log *slog.Logger) (oauth.Config, error) {
	var cc conformanceContext
	if rawCtx != "" {
		if err := json.Unmarshal([]byte(rawCtx), &cc); err != nil {
			return oauth.Config{}, fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %w", err)
		}
	}
	// A DPoP key (RFC 9449): tokens are sender-constrained where the authorization server
	// binds them (auth/dpop, auth/dpop-nonce), and bearer tokens elsewhere.
	dpopKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return oauth.Config{}, err
	}
	cfg := oauth.Config{
		ClientName:        "protomcp-conformance-client",
		ClientMetadataURL: clientMetadataURL,
		RedirectURL:       redirectURL,
		Authorize:         headlessAuthorize(log),
		DPoPKey:           dpopKey,
	}
	switch {
	case cc.IdPIDToken != "":
		// Enterprise-managed authorization (SEP-990): the ID token from the enterprise IdP
		// is exchanged for an ID-JAG, presented to the MCP server's authorization server.
		cfg.Grant = oauth.GrantJWTBearer
		cfg.ClientID, cfg.ClientSecret = cc.ClientID, cc.ClientSecret
		cfg.JWTBearerAssertion = oauth.IDJAGAssertion(oauth.IDJAGConfig{
			TokenEndpoint: cc.IdPTokenEndpoint,
			ClientID:      cc.IdPClientID,
			IDToken:       func(context.Context) (string, error) { return cc.IdPIDToken, nil },
		})
	case cc.ValidJWT != "":
		// Workload identity federation: the workload's platform-issued JWT is the grant
		// (RFC 7523); a refusal ends the run, with no other grant tried.
		cfg.Grant, cfg.ClientID, cfg.ClientSecret = oauth.GrantJWTBearer, cc.ClientID, cc.ClientSecret
		cfg.JWTBearerAssertion = func(context.Context, *oauth.AuthServerMetadata, string) (string, error) { return cc.ValidJWT, nil }
	case cc.PrivateKeyPEM != "":
		key, err := jwtauth.ParsePrivateKeyPEM([]byte(cc.PrivateKeyPEM))
		if err != nil {
			return cfg, err
		}
		alg := jose.SignatureAlgorithm(cc.SigningAlgorithm)
		if alg == "" {
			alg = jose.ES256
		}
		assert, err := jwtauth.PrivateKeyJWT(cc.ClientID, key, alg, "")
		if err != nil {
			return cfg, err
		}
		cfg.Grant, cfg.ClientID, cfg.ClientAssertion = oauth.GrantClientCredentials, cc.ClientID, assert
	case strings.HasPrefix(scenario, "auth/client-credentials"):
		cfg.Grant = oauth.GrantClientCredentials
		cfg.ClientID, cfg.ClientSecret = cc.ClientID, cc.ClientSecret
	case cc.ClientID != "":
		cfg.ClientID, cfg.ClientSecret = cc.ClientID, cc.ClientSecret // pre-registered
	}
	return cfg, nil
}

// headlessAuthorize plays the user's browser: it requests the authorization URL and returns
// where the authorization server redirects, without following it (the suite's servers
// approve at once).
func headlessAuthorize(log *slog.Logger) func(ctx context.Context, authURL string) (*url.URL, error) {
	hc := &http.Client{
		Timeout:       10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return func(ctx context.Context, authURL string) (*url.URL, error) {
		log.Debug("authorization request", "url", authURL)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
		if err != nil {
			return nil, err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return nil, err
		}
		resp.Body.Close()
		loc := resp.Header.Get("Location")
		if resp.StatusCode/100 != 3 || loc == "" {
			return nil, errors.New("the authorization endpoint answered " + resp.Status + " without a redirect")
		}
		return resp.Request.URL.Parse(loc)
	}
}

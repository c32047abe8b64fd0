package oauth_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/protomcp/protomcp/internal/testissuer"
	"github.com/protomcp/protomcp/runtime"
	"github.com/protomcp/protomcp/runtime/oauth"
)

// headless plays a browser that does not follow the authorization server's redirect: it
// returns where the authorization server sends the user back, whatever the redirect URI's
// host, so that clients registered with a remote (web) redirect URI can be tested.
func headless(ctx context.Context, authURL string) (*url.URL, error) {
	hc := &http.Client{
		Timeout:       10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		return nil, errors.New("the authorization endpoint answered " + resp.Status)
	}
	return resp.Location()
}

// TestOAuthRegistersApplicationType: Dynamic Client Registration carries an
// application_type (spec 2026-07-28, Authorization, Client Registration): native for a
// loopback redirect, web for a remote one, or the configured one.
func TestOAuthRegistersApplicationType(t *testing.T) {
	for _, tc := range []struct {
		name, redirect, configured, want string
	}{
		{"loopback", "http://127.0.0.1:7777/callback", "", "native"},
		{"localhost", "http://localhost:3000/callback", "", "native"},
		{"private-use scheme", "com.example.app:/callback", "", "native"},
		{"remote", "https://app.example.com/callback", "", "web"},
		{"configured", "https://app.example.com/callback", "web", "web"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t)
			e := newAuthEnv(t)
			c := runtime.NewClient(e.url, oauth.WithOAuth(oauth.Config{
				RedirectURL: tc.redirect, ApplicationType: tc.configured, Authorize: headless,
			}))
			defer c.Close(ctx)
			res, err := c.CallTool(ctx, "whoami", nil)
			require.NoError(t, err)
			assert.Equal(t, "alice", resultText(t, res), "whoami")
			regs := e.issuer.Registrations()
			require.Len(t, regs, 1, "registrations")
			assert.Equal(t, tc.want, regs[0].ApplicationType, "application_type of %+v", regs[0])
			assert.Equal(t, []string{tc.redirect}, regs[0].RedirectURIs, "redirect_uris")
		})
	}
	// An OpenID Connect server refuses a native client's remote redirect URI: the error says
	// where registration failed.
	t.Run("refused", func(t *testing.T) {
		ctx := testCtx(t)
		e := newAuthEnv(t)
		c := runtime.NewClient(e.url, oauth.WithOAuth(oauth.Config{
			RedirectURL: "https://app.example.com/callback", ApplicationType: "native", Authorize: headless,
		}))
		defer c.Close(ctx)
		_, err := c.CallTool(ctx, "whoami", nil)
		assert.ErrorIs(t, err, oauth.ErrOAuth)
		assert.ErrorContains(t, err, "invalid_redirect_uri")
		assert.Zero(t, e.calls.Load(), "handler runs")
	})
}

// TestOAuthAuthorizationResponseIssuer: the iss of the authorization response is checked
// against the issuer of the authorization server's metadata before the code is redeemed
// (spec 2026-07-28, Authorization, Authorization Response Validation; RFC 9207 Section 2.4).
func TestOAuthAuthorizationResponseIssuer(t *testing.T) {
	for _, tc := range []struct {
		name  string
		mode  testissuer.IssMode
		error string // "" when the response is accepted
	}{
		{"advertised and sent", testissuer.IssCorrect, ""},
		{"sent, not advertised", testissuer.IssUnadvertised, ""},
		{"neither", testissuer.IssNone, ""},
		{"advertised, missing", testissuer.IssOmitted, "has no iss"},
		{"wrong issuer", testissuer.IssWrong, `"https://evil.example.com"`},
		{"trailing slash", testissuer.IssTrailingSlash, "/\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t)
			e := newAuthEnvWith(t, []testissuer.Option{testissuer.WithIss(tc.mode)}, nil)
			c, b := oauthClient(t, e.url, nil)
			res, err := c.CallTool(ctx, "whoami", nil)
			// One authorization: a refused response is the call's error, not a reason to try
			// again.
			require.Len(t, b.authorizations(), 1, "authorizations")
			if tc.error == "" {
				require.NoError(t, err)
				assert.Equal(t, "alice", resultText(t, res), "whoami")
				assert.Equal(t, 1, e.issuer.TokenRequests("authorization_code"), "code redemptions")
				return
			}
			require.ErrorIs(t, err, oauth.ErrOAuth)
			assert.ErrorContains(t, err, tc.error)
			var he *runtime.HTTPError
			require.ErrorAs(t, err, &he, "the server's refusal")
			assert.Equal(t, http.StatusUnauthorized, he.StatusCode, "the server's refusal")
			assert.Zero(t, e.issuer.TokenRequests("authorization_code"), "the code went to the token endpoint")
			assert.Zero(t, e.calls.Load(), "handler runs")
		})
	}
}

// TestLoopbackPageSaysNoError: the loopback page is served before the client checks the
// response's iss, so it shows nothing of the response's error (spec 2026-07-28,
// Authorization, Authorization Response Validation); the client gets the whole redirect.
func TestLoopbackPageSaysNoError(t *testing.T) {
	ctx := testCtx(t)
	lr, err := oauth.NewLoopbackRedirect("/callback")
	require.NoError(t, err)
	defer lr.Close()
	back := lr.RedirectURL() + "?error=access_denied&error_description=call+evil.example.com&state=s&iss=https%3A%2F%2Fevil.example.com"
	var page string
	got, err := lr.Authorize(func(string) error {
		resp, err := http.Get(back)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		page = string(b)
		return err
	})(ctx, "https://as.example.com/authorize")
	require.NoError(t, err)
	assert.Equal(t, "access_denied", got.Query().Get("error"), "the redirect the client gets")
	assert.Equal(t, "https://evil.example.com", got.Query().Get("iss"), "the redirect the client gets")
	assert.Contains(t, page, "Authorization complete")
	assert.NotContains(t, page, "access_denied")
	assert.NotContains(t, page, "evil.example.com")
}

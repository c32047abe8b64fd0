package oauth_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/protomcp/protomcp/internal/testissuer"
	"github.com/protomcp/protomcp/runtime"
	"github.com/protomcp/protomcp/runtime/oauth"
)

// dpopClient is oauthClient with a DPoP key.
func dpopClient(t *testing.T, serverURL string, store oauth.TokenStore, key *ecdsa.PrivateKey) (*runtime.Client, *browser) {
	t.Helper()
	lr, err := oauth.NewLoopbackRedirect("/callback")
	require.NoError(t, err)
	t.Cleanup(func() { lr.Close() })
	b := new(browser)
	c := runtime.NewClient(serverURL, oauth.WithOAuth(oauth.Config{
		RedirectURL: lr.RedirectURL(), Authorize: lr.Authorize(b.open), TokenStore: store, DPoPKey: key,
	}))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = c.Close(ctx)
	})
	return c, b
}

// TestOAuthDPoP: with a DPoP key (RFC 9449; SEP-1932), the token request carries a proof and
// the code is bound to the key, the token comes back DPoP-bound, and every request presents
// it with the DPoP scheme and a fresh proof. Both servers ask for a nonce first; a refresh
// proves the key again.
func TestOAuthDPoP(t *testing.T) {
	ctx := testCtx(t)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	var rs *testissuer.DPoPResource
	e := newAuthEnvWith(t, []testissuer.Option{testissuer.WithDPoP("as-nonce")}, nil, func(h http.Handler) http.Handler {
		rs = &testissuer.DPoPResource{Next: h, Nonce: "rs-nonce"}
		return rs
	})
	rs.URL = e.url
	store := new(oauth.MemoryTokenStore)
	c, b := dpopClient(t, e.url, store, key)
	for range 2 {
		res, err := c.CallTool(ctx, "whoami", nil)
		require.NoError(t, err)
		require.Equal(t, "alice", resultText(t, res), "whoami")
	}
	auths := b.authorizations()
	require.Len(t, auths, 1, "authorizations")
	assert.NotEmpty(t, auths[0].Query().Get("dpop_jkt"), "the authorization request binds the code to the key")
	// One token request answered use_dpop_nonce, then the one with the nonce.
	assert.Equal(t, 2, e.issuer.TokenRequests("authorization_code"), "authorization code token requests")
	tok, err := store.Token(ctx, e.resource)
	require.NoError(t, err)
	require.NotNil(t, tok)
	assert.Equal(t, "DPoP", tok.TokenType, "token type")
	valid, replayed := rs.Proofs()
	assert.GreaterOrEqual(t, valid, 2, "requests with a valid proof")
	assert.Zero(t, replayed, "proofs reused")
	assert.EqualValues(t, 2, e.calls.Load(), "handler runs")

	// The refresh proves the key (the refresh token is bound to it) and the new token is
	// DPoP-bound too.
	expired := *tok
	expired.Expiry = time.Now().Add(-time.Hour)
	require.NoError(t, store.SetToken(ctx, e.resource, &expired))
	_, err = c.CallTool(ctx, "whoami", nil)
	require.NoError(t, err)
	assert.Equal(t, 1, e.issuer.TokenRequests("refresh_token"), "refresh token requests")
	fresh, _ := store.Token(ctx, e.resource)
	assert.NotEqual(t, tok.AccessToken, fresh.AccessToken, "the token was not refreshed")
	assert.Equal(t, "DPoP", fresh.TokenType, "refreshed token type")
	assert.Len(t, b.authorizations(), 1, "authorizations after the refresh")
}

// TestOAuthDPoPBearerServer: an authorization server without DPoP ignores the proofs and
// issues bearer tokens, which the client presents as such.
func TestOAuthDPoPBearerServer(t *testing.T) {
	ctx := testCtx(t)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	e := newAuthEnv(t)
	store := new(oauth.MemoryTokenStore)
	c, b := dpopClient(t, e.url, store, key)
	res, err := c.CallTool(ctx, "whoami", nil)
	require.NoError(t, err)
	require.Equal(t, "alice", resultText(t, res), "whoami")
	tok, _ := store.Token(ctx, e.resource)
	require.NotNil(t, tok)
	assert.Equal(t, "Bearer", tok.TokenType, "token type")
	auths := b.authorizations()
	require.Len(t, auths, 1, "authorizations")
	assert.False(t, auths[0].Query().Has("dpop_jkt"), "dpop_jkt asked of a server without DPoP: %v", auths[0])
}

// TestOAuthDPoPKey: a key DPoP cannot use with ES256 is an error of every request.
func TestOAuthDPoPKey(t *testing.T) {
	ctx := testCtx(t)
	key, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	require.NoError(t, err)
	e := newAuthEnv(t)
	c, b := dpopClient(t, e.url, nil, key)
	_, err = c.CallTool(ctx, "whoami", nil)
	assert.ErrorIs(t, err, oauth.ErrOAuth)
	assert.ErrorContains(t, err, "P-256")
	assert.Empty(t, b.authorizations(), "authorizations")
}

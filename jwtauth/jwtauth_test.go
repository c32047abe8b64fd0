package jwtauth_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/protomcp/protomcp/internal/testissuer"
	"github.com/protomcp/protomcp/jwtauth"
	"github.com/protomcp/protomcp/runtime"
)

func TestNewVerifierRefusesSymmetricAlgorithms(t *testing.T) {
	t.Parallel()
	for _, alg := range []jose.SignatureAlgorithm{jose.HS256, "none"} {
		_, err := jwtauth.NewVerifier(jwtauth.Config{Issuer: "https://as.example", Audience: "https://mcp.example/mcp", Algorithms: []jose.SignatureAlgorithm{alg}})
		assert.ErrorContains(t, err, "only asymmetric", string(alg))
	}
	_, err := jwtauth.NewVerifier(jwtauth.Config{Issuer: "https://as.example"})
	assert.Error(t, err, "no audience accepted")
}

func TestVerifyToken(t *testing.T) {
	t.Parallel()
	is, err := testissuer.Start()
	require.NoError(t, err)
	defer is.Close()
	now := time.Now()
	v, err := jwtauth.NewVerifier(jwtauth.Config{Issuer: is.URL, Audience: "https://mcp.example/mcp", Leeway: time.Minute, Now: func() time.Time { return now }})
	require.NoError(t, err)
	ctx := context.Background()
	info, err := v.VerifyToken(ctx, is.Mint(map[string]any{
		"aud": []string{"https://other.example", "https://mcp.example/mcp"}, "scp": []string{"a", "b"}, "azp": "cli",
	}))
	require.NoError(t, err)
	assert.Equal(t, "alice", info.Subject)
	assert.Equal(t, "cli", info.ClientID, "ClientID (from azp)")
	assert.True(t, info.HasScope("b"), "scopes (from scp): %v", info.Scopes)
	assert.Equal(t, []string{"https://other.example", "https://mcp.example/mcp"}, info.Audience)
	// Within the leeway: expired 30 s ago is still accepted; 2 minutes ago is not.
	_, err = v.VerifyToken(ctx, is.Mint(map[string]any{"aud": "https://mcp.example/mcp", "exp": now.Add(-30 * time.Second).Unix()}))
	require.NoError(t, err, "within leeway")
	_, err = v.VerifyToken(ctx, is.Mint(map[string]any{"aud": "https://mcp.example/mcp", "exp": now.Add(-2 * time.Minute).Unix()}))
	assert.ErrorIs(t, err, runtime.ErrInvalidToken, "expired")
	assert.ErrorContains(t, err, "expired")
}

// keyServer publishes a JWKS that the test can replace, and counts the fetches.
type keyServer struct {
	mu      sync.Mutex
	set     jose.JSONWebKeySet
	fetches int
}

func (ks *keyServer) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	ks.fetches++
	_ = json.NewEncoder(w).Encode(ks.set)
}

func (ks *keyServer) publish(keys ...jose.JSONWebKey) {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	ks.set = jose.JSONWebKeySet{Keys: keys}
}

func (ks *keyServer) count() int {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	return ks.fetches
}

func sign(t *testing.T, key *ecdsa.PrivateKey, kid string, claims jwt.Claims) string {
	t.Helper()
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: key, KeyID: kid}}, nil)
	require.NoError(t, err)
	tok, err := jwt.Signed(s).Claims(claims).Serialize()
	require.NoError(t, err)
	return tok
}

// TestKeyRotation: keys are cached; a token with an unknown key ID makes the verifier fetch
// the keys again, but not more often than MinRefresh, and stale keys are refetched after
// CacheTTL. The clock is the test's.
func TestKeyRotation(t *testing.T) {
	t.Parallel()
	ks := new(keyServer)
	ts := httptest.NewServer(ks)
	defer ts.Close()
	k1, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	k2, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ks.publish(jose.JSONWebKey{Key: &k1.PublicKey, KeyID: "k1", Algorithm: "ES256", Use: "sig"})
	now := time.Now()
	clock := func() time.Time { return now }
	v, err := jwtauth.NewVerifier(jwtauth.Config{Issuer: "https://issuer.test", Audience: "https://mcp.test/mcp", JWKSURL: ts.URL,
		MinRefresh: 30 * time.Second, CacheTTL: 10 * time.Minute, Now: clock})
	require.NoError(t, err)
	ctx := context.Background()
	claims := func() jwt.Claims {
		return jwt.Claims{Issuer: "https://issuer.test", Audience: jwt.Audience{"https://mcp.test/mcp"}, Subject: "u", Expiry: jwt.NewNumericDate(now.Add(time.Hour))}
	}
	for range 3 {
		_, err := v.VerifyToken(ctx, sign(t, k1, "k1", claims()))
		require.NoError(t, err)
	}
	require.Equal(t, 1, ks.count(), "fetches for three tokens")
	ks.publish(jose.JSONWebKey{Key: &k2.PublicKey, KeyID: "k2", Algorithm: "ES256", Use: "sig"})
	// Just fetched: an unknown key ID does not trigger another fetch yet.
	_, err = v.VerifyToken(ctx, sign(t, k2, "k2", claims()))
	require.ErrorIs(t, err, runtime.ErrInvalidToken, "unknown key right after a fetch")
	require.Equal(t, 1, ks.count(), "fetches after an unknown key right after a fetch")
	now = now.Add(31 * time.Second)
	_, err = v.VerifyToken(ctx, sign(t, k2, "k2", claims()))
	require.NoError(t, err, "rotated key")
	require.Equal(t, 2, ks.count(), "fetches after the rotation")
	// The old key is gone from the set: its tokens are refused.
	_, err = v.VerifyToken(ctx, sign(t, k1, "k1", claims()))
	require.ErrorIs(t, err, runtime.ErrInvalidToken, "retired key")
	now = now.Add(11 * time.Minute)
	_, err = v.VerifyToken(ctx, sign(t, k2, "k2", claims()))
	require.NoError(t, err)
	// The retired key's token did not refetch (within MinRefresh); the stale cache did.
	require.Equal(t, 3, ks.count(), "fetches after CacheTTL")
}

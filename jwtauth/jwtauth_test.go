package jwtauth_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/protomcp/protomcp/internal/testissuer"
	"github.com/protomcp/protomcp/jwtauth"
	"github.com/protomcp/protomcp/runtime"
)

func TestNewVerifierRefusesSymmetricAlgorithms(t *testing.T) {
	for _, alg := range []jose.SignatureAlgorithm{jose.HS256, "none"} {
		_, err := jwtauth.NewVerifier(jwtauth.Config{Issuer: "https://as.example", Audience: "https://mcp.example/mcp", Algorithms: []jose.SignatureAlgorithm{alg}})
		if err == nil || !strings.Contains(err.Error(), "only asymmetric") {
			t.Errorf("%s: %v", alg, err)
		}
	}
	if _, err := jwtauth.NewVerifier(jwtauth.Config{Issuer: "https://as.example"}); err == nil {
		t.Error("no audience accepted")
	}
}

func TestVerifyToken(t *testing.T) {
	is, err := testissuer.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer is.Close()
	now := time.Now()
	v, err := jwtauth.NewVerifier(jwtauth.Config{Issuer: is.URL, Audience: "https://mcp.example/mcp", Leeway: time.Minute, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	info, err := v.VerifyToken(ctx, is.Mint(map[string]any{
		"aud": []string{"https://other.example", "https://mcp.example/mcp"}, "scp": []string{"a", "b"}, "azp": "cli",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if info.Subject != "alice" || info.ClientID != "cli" || !info.HasScope("b") || len(info.Audience) != 2 {
		t.Fatalf("%+v", info)
	}
	// Within the leeway: expired 30 s ago is still accepted; 2 minutes ago is not.
	if _, err := v.VerifyToken(ctx, is.Mint(map[string]any{"aud": "https://mcp.example/mcp", "exp": now.Add(-30 * time.Second).Unix()})); err != nil {
		t.Fatalf("within leeway: %v", err)
	}
	_, err = v.VerifyToken(ctx, is.Mint(map[string]any{"aud": "https://mcp.example/mcp", "exp": now.Add(-2 * time.Minute).Unix()}))
	if !errors.Is(err, runtime.ErrInvalidToken) || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("expired: %v", err)
	}
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
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(s).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestKeyRotation: keys are cached; a token with an unknown key ID makes the verifier fetch
// the keys again, but not more often than MinRefresh, and stale keys are refetched after
// CacheTTL. The clock is the test's.
func TestKeyRotation(t *testing.T) {
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
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	claims := func() jwt.Claims {
		return jwt.Claims{Issuer: "https://issuer.test", Audience: jwt.Audience{"https://mcp.test/mcp"}, Subject: "u", Expiry: jwt.NewNumericDate(now.Add(time.Hour))}
	}
	for range 3 {
		if _, err := v.VerifyToken(ctx, sign(t, k1, "k1", claims())); err != nil {
			t.Fatal(err)
		}
	}
	if n := ks.count(); n != 1 {
		t.Fatalf("%d fetches for three tokens, want 1", n)
	}
	ks.publish(jose.JSONWebKey{Key: &k2.PublicKey, KeyID: "k2", Algorithm: "ES256", Use: "sig"})
	// Just fetched: an unknown key ID does not trigger another fetch yet.
	if _, err := v.VerifyToken(ctx, sign(t, k2, "k2", claims())); !errors.Is(err, runtime.ErrInvalidToken) {
		t.Fatalf("unknown key right after a fetch: %v", err)
	}
	if n := ks.count(); n != 1 {
		t.Fatalf("%d fetches, want 1", n)
	}
	now = now.Add(31 * time.Second)
	if _, err := v.VerifyToken(ctx, sign(t, k2, "k2", claims())); err != nil {
		t.Fatalf("rotated key: %v", err)
	}
	if n := ks.count(); n != 2 {
		t.Fatalf("%d fetches, want 2", n)
	}
	// The old key is gone from the set: its tokens are refused.
	if _, err := v.VerifyToken(ctx, sign(t, k1, "k1", claims())); !errors.Is(err, runtime.ErrInvalidToken) {
		t.Fatalf("retired key: %v", err)
	}
	now = now.Add(11 * time.Minute)
	if _, err := v.VerifyToken(ctx, sign(t, k2, "k2", claims())); err != nil {
		t.Fatal(err)
	}
	// The retired key's token did not refetch (within MinRefresh); the stale cache did.
	if n := ks.count(); n != 3 {
		t.Fatalf("%d fetches, want 3", n)
	}
}

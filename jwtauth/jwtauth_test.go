package jwtauth_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

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

package jwtauth

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// PrivateKeyJWT returns an oauth.Config.ClientAssertion (package runtime/oauth) that signs
// private_key_jwt client assertions (RFC 7523 Section 2.2, OpenID Connect Core Section 9):
// iss and sub the client ID, aud the authorization server, a fresh jti, and a lifetime of
// five minutes. key is the client's private key (an *ecdsa.PrivateKey, *rsa.PrivateKey or
// ed25519.PrivateKey) and alg its algorithm, e.g. jose.ES256; keyID, when not empty, is put
// in the header's kid.
func PrivateKeyJWT(clientID string, key crypto.Signer, alg jose.SignatureAlgorithm, keyID string) (func(ctx context.Context, audience string) (string, error), error) {
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: jose.JSONWebKey{Key: key, KeyID: keyID}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		return nil, fmt.Errorf("jwtauth: client assertion signer: %w", err)
	}
	return func(_ context.Context, audience string) (string, error) {
		var jti [16]byte
		_, _ = rand.Read(jti[:])
		now := time.Now()
		return jwt.Signed(signer).Claims(jwt.Claims{
			Issuer:   clientID,
			Subject:  clientID,
			Audience: jwt.Audience{audience},
			ID:       hex.EncodeToString(jti[:]),
			IssuedAt: jwt.NewNumericDate(now),
			Expiry:   jwt.NewNumericDate(now.Add(5 * time.Minute)),
		}).Serialize()
	}, nil
}

// ParsePrivateKeyPEM parses a PEM private key: PKCS #8, or SEC 1 (EC) or PKCS #1 (RSA).
func ParsePrivateKeyPEM(data []byte) (crypto.Signer, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("jwtauth: no PEM block in the private key")
	}
	var (
		key any
		err error
	)
	switch block.Type {
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	}
	if err != nil {
		return nil, fmt.Errorf("jwtauth: parse the private key: %w", err)
	}
	s, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("jwtauth: a %T cannot sign", key)
	}
	return s, nil
}

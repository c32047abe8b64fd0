package testissuer

import (
	"crypto"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// ErrDPoPNonce is wrapped by VerifyDPoPProof's error when the proof lacks the nonce the
// server requires (RFC 9449 Sections 8 and 9).
var ErrDPoPNonce = errors.New("the DPoP proof lacks the server's nonce")

// VerifyDPoPProof checks the DPoP proofs of a request (RFC 9449 Section 4.3): exactly one,
// typ dpop+jwt, signed (ES256) by the public key in its header, for the method and URI
// (htu without query or fragment), issued within 5 minutes, with the nonce when one is
// required and, for a request presenting accessToken, the token's hash (ath). It returns the
// key's JWK SHA-256 thumbprint (RFC 7638) and the proof's jti.
func VerifyDPoPProof(proofs []string, method, uri, accessToken, nonce string) (jkt, jti string, err error) {
	if len(proofs) != 1 || strings.Contains(proofs[0], ",") {
		return "", "", errors.New("not exactly one DPoP proof")
	}
	obj, err := jose.ParseSignedCompact(proofs[0], []jose.SignatureAlgorithm{jose.ES256})
	if err != nil || len(obj.Signatures) != 1 {
		return "", "", fmt.Errorf("not a DPoP proof: %v", err)
	}
	h := obj.Signatures[0].Protected
	if h.ExtraHeaders["typ"] != "dpop+jwt" {
		return "", "", errors.New("typ is not dpop+jwt")
	}
	if h.JSONWebKey == nil || !h.JSONWebKey.IsPublic() {
		return "", "", errors.New("no public jwk in the header")
	}
	payload, err := obj.Verify(h.JSONWebKey)
	if err != nil {
		return "", "", errors.New("the signature does not verify with the header's key")
	}
	var c struct {
		JTI   string `json:"jti"`
		HTM   string `json:"htm"`
		HTU   string `json:"htu"`
		IAT   int64  `json:"iat"`
		ATH   string `json:"ath"`
		Nonce string `json:"nonce"`
	}
	if err := json.Unmarshal(payload, &c); err != nil {
		return "", "", fmt.Errorf("claims: %w", err)
	}
	switch {
	case c.JTI == "":
		return "", "", errors.New("no jti")
	case c.HTM != method:
		return "", "", fmt.Errorf("htm %q, not %q", c.HTM, method)
	case c.HTU != uri:
		return "", "", fmt.Errorf("htu %q, not %q", c.HTU, uri)
	case time.Since(time.Unix(c.IAT, 0)).Abs() > 5*time.Minute:
		return "", "", errors.New("iat is not recent")
	case nonce != "" && c.Nonce != nonce:
		return "", "", ErrDPoPNonce
	}
	if accessToken != "" {
		sum := sha256.Sum256([]byte(accessToken))
		if c.ATH != base64.RawURLEncoding.EncodeToString(sum[:]) {
			return "", "", errors.New("ath is not the access token's hash")
		}
	}
	tp, err := h.JSONWebKey.Thumbprint(crypto.SHA256)
	if err != nil {
		return "", "", err
	}
	return base64.RawURLEncoding.EncodeToString(tp), c.JTI, nil
}

// DPoPResource is a resource server's DPoP check (RFC 9449 Section 7) in front of its
// handler: a request presenting a token with the DPoP scheme must carry a fresh proof of the
// key the token is bound to (cnf.jkt), for this request and token, with the nonce when one is
// set; it then reaches Next with the token as a bearer token, for Next's own token check.
// Other requests reach Next as they are (a bearer token bound to a key is refused).
type DPoPResource struct {
	// Next is the resource server's handler.
	Next http.Handler
	// URL is the resource's URI, which proofs must name (htu).
	URL string
	// Nonce, when set, must be in every proof; a proof without it is answered 401
	// use_dpop_nonce with the nonce (RFC 9449 Section 9).
	Nonce string

	mu      sync.Mutex
	jtis    map[string]bool
	proofs  int
	replays int
}

// Proofs returns how many requests presented a token with a valid proof, and how many of
// those reused a proof's jti.
func (d *DPoPResource) Proofs() (valid, replayed int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.proofs, d.replays
}

// ServeHTTP implements http.Handler.
func (d *DPoPResource) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	scheme, tok, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	refuse := func(code, desc string) {
		w.Header().Set("WWW-Authenticate", fmt.Sprintf(`DPoP error=%q, error_description=%q, algs="ES256"`, code, desc))
		if code == "use_dpop_nonce" {
			w.Header().Set("DPoP-Nonce", d.Nonce)
		}
		http.Error(w, desc, http.StatusUnauthorized)
	}
	jkt := tokenJKT(tok)
	switch {
	case strings.EqualFold(scheme, "Bearer") && jkt != "":
		refuse("invalid_token", "a DPoP-bound token presented as a bearer token")
		return
	case !strings.EqualFold(scheme, "DPoP"):
		d.Next.ServeHTTP(w, r)
		return
	}
	got, jti, err := VerifyDPoPProof(r.Header.Values("DPoP"), r.Method, d.URL, tok, d.Nonce)
	switch {
	case errors.Is(err, ErrDPoPNonce):
		refuse("use_dpop_nonce", "the resource server requires a DPoP nonce")
		return
	case err != nil:
		refuse("invalid_dpop_proof", err.Error())
		return
	case got != jkt:
		refuse("invalid_token", "the proof's key is not the token's")
		return
	}
	d.mu.Lock()
	if d.jtis == nil {
		d.jtis = map[string]bool{}
	}
	d.proofs++
	if d.jtis[jti] {
		d.replays++
	}
	d.jtis[jti] = true
	d.mu.Unlock()
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+tok)
	r.Header.Del("DPoP")
	d.Next.ServeHTTP(w, r)
}

// tokenJKT is the cnf.jkt of a JWT access token, unverified (Next verifies the token).
func tokenJKT(tok string) string {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return ""
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return ""
	}
	var c struct {
		Cnf struct {
			JKT string `json:"jkt"`
		} `json:"cnf"`
	}
	_ = json.Unmarshal(b, &c)
	return c.Cnf.JKT
}

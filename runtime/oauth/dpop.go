package oauth

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/asn1"
	"encoding/base64"
	"encoding/json"
	"io"
	"math/big"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
)

// The client's side of DPoP (RFC 9449), the MCP authorization extension that
// sender-constrains access tokens (SEP-1932, "DPoP Profile for MCP", which profiles RFC 9449
// without additions): a proof signed with the client's key goes with every token request and
// every request that presents a DPoP-bound token, and a server's nonce is used once it asks
// for one.

// dpopSigner makes DPoP proofs (RFC 9449 Section 4.2) with the client's ES256 key, and keeps
// the nonces servers supplied (RFC 9449 Sections 8 and 9).
type dpopSigner struct {
	key    crypto.Signer
	header string // the encoded JOSE header: typ, alg and the public key (RFC 9449 Section 4.2)
	jkt    string // the key's JWK SHA-256 thumbprint (RFC 7638)

	mu     sync.Mutex
	nonces map[string]string // the last DPoP-Nonce of each server, by origin
}

// newDPoPSigner makes a signer for key, which must be an ECDSA P-256 key (ES256, the
// algorithm every DPoP server supports).
func newDPoPSigner(key crypto.Signer) (*dpopSigner, error) {
	pub, ok := key.Public().(*ecdsa.PublicKey)
	if !ok || pub.Curve != elliptic.P256() {
		return nil, oauthErrorf("oauth.Config.DPoPKey must be an ECDSA P-256 key (ES256), not %T", key.Public())
	}
	ek, err := pub.ECDH()
	if err != nil {
		return nil, oauthErrorf("DPoP key: %w", err)
	}
	point := ek.Bytes() // 0x04 || X || Y
	x, y := b64(point[1:33]), b64(point[33:65])
	// The members in lexicographic order, as the thumbprint needs (RFC 7638 Section 3).
	jwk := `{"crv":"P-256","kty":"EC","x":"` + x + `","y":"` + y + `"}`
	sum := sha256.Sum256([]byte(jwk))
	return &dpopSigner{
		key:    key,
		header: b64([]byte(`{"typ":"dpop+jwt","alg":"ES256","jwk":` + jwk + `}`)),
		jkt:    b64(sum[:]),
		nonces: map[string]string{},
	}, nil
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// originOf is u's scheme and host, the key of a server's nonce.
func originOf(u *url.URL) string { return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host) }

// proof returns a fresh proof for a request: a unique jti, the method and the URI without
// query or fragment (htm, htu), the time (iat), the server's nonce when it gave one, and for
// a request that presents accessToken its hash (ath) (RFC 9449 Section 4.2).
func (d *dpopSigner) proof(method string, u *url.URL, accessToken string) (string, error) {
	var jti [16]byte
	_, _ = rand.Read(jti[:])
	claims := map[string]any{
		"jti": b64(jti[:]), "htm": method, "htu": u.Scheme + "://" + u.Host + u.EscapedPath(), "iat": time.Now().Unix(),
	}
	d.mu.Lock()
	if n := d.nonces[originOf(u)]; n != "" {
		claims["nonce"] = n
	}
	d.mu.Unlock()
	if accessToken != "" {
		sum := sha256.Sum256([]byte(accessToken))
		claims["ath"] = b64(sum[:])
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	input := d.header + "." + b64(payload)
	digest := sha256.Sum256([]byte(input))
	der, err := d.key.Sign(rand.Reader, digest[:], crypto.SHA256)
	if err != nil {
		return "", oauthErrorf("DPoP proof: %w", err)
	}
	// JWS wants the fixed-size R || S (RFC 7518 Section 3.4), not ASN.1.
	var sig struct{ R, S *big.Int }
	if _, err := asn1.Unmarshal(der, &sig); err != nil {
		return "", oauthErrorf("DPoP proof: the key's signature: %w", err)
	}
	raw := make([]byte, 64)
	sig.R.FillBytes(raw[:32])
	sig.S.FillBytes(raw[32:])
	return input + "." + b64(raw), nil
}

// noteNonce keeps the nonce a response from u's server supplies, for the next proofs to
// that server (RFC 9449 Sections 8 and 9), and reports whether it is a new one.
func (d *dpopSigner) noteNonce(u *url.URL, resp *http.Response) bool {
	n := resp.Header.Get("DPoP-Nonce")
	if n == "" {
		return false
	}
	o := originOf(u)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.nonces[o] == n {
		return false
	}
	d.nonces[o] = n
	return true
}

// isDPoP reports whether tok is DPoP-bound: the authorization server said token_type DPoP
// (RFC 9449 Section 5). Other tokens stay bearer tokens.
func isDPoP(tok *oauth2.Token) bool { return strings.EqualFold(tok.TokenType, "DPoP") }

// dpopTokenTransport adds a proof to each token request (RFC 9449 Section 5), and sends it
// again, once, with the nonce an authorization server asks for with use_dpop_nonce (RFC 9449
// Section 8).
type dpopTokenTransport struct {
	base http.RoundTripper
	d    *dpopSigner
}

// RoundTrip implements http.RoundTripper.
func (tt *dpopTokenTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	body, err := replayableBody(req)
	if err != nil {
		return nil, err
	}
	resp, fresh, err := tt.send(req, body)
	if err != nil {
		return nil, err
	}
	if fresh && resp.StatusCode == http.StatusBadRequest && tokenErrorIs(resp, "use_dpop_nonce") {
		drainClose(resp)
		resp, _, err = tt.send(req, body)
	}
	return resp, err
}

// send sends a copy of req, with body, and a fresh proof. fresh reports that the response
// brought a nonce the proof did not have.
func (tt *dpopTokenTransport) send(req *http.Request, body []byte) (resp *http.Response, fresh bool, err error) {
	r := req.Clone(req.Context())
	if body != nil {
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
	}
	p, err := tt.d.proof(r.Method, r.URL, "")
	if err != nil {
		return nil, false, err
	}
	r.Header.Set("DPoP", p)
	resp, err = tt.base.RoundTrip(r)
	if err != nil {
		return nil, false, err
	}
	return resp, tt.d.noteNonce(r.URL, resp), nil
}

// tokenErrorIs reports whether a token endpoint's error response has the error code (RFC
// 6749 Section 5.2), leaving the body to be read again.
func tokenErrorIs(resp *http.Response, code string) bool {
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(b))
	if err != nil {
		return false
	}
	var e struct {
		Error string `json:"error"`
	}
	return json.Unmarshal(b, &e) == nil && e.Error == code
}

// tokenHTTPClient is hc with DPoP proofs on its requests: the client of token requests.
func tokenHTTPClient(hc *http.Client, d *dpopSigner) *http.Client {
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	c := *hc
	c.Transport = &dpopTokenTransport{base: base, d: d}
	return &c
}

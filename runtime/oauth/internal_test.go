package oauth

import (
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"
)

func TestParseBearerChallenge(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want map[string]string
		ok   bool
	}{
		{`Bearer resource_metadata="https://a.example/.well-known/oauth-protected-resource/mcp"`,
			map[string]string{"resource_metadata": "https://a.example/.well-known/oauth-protected-resource/mcp"}, true},
		{`Bearer error="insufficient_scope", scope="a b", resource_metadata="u", error_description="say \"hi\""`,
			map[string]string{"error": "insufficient_scope", "scope": "a b", "resource_metadata": "u", "error_description": `say "hi"`}, true},
		{`bearer realm=mcp,error=invalid_token`, map[string]string{"realm": "mcp", "error": "invalid_token"}, true},
		{`Bearer`, map[string]string{}, true},
		{`Basic realm="x"`, nil, false},
		{`Bearer scope="unterminated`, map[string]string{"scope": "unterminated"}, true},
		{`DPoP error="use_dpop_nonce", error_description="nonce", algs="ES256"`,
			map[string]string{"error": "use_dpop_nonce", "error_description": "nonce", "algs": "ES256"}, true},
	} {
		got, ok := parseBearerChallenge(tc.in)
		assert.Falsef(t, ok != tc.ok || (ok && !maps.Equal(got, tc.want)), "parseBearerChallenge(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
	}
}

// TestCheckResponseIssuer: the table of spec 2026-07-28, Authorization, Authorization
// Response Validation, with RFC 9207's simple string comparison, for success and error
// responses alike.
func TestCheckResponseIssuer(t *testing.T) {
	const issuer = "https://as.example.com"
	for _, tc := range []struct {
		query      string
		advertised bool
		ok         bool
	}{
		{"code=c&iss=https%3A%2F%2Fas.example.com", true, true},
		{"code=c", true, false},
		{"code=c&iss=https%3A%2F%2Fas.example.com", false, true},
		{"code=c", false, true},
		{"code=c&iss=https%3A%2F%2Fevil.example.com", false, false},
		{"code=c&iss=https%3A%2F%2Fas.example.com%2F", true, false},    // trailing slash
		{"code=c&iss=https%3A%2F%2FAS.example.com", true, false},       // host case
		{"code=c&iss=https%3A%2F%2Fas.example.com%3A443", true, false}, // default port
		{"code=c&iss=https%3A%2F%2Fas.example.com&iss=x", true, false}, // two
		{"error=access_denied&iss=https%3A%2F%2Fevil.example.com", false, false},
		{"error=access_denied", true, false},
	} {
		q, err := url.ParseQuery(tc.query)
		require.NoError(t, err)
		err = checkResponseIssuer(q, issuer, tc.advertised)
		assert.Equal(t, tc.ok, err == nil, "%s (advertised %v): %v", tc.query, tc.advertised, err)
	}
}

func TestResourceCovers(t *testing.T) {
	t.Parallel()
	server, _ := url.Parse("https://mcp.example.com/api/mcp")
	for resource, want := range map[string]bool{
		"https://mcp.example.com/api/mcp":  true,
		"https://mcp.example.com/api/mcp/": true,
		"https://mcp.example.com/api":      true,
		"https://mcp.example.com":          true,
		"https://MCP.example.com/api/mcp":  true,
		"https://mcp.example.com/ap":       false,
		"https://mcp.example.com/other":    false,
		"http://mcp.example.com/api/mcp":   false,
		"https://evil.example.com/api/mcp": false,
		"https://mcp.example.com:8443/api": false,
		"https://mcp.example.com/api#frag": false,
		"::not a url":                      false,
	} {
		if got := resourceCovers(resource, server); got != want {
			assert.Fail(t, fmt.Sprintf("resourceCovers(%q) = %v, want %v", resource, got, want))
		}
	}
}

// The token goes to the MCP server's origin only: a request elsewhere (a redirect) goes
// without it.
func TestOAuthTokenStaysOnOrigin(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]string{}
	record := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			seen[name] = r.Header.Get("Authorization")
			mu.Unlock()
			w.WriteHeader(http.StatusNoContent)
		})
	}
	mcp := httptest.NewServer(record("mcp"))
	defer mcp.Close()
	other := httptest.NewServer(record("other"))
	defer other.Close()
	tr := newOAuthTransport(Config{}, http.DefaultTransport, mcp.URL+"/mcp", discardLogger())
	tr.tok = &oauth2.Token{AccessToken: "secret-token"}
	hc := &http.Client{Transport: tr}
	for _, u := range []string{mcp.URL + "/mcp", other.URL + "/mcp"} {
		resp, err := hc.Get(u)
		require.NoError(t, err)
		resp.Body.Close()
	}
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, "Bearer secret-token", seen["mcp"], "Authorization sent to the MCP server")
	assert.Empty(t, seen["other"], "Authorization sent elsewhere")
	hc.CloseIdleConnections()
}

// discardLogger is the logger of transports whose logs a test does not read.
func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

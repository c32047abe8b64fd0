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
	} {
		got, ok := parseBearerChallenge(tc.in)
		assert.Falsef(t, ok != tc.ok || (ok && !maps.Equal(got, tc.want)), "parseBearerChallenge(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
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

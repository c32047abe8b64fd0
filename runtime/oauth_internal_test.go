package runtime

import (
	"maps"
	"net/url"
	"testing"
)

func TestParseBearerChallenge(t *testing.T) {
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
		if ok != tc.ok || (ok && !maps.Equal(got, tc.want)) {
			t.Errorf("parseBearerChallenge(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestResourceCovers(t *testing.T) {
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
			t.Errorf("resourceCovers(%q) = %v, want %v", resource, got, want)
		}
	}
}

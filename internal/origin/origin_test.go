package origin

import (
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSame(t *testing.T) {
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{"https://example.com/mcp", "https://example.com:443/token", true},
		{"http://example.com/", "http://example.com:80/x", true},
		{"https://Example.COM/a", "https://example.com/b", true},
		{"https://example.com/", "http://example.com/", false},
		{"https://example.com/", "https://example.com:8443/", false},
		{"https://example.com/", "https://evil.example.com/", false},
		{"http://127.0.0.1:8080/", "http://127.0.0.1:8081/", false},
		{"http://[::1]:8080/", "http://[::1]:8080/mcp", true},
	} {
		a, err := url.Parse(c.a)
		require.NoError(t, err)
		b, err := url.Parse(c.b)
		require.NoError(t, err)
		assert.Equal(t, c.same, Same(a, b), "%s vs %s", c.a, c.b)
	}
}

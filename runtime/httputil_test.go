package runtime

import (
	"fmt"
	"github.com/stretchr/testify/assert"
	"net/http"
	"testing"
)

func TestAcceptsJSONAndSSE(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		accept []string
		want   bool
	}{
		{[]string{"application/json, text/event-stream"}, true},
		{[]string{"text/event-stream, application/json"}, true},
		{[]string{"application/json,text/event-stream"}, true},
		{[]string{"Application/JSON; q=0.9, text/event-stream;q=1"}, true},
		{[]string{"application/json", "text/event-stream"}, true},
		{[]string{"*/*"}, true},
		{[]string{"application/*, text/*"}, true},
		{[]string{"application/json"}, false},
		{[]string{"text/event-stream"}, false},
		{[]string{"application/json, text/html"}, false},
		{nil, false},
	} {
		r := &http.Request{Header: http.Header{}}
		for _, v := range tc.accept {
			r.Header.Add("Accept", v)
		}
		if got := acceptsJSONAndSSE(r); got != tc.want {
			assert.Fail(t, fmt.Sprintf("Accept %q: got %v, want %v", tc.accept, got, tc.want))
		}
	}
}

// TestHostAllowedRemembersOnlyAllowedHosts checks the DNS rebinding check's memory of the last
// Host it allowed: a refused Host between allowed ones is refused every time.
func TestHostAllowedRemembersOnlyAllowedHosts(t *testing.T) {
	t.Parallel()
	s := NewServer(Implementation{Name: "t", Version: "1"}, WithAllowedHosts("mcp.example.com"))
	for range 2 {
		for _, tc := range []struct {
			host string
			want bool
		}{
			{"127.0.0.1:8080", true},
			{"evil.example:80", false},
			{"127.0.0.1:8080", true},
			{"localhost.evil.example", false},
			{"mcp.example.com", true},
			{"[::1]:9", true},
			{"evil.example", false},
		} {
			if got := s.hostAllowed(tc.host); got != tc.want {
				assert.Fail(t, fmt.Sprintf("hostAllowed(%q) = %v, want %v", tc.host, got, tc.want))
			}
		}
	}
}

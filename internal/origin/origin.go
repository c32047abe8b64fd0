// Package origin compares the origins of URLs (RFC 6454), for the runtime and its OAuth client,
// which both decide whether to send a credential to a URL by its origin.
package origin

import (
	"net/url"
	"strings"
)

// Same reports whether a and b have the same origin: scheme, host and port (RFC 6454,
// Section 4), a port left out being the scheme's default. Hosts compare without regard to
// ASCII case, as DNS names do.
func Same(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Hostname(), b.Hostname()) && Port(a) == Port(b)
}

// Port is u's port, or its scheme's default: 443 for https, 80 otherwise.
func Port(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if strings.EqualFold(u.Scheme, "https") {
		return "443"
	}
	return "80"
}

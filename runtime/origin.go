package runtime

import (
	"net"
	"net/http"
	"net/url"
	"strings"
)

// This file holds the DNS rebinding protection of the Streamable HTTP transport (its
// Security Warning): the Origin and Host checks every request passes before anything else, and
// the options that widen or disable them.

// checkOrigin implements DNS-rebinding protection: the Host must be a loopback name or an
// allowed host, and an Origin, when present, must be a loopback origin or an allowed one.
func (s *Server) checkOrigin(r *http.Request) (int, string) {
	if !s.hostAllowed(r.Host) {
		return http.StatusForbidden, "Host " + quoteOrNone(r.Host) + " is not allowed (DNS rebinding protection); configure runtime.WithAllowedHosts"
	}
	origin := headerValue(r.Header, "Origin")
	if origin == "" || s.originAllowed(origin) {
		return 0, ""
	}
	return http.StatusForbidden, "Origin " + quoteOrNone(origin) + " is not allowed (DNS rebinding protection); configure runtime.WithAllowedOrigins"
}

// originAllowed reports whether a browser page of origin may call the server: an allowed
// origin, or a loopback one.
func (s *Server) originAllowed(origin string) bool {
	for _, o := range s.cfg.allowedOrigins {
		if strings.EqualFold(o, origin) || o == "*" {
			return true
		}
	}
	return isLoopbackOrigin(origin)
}

// isLoopbackOrigin reports whether origin is an http or https origin of a loopback host.
func isLoopbackOrigin(origin string) bool {
	u, err := url.Parse(origin)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && isLoopbackHost(u.Hostname())
}

// hostAllowed reports whether the server answers to the Host hostport. The last Host it
// allowed is remembered: a server's clients send one or two Hosts, over and over, and the
// allowed set never changes.
func (s *Server) hostAllowed(hostport string) bool {
	if last := s.allowedHost.Load(); last != nil && *last == hostport {
		return true
	}
	if !s.hostAllowedUncached(hostport) {
		return false
	}
	allowed := hostport // a copy, so that the common case above allocates nothing
	s.allowedHost.Store(&allowed)
	return true
}

// hostAllowedUncached reports whether the server answers to the Host hostport: a loopback
// host, or an allowed one (by host and port, or by host alone).
func (s *Server) hostAllowedUncached(hostport string) bool {
	host := hostOf(hostport)
	return isLoopbackHost(host) || s.hostListed(hostport, host)
}

// hostListed reports whether WithAllowedHosts lists the Host hostport, by host and port or
// by host alone, or allows any.
func (s *Server) hostListed(hostport, host string) bool {
	for _, a := range s.cfg.allowedHosts {
		if a == "*" || strings.EqualFold(a, hostport) || strings.EqualFold(a, host) {
			return true
		}
	}
	return false
}

// hostOf returns the host of a Host header, without its port and an IPv6 address's brackets.
func hostOf(hostport string) string {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	return strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
}

// isLoopbackHost reports whether host is localhost or a loopback address.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Package oauth authorizes a protomcp Client with OAuth 2.1, as the MCP spec's
// Authorization section describes (spec 2025-11-25, Authorization): discovery of the
// server's Protected Resource Metadata (RFC 9728) and of its authorization server (RFC 8414,
// OpenID Connect Discovery), client registration (pre-registered, Client ID Metadata
// Documents, or Dynamic Client Registration, RFC 7591), the authorization code grant with
// PKCE, the client_credentials grant, the JWT bearer grant with enterprise-managed
// authorization (token exchange for an ID-JAG, SEP-990) or workload identity federation
// (AssertionFile), refresh, and step-up on insufficient_scope. It does what spec 2026-07-28
// adds: an application_type in Dynamic Client Registration, RFC 9207 validation of the
// authorization response's iss, and client credentials bound to the authorization server
// that issued them (a new registration when the resource moves to another). With
// Config.DPoPKey it sender-constrains the tokens with DPoP (RFC 9449, the MCP DPoP
// extension).
//
// It plugs into a Client as one option:
//
//	c := runtime.NewClient(url, oauth.WithOAuth(oauth.Config{
//		Grant: oauth.GrantClientCredentials, ClientID: "reporter", ClientSecret: secret,
//	}))
//
// The package is apart from runtime so that a program that uses no OAuth client flow, such
// as a server, links neither golang.org/x/oauth2 nor the flows. The server side (verifying
// access tokens, Protected Resource Metadata, the 401 and 403 challenges) is in runtime
// (runtime.WithTokenVerifier), with a JWT verifier in jwtauth.
package oauth

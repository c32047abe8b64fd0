// Package runtime is what protomcp's generated code runs on: an MCP server and an MCP client
// that follow the Model Context Protocol (spec 2025-11-25, negotiating 2025-06-18 and
// 2025-03-26 too) over Streamable HTTP and stdio, and the generic functions that turn protobuf
// messages into tool arguments and results.
//
// # Protocol eras
//
// Over HTTP both sides also speak MCP 2026-07-28, the stateless era: no initialize and no
// sessions, the request metadata in every request's _meta, server/discover, and input requests
// answered through InputRequiredResults (multi round-trip requests) instead of server-to-client
// requests. A Server serves both eras on one endpoint, choosing per request; a Client probes
// with server/discover and falls back to initialize; WithEra restricts either to one era.
// Handlers are written once: in the stateless era a handler that asks the client for input
// (Caller.Elicit, CreateMessage, ListRoots) is replayed from the start with the answers, so
// what it does before asking must be idempotent (see ErrInputRequired).
//
// # Server
//
// NewServer returns a *Server, an http.Handler to mount at the MCP endpoint's path. Generated
// Register...Handler functions add a service's tools to it (AddTool, one per rpc); AddTool on
// the server, AddPrompt, AddResource and AddResourceTemplate add hand-written ones. The same
// server serves stdio with Server.ServeStdio. Handlers take a context and return a result or
// an error: a *Error becomes that JSON-RPC error, any other error of a tool becomes a result
// with isError set that the model can read. From a handler, CallerFrom(ctx) is the client that
// sent the request: it sends progress and log messages to it and asks it to sample, elicit or
// list its roots. Shut a server down with Server.Shutdown before its http.Server.
//
// # Client
//
// NewClient returns a *Client for an endpoint's URL, NewCommandClient one that launches a
// stdio server. Generated New...Client functions wrap it in a typed client; CallTool calls a
// tool by name with JSON arguments. A typed call returns a *ToolError when the tool reports an
// error, a *Error for a JSON-RPC error and a *HTTPError for an unexpected HTTP status; CodeOf
// reads the code of any of them. The client reads every response stream it finishes to its end
// (bounded in bytes and time), so that its keep-alive connections are reused, and resumes a
// broken stream with Last-Event-ID instead of sending a request twice.
//
// # Interceptors
//
// An Interceptor wraps every request a server handles or a client sends, given with
// WithInterceptors to NewServer, NewClient or a registration. Authentication, tracing
// (github.com/protomcp/protomcp/otel), metrics, logging and retries are interceptors.
//
// # Authorization
//
// A server given WithTokenVerifier is an OAuth 2.1 protected resource (spec section
// "Authorization"): it answers 401 with a WWW-Authenticate challenge naming its Protected
// Resource Metadata (RFC 9728, ProtectedResource), refuses tokens without the scopes it or a
// tool (ToolSpec.Scopes) needs with 403 insufficient_scope, and binds each session to the
// identity that started it. Handlers and interceptors read that identity with TokenInfoFrom;
// an HTTP middleware may set it instead with ContextWithTokenInfo. The jwtauth package
// verifies JWTs. A client given WithOAuth discovers the authorization server, registers, runs
// the configured grant (authorization code with PKCE through OAuthConfig.Authorize and
// LoopbackRedirect, client credentials, or the JWT bearer grant of SEP-990), refreshes its
// tokens and steps up on insufficient_scope.
//
// # Limits
//
// Every wait has a bound and every queue a size: request bodies (WithMaxBodyBytes), requests in
// flight per session (WithMaxInflight), events queued for a client that does not read
// (WithMaxQueuedEvents), handler run time (WithHandlerTimeout), writes to a client
// (WithWriteTimeout), sessions (WithMaxSessions) and their idle time (WithSessionIdleTimeout);
// on the client, call timeouts (WithDefaultCallTimeout, WithTimeout), event sizes
// (WithMaxEventSize) and the draining of finished streams (WithDrainLimits).
package runtime

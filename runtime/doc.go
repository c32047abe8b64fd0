// Package runtime is what protomcp's generated code runs on: an MCP server and an MCP client
// that follow the Model Context Protocol over Streamable HTTP and stdio, and the generic
// functions that turn protobuf messages into tool arguments and results. It speaks MCP
// 2025-11-25 (negotiating 2025-06-18 and 2025-03-26 too) and, over HTTP, the stateless
// 2026-07-28, on the same endpoint and with the same handlers.
//
// # Protocol eras
//
// MCP 2026-07-28 has no initialize and no sessions: the request metadata travels in every
// request's _meta, servers answer server/discover, and input requests are answered through
// InputRequiredResults (multi round-trip requests) instead of server-to-client requests. A
// [Server] serves both eras on one endpoint, choosing per request; a [Client] probes with
// server/discover and falls back to initialize; [WithEra] restricts either to one era.
// Handlers are written once: in the stateless era a handler that asks the client for input
// (Caller.Elicit, CreateMessage, ListRoots) is replayed from the start with the answers, so
// what it does before asking must be idempotent (see [ErrInputRequired]). What follows
// describes the session era; docs/eras.md in the repository has the stateless one.
//
// # Server
//
// [NewServer] returns a *Server, an [net/http.Handler] to mount at the MCP endpoint's path.
// Generated Register...Handler functions add a service's tools, prompts and resources to it;
// [Server.AddTool], [Server.AddPrompt], [Server.AddResource] and [Server.AddResourceTemplate]
// add hand-written ones, and the generic [AddTypedTool], [AddTypedPrompt], [AddTypedResource]
// and [AddStreamTool] (on a client, [CallTypedTool], [CallToolStream], [GetTypedPrompt] and
// [ReadTypedResource]) are what generated code calls. A duplicate registration panics. The same server serves stdio with
// [Server.ServeStdio]. Shut it down with [Server.Shutdown] before its http.Server: it lets calls
// in flight finish until the deadline, then cancels them, and ends the streams that
// http.Server.Shutdown would otherwise wait on.
//
//   - POST answers plain JSON when the result is the request's only message, and upgrades to
//     SSE as soon as the handler sends a notification or a request first (progress, logs,
//     sampling, elicitation). [WithSSEResponses] answers every request with SSE. Notifications
//     and responses get 202; GET opens the session's standalone stream; DELETE ends the session.
//   - Sessions have 128-bit random IDs: 400 without one, 404 for an unknown or ended one; idle
//     sessions end after [WithSessionIdleTimeout] (30 minutes). MCP-Protocol-Version is checked
//     (400 if unsupported).
//   - Every SSE stream starts with a priming event (an ID and an empty data line) and a retry
//     field. Event IDs name their stream, and a client that lost its connection resumes with
//     GET and Last-Event-ID from the [EventStore] (in memory by default, bounded in bytes), in
//     its own session only. Caller.CloseSSEStream closes a handler's connection without ending
//     its stream (SSE polling). Where a running handler's connection cannot be taken to end
//     its response early (HTTP/2, stdio, a ResponseWriter that is no http.Hijacker), the
//     handler runs on a worker goroutine instead, so that the close still ends the response
//     at once.
//   - No request waits for another: every request's stream exists before its handler runs.
//     The handler runs on the goroutine serving its HTTP request, which then writes the
//     answer; the first message the handler sends before its answer (or, for an SSE answer,
//     5 ms without one) starts a writer goroutine for the stream. Handlers never block on a send:
//     messages go to a bounded per-stream queue ([WithMaxQueuedEvents]), and a full queue is an
//     error returned to the handler and logged, never a silent drop. The last event of a
//     response and the end of the body go out in one write, so that clients which stop reading
//     at the response event still find their connection reusable.
//   - Tool arguments are decoded as protojson decodes them (an object of scalar fields by a
//     faster reader with the same results, anything else by protojson itself): unknown fields, wrong types, missing required
//     fields (at any depth) and broken buf.validate rules come back to the model as a tool error
//     (isError) naming the field's path. A raw tool's arguments are checked against its
//     ToolSpec.InputSchema (JSON Schema 2020-12 unless it says otherwise, self-contained,
//     compiled at registration: one that does not compile panics) before interceptors and the
//     handler run, and come back the same way, naming each failing path and reason. A handler's Go error becomes a tool error with its
//     text; an [*Error] becomes a JSON-RPC error with its [Code]. Panics are recovered, logged,
//     and answered with an internal error.
//   - list_changed notifications go out when anything is added or removed;
//     [Server.NotifyResourceUpdated] notifies subscribers; every list is paginated
//     ([WithPageSize]) and carries cache hints, ttlMs and cacheScope ([WithListCacheHint],
//     [ToolSpec].Cache, [WithCacheHint]), which the client honours (see [Client.ListTools]).
//   - JSON-RPC batches are served on sessions that negotiated 2025-03-26, as that version
//     requires: every request of the batch runs at once, notifications and responses are
//     handled, and the answer carries every response, as one JSON array once all are done or,
//     when a request sends anything besides its response, one SSE stream. Batches are bounded
//     by [WithMaxBodyBytes] and [WithMaxBatchSize]. Later versions removed batching: their
//     sessions, and requests without a session, get HTTP 400 and -32600.
//
// In a handler, [CallerFrom](ctx) is the client that sent the request, and everything sent
// back to it goes through it: NotifyProgress (sent only if the client asked, with a progress
// token), Log (filtered by the client's logging/setLevel), CreateMessage (sampling), Elicit,
// ListRoots and Ping, bounded by [WithCallerRequestTimeout]; and what the client said:
// SessionID, ProtocolVersion, Info, Capabilities, Meta, Header, TokenInfo.
// notifications/cancelled cancels the handler's ctx; a dropped connection does not. The
// handler's ctx also carries the values of the HTTP request's context (what middleware put
// there), without its cancellation.
//
// # Client
//
// [NewClient] returns a *Client for an endpoint's URL, [NewCommandClient] one that launches a
// stdio server, [NewInMemoryClient] one connected to a *Server in the same process (for tests).
// Generated New...Client functions wrap it in a typed client; [Client.CallTool] calls a tool by
// name with JSON arguments.
//
//   - It initializes lazily (or with [Client.Connect]), then sends the session ID and protocol
//     version on every request; a 404 for the session means a new initialize and one retry of
//     a request the server never ran. [Client.Close] sends DELETE within a bound.
//   - A call returns as soon as its response arrives. The rest of the stream is then read to
//     its end in the background, bounded in bytes and time ([WithDrainLimits], 1 MiB and 5 s),
//     so the connection goes back to the pool: after warm-up, sequential calls open no new TCP
//     connection (a tested property). Only cancellation, timeouts and errors close a stream
//     early. Calls are bounded by their contexts ([WithDefaultCallTimeout], 5 minutes, when the
//     context has none).
//   - A stream that ends before its response is resumed with GET and Last-Event-ID after the
//     server's retry delay, never by POSTing again (which would run the tool twice).
//   - Per call: [WithProgress] (callbacks run in order, all before the call returns),
//     [WithTimeout], [WithMeta]. Cancelling the call's context sends notifications/cancelled.
//   - Server-to-client requests: [WithSamplingHandler], [WithElicitationHandler] (an accepted
//     form's missing properties are filled in from the schema's defaults), [WithRootsHandler];
//     pings are answered. [WithStandaloneStream] opens the GET stream for notifications
//     unrelated to a call.
//   - Lists: [Client.ListTools], [Client.ListResources], [Client.ListResourceTemplates] and
//     [Client.ListPrompts] return one page and its cursor; [Client.Tools], [Client.Resources],
//     [Client.ResourceTemplates] and [Client.Prompts] iterate over all pages.
//
// A call fails with a [*ToolError] when the tool reports an error (its content is for the
// model), an [*Error] for a JSON-RPC error, an [*HTTPError] for an unexpected HTTP status, or
// [ErrSessionExpired]. [CodeOf] reads the code of any error, and [Code.String] names it
// (invalid_params). Failures on the client's side of the wire get local codes of their own,
// never sent: [CodeDeadlineExceeded] for a call past its deadline ([WithTimeout] or its
// context's), [CodeRequestCancelled] for a cancelled one, and [CodeUnavailable] for a server
// that could not be reached (refused connection, DNS, TLS, a malformed URL, a 404 from a
// wrong path, 502/503/504).
//
// # Interceptors
//
// An [Interceptor] wraps every request a server handles or a client sends, like connect's:
// authentication, tracing (github.com/protomcp/protomcp/otelmcp), metrics, logging, rate limits
// and retries are one interceptor each. Give them with [WithInterceptors] to NewServer,
// NewClient or a registration (a generated Register...Handler, AddTool, AddPrompt, ...).
//
//   - A [*Request] carries the method, its JSON-RPC ID, the raw params, _meta, the target (Name:
//     the tool, the prompt, or the resource URI), the session, the protocol version, the HTTP
//     headers and, for a typed tool, Message: the decoded request on the server, the typed
//     request on the client. A [*Response] carries Result and, for typed tools, Message: the
//     handler's response.
//   - The first interceptor given is the outermost; a registration's run inside the server's.
//     initialize passes through them too; notifications do not.
//   - A server interceptor refuses a request by returning an error without calling next: an
//     *Error is answered as that JSON-RPC error, any other error on tools/call as a tool error.
//     It replaces an answer by returning another Response: a new Message is encoded like the
//     handler's, a Result takes precedence. A panic in an interceptor is recovered like one in
//     a handler.
//   - A typed tool's response stays a proto message under the interceptors and is encoded once,
//     after them: an observing interceptor costs no allocation.
//   - On a client, an interceptor may set req.Header (HTTP headers for this request) and add
//     req.Meta entries (sent as params._meta: trace context); calling next again retries with
//     a new request ID, within the same call timeout.
//
// # Authorization
//
// A server given [WithTokenVerifier] is an OAuth 2.1 protected resource (spec section
// "Authorization"): it answers 401 with a WWW-Authenticate challenge naming its Protected
// Resource Metadata (RFC 9728, [ProtectedResource]), refuses tokens without the scopes it or a
// tool (ToolSpec.Scopes) needs with 403 insufficient_scope, and binds each session to the
// identity that started it. Handlers and interceptors read that identity with [TokenInfoFrom];
// an HTTP middleware may set it instead with [ContextWithTokenInfo]. The jwtauth package
// verifies JWTs. A client given oauth.WithOAuth (package runtime/oauth, which plugs in through
// [WithTransportWrapper]) discovers the authorization server, registers, runs the configured
// grant (authorization code with PKCE, client credentials, or the JWT bearer grant of
// SEP-990), refreshes its tokens and steps up on insufficient_scope; this package links no
// OAuth client library. docs/auth.md in the repository has the details. What a caller sees
// may depend on who it is: [WithListsByScope] leaves out of tools/list the tools its token
// cannot call, and [WithVisibility] hides a registration from the callers a predicate
// refuses (docs/security.md, "Lists shaped by the caller").
//
// # Limits
//
// Every wait has a bound and every queue a size, each with a safe default: request bodies
// ([WithMaxBodyBytes]), messages in a JSON-RPC batch ([WithMaxBatchSize]), the time a body may
// take to arrive ([WithBodyReadTimeout]), requests in flight per session ([WithMaxInflight]),
// memory held per session and per server, in bytes ([WithSessionBudget], [WithServerBudget]),
// events queued for a client that does not read ([WithMaxQueuedEvents]), handler run time
// ([WithHandlerTimeout]), writes to a client ([WithWriteTimeout]), sessions ([WithMaxSessions]),
// their handshake and idle time ([WithHandshakeTimeout], [WithSessionIdleTimeout]); on the
// client, call timeouts ([WithDefaultCallTimeout], [WithTimeout]), event sizes
// ([WithMaxEventSize]), the draining of finished streams ([WithDrainLimits]), concurrent server
// requests ([WithMaxServerRequests]) and queued notifications ([WithNotificationBudget]). Hitting
// a limit is a clear error (a JSON-RPC code or an HTTP status naming the limit), never a crash or
// a hang. docs/security.md in the repository lists every limit and what happens when it is hit.
//
// Every numeric and duration option, of a server, a client or a call, follows one rule: zero,
// like leaving the option out, means the option's default; [Unlimited] (any negative value)
// means no limit, or off for what is not a limit (WithKeepAlive, WithEventRetention;
// WithRetryInterval, which cannot be off, takes it as zero).
//
// # Replicas
//
// Several replicas of a server can serve one URL behind a load balancer. In the 2025-11-25 era
// they share three things, given as options: the sessions ([WithSessionStore], a
// [SessionStore]), the events of response streams, for a client to resume on any replica
// ([WithEventStore] with a [SharedEventStore]), and a [Bus] between replicas ([WithBus]) for
// notifications, answers to server requests and leases. The 2026-07-28 era needs only the same
// [WithRequestStateKey] on every replica. The redis module (github.com/protomcp/protomcp/redis)
// implements all three on Redis; docs/deploy.md in the repository has the details.
package runtime

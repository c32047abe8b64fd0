// Package runtime is what protomcp's generated code runs on: an MCP server and an MCP client
// that follow the Model Context Protocol (spec 2025-11-25, negotiating 2025-06-18 and
// 2025-03-26 too) over Streamable HTTP and stdio, and the generic functions that turn protobuf
// messages into tool arguments and results.
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
// # Limits
//
// Every wait has a bound and every queue a size: request bodies (WithMaxBodyBytes), requests in
// flight per session (WithMaxInflight), events queued for a client that does not read
// (WithMaxQueuedEvents), handler run time (WithHandlerTimeout), writes to a client
// (WithWriteTimeout), sessions (WithMaxSessions) and their idle time (WithSessionIdleTimeout);
// on the client, call timeouts (WithDefaultCallTimeout, WithTimeout), event sizes
// (WithMaxEventSize) and the draining of finished streams (WithDrainLimits).
package runtime

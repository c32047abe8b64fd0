// Package connectmcp serves connect-go services as MCP tools on a protomcp runtime.Server,
// running the service's own connect.Interceptors, and forwards MCP tool calls to a running
// Connect (or gRPC, or gRPC-Web) backend. It is grpcmcp's counterpart for connect-go v1
// (connectrpc.com/connect), with the same metadata, deadline, cancellation and error rules
// (docs/grpc.md), in a module of its own so that connect-go enters neither protomcp's go.mod
// nor grpcmcp's.
//
// In process, NewHandlerClient takes the http.Handler that the service's generated
// New<Service>Handler returns, built with its interceptors (connect.WithInterceptors): each
// tool call is a Connect call to that handler in memory, so the call runs through connect-go's
// own handler, its interceptors see a complete connect.Request (Spec, Peer, headers), and
// connect-go applies the deadline. Forwarding, NewClient takes an HTTP client and the
// backend's base URL; its connect.ClientOptions add client interceptors or choose the
// protocol (connect.WithGRPC, connect.WithGRPCWeb). Unary and ServerStreaming turn a
// procedure into the handler method that protoc-gen-mcp's generated Register function takes;
// pass ErrorInterceptor to that function for the error mapping.
//
// The call's request headers are built from the MCP request as grpcmcp builds its metadata:
// the HTTP headers named with WithHeaders, the verified identity (runtime.TokenInfoFrom)
// under HeaderSubject, HeaderIssuer, HeaderClientID and HeaderScope, and the W3C trace context
// of the request's _meta; its deadline is the handler's, shortened to the caller's own timeout
// when its request carries one (MetaTimeout, sent by PropagateDeadline); cancelling the MCP
// call cancels the Connect call.
//
// Errors: a *connect.Error (or any error, which connect-go reports as unknown) becomes a tool
// error whose text names the code and the details a model can act on, with the status in
// _meta under MetaStatus (the same key and google.rpc.Status form as grpcmcp's, so either
// package's client functions read it; Connect's codes are gRPC's); CodeUnimplemented becomes
// the JSON-RPC error of a tool that is not implemented. CodeOf and ErrorOf read the code and
// details back from what a typed protomcp client returns.
//
// Long-running operations (AIP-151): an rpc that returns a google.longrunning.Operation is
// served by UnaryOperation, which the generated code calls. An operation that is not done is
// polled with GetOperationProcedure (at the same base URL when forwarding, on the handler
// given with WithOperations in memory) with a bounded backoff (WithOperationPolling) until it
// is; each new metadata becomes the task's, and when the task is cancelled,
// CancelOperationProcedure is called once.
package connectmcp

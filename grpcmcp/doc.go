// Package grpcmcp serves grpc-go services as MCP tools on a protomcp runtime.Server, running the
// service's own interceptors, and forwards MCP tool calls to a running gRPC backend.
//
// In process, a Server wraps one implementation of a service (the pb.XServer of
// protoc-gen-go-grpc) and its interceptor chain: Unary and ServerStreaming turn each of its
// methods into the handler method that protoc-gen-mcp's generated Register function takes,
// and Server.HandlerOption gives that function the error mapping. A unary rpc becomes a typed
// tool, a server-streaming rpc a streaming tool (runtime.ServerStream). Each call runs the
// unary (or stream) interceptors once, in order, with grpc.UnaryServerInfo.Server the
// implementation and FullMethod the rpc's "/pkg.Service/Method", as a grpc.Server would.
//
// The handler's context carries what a gRPC handler expects of its call:
//   - incoming metadata (metadata.FromIncomingContext), built from the MCP request: the HTTP
//     headers named with WithHeaders, the verified identity (runtime.TokenInfoFrom) under
//     MetadataSubject, MetadataIssuer, MetadataClientID and MetadataScope (these names are
//     never taken from headers), and the W3C trace context of the request's _meta
//     ("traceparent", "tracestate", "baggage");
//   - the deadline: the server's handler timeout, shortened to the caller's own timeout when
//     its request carries one (MetaTimeout, sent by the client interceptor PropagateDeadline);
//   - cancellation: the context ends when the client cancels the call
//     (notifications/cancelled) or its stream closes;
//   - a grpc.ServerTransportStream, so that grpc.Method, grpc.SetHeader and grpc.SetTrailer
//     work (headers and trailers set there are not sent: MCP has no place for them).
//
// Errors map both ways (docs/grpc.md has the table): a gRPC status becomes a tool error whose
// text names the code and the google.rpc details (BadRequest field violations, RetryInfo,
// ...) a model can act on, with the whole status in the result's _meta under MetaStatus;
// Unimplemented becomes the JSON-RPC error of a tool that is not implemented. On the client
// side, CodeOf and StatusOf read the code and details back from the error a typed
// protomcp client returns.
//
// Forwarding (ForwardUnary, ForwardServerStreaming) serves a tool by calling the same rpc on a
// grpc.ClientConnInterface, with the same metadata as outgoing metadata, and the call's
// deadline and cancellation through its context; the connection's client interceptors run
// as for any call on it.
//
// Long-running operations (AIP-151): an rpc that returns a google.longrunning.Operation is
// served by UnaryOperation (in process) or ForwardOperation, which the generated code calls.
// An operation that is not done is polled with GetOperation (on the same connection when
// forwarding, on the implementation given with WithOperations in process) with a bounded
// backoff (WithOperationPolling) until it is; each new metadata becomes the task's, and when
// the task is cancelled, CancelOperation is called once.
package grpcmcp

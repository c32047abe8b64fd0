// Package otelmcp adds OpenTelemetry tracing, metrics and trace context propagation to
// protomcp servers and clients, following the OpenTelemetry semantic conventions for the
// Model Context Protocol
// (https://opentelemetry.io/docs/specs/semconv/gen-ai/mcp/).
//
// One Interceptor serves both sides: give it to runtime.NewServer and runtime.NewClient with
// runtime.WithInterceptors.
//
//	ic, err := otelmcp.NewInterceptor()
//	if err != nil {
//		return err
//	}
//	srv := runtime.NewServer(impl, runtime.WithInterceptors(ic))
//	c := runtime.NewClient(url, runtime.WithInterceptors(ic))
//
// On a Server, every request handled gets a span of kind SERVER named
// "{mcp.method.name} {target}" (for example "tools/call get_forecast") and is measured by the
// mcp.server.operation.duration histogram. On a Client, every request sent gets a span of
// kind CLIENT and is measured by mcp.client.operation.duration.
//
// Trace context travels in the request's params._meta ("traceparent", "tracestate" and
// "baggage" with the default propagators), as the conventions and MCP's SEP-414 prescribe:
// the client injects it, the server extracts it and makes the client's span the parent of its
// own. When the server's context already holds a span (the HTTP server span of
// go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp, say) and the request carries
// a parent of its own in _meta, the MCP span links to that transport span instead; without
// _meta context the transport span is the parent.
//
// The semantic conventions for MCP are still in development; this package uses the names of
// go.opentelemetry.io/otel/semconv/v1.41.0 and its mcpconv package.
package otelmcp

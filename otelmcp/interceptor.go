package otelmcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/semconv/v1.41.0/mcpconv"
	"go.opentelemetry.io/otel/trace"

	"github.com/protomcp/protomcp/runtime"
)

// InstrumentationName is the name of the tracer and the meter this package uses.
const InstrumentationName = "github.com/protomcp/protomcp/otelmcp"

// ErrorTypeToolError is the error.type of a tools/call whose result has isError set (a tool
// that failed, as opposed to a JSON-RPC error), as the semantic conventions name it.
const ErrorTypeToolError = "tool_error"

// MCP method names this package treats specially (the runtime keeps its own unexported).
const (
	methodToolsCall  = "tools/call"
	methodPromptsGet = "prompts/get"
	methodResRead    = "resources/read"
	methodResSub     = "resources/subscribe"
	methodResUnsub   = "resources/unsubscribe"
	errorTypeTimeout = "timeout"
	errorTypeOther   = "_OTHER"
	networkProtoHTTP = "http"
)

// durationBuckets are the explicit bucket boundaries, in seconds, that the semantic
// conventions advise for mcp.client.operation.duration and mcp.server.operation.duration.
var durationBuckets = []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}

// An Interceptor traces and measures MCP requests: those a Server handles (spans of kind
// SERVER, the mcp.server.operation.duration histogram) and those a Client sends (spans of
// kind CLIENT, mcp.client.operation.duration). It carries trace context in params._meta. It
// implements runtime.Interceptor; one value can serve any number of servers and clients at
// once.
type Interceptor struct {
	tracer         trace.Tracer
	propagator     propagation.TextMapPropagator
	serverDuration mcpconv.ServerOperationDuration
	clientDuration mcpconv.ClientOperationDuration
	uriInSpanName  bool
	publicEndpoint bool
}

var _ runtime.Interceptor = (*Interceptor)(nil)

// NewInterceptor returns an Interceptor configured by opts. It fails only when the meter
// provider refuses to create the duration histograms.
func NewInterceptor(opts ...Option) (*Interceptor, error) {
	cfg := newConfig(opts)
	tracer := cfg.tracerProvider.Tracer(InstrumentationName,
		trace.WithInstrumentationVersion(runtime.Version),
		trace.WithSchemaURL(semconv.SchemaURL))
	meter := cfg.meterProvider.Meter(InstrumentationName,
		metric.WithInstrumentationVersion(runtime.Version),
		metric.WithSchemaURL(semconv.SchemaURL))
	buckets := metric.WithExplicitBucketBoundaries(durationBuckets...)
	srv, err := mcpconv.NewServerOperationDuration(meter, buckets)
	if err != nil {
		return nil, fmt.Errorf("otelmcp: create the %s histogram: %w", srv.Name(), err)
	}
	cli, err := mcpconv.NewClientOperationDuration(meter, buckets)
	if err != nil {
		return nil, fmt.Errorf("otelmcp: create the %s histogram: %w", cli.Name(), err)
	}
	return &Interceptor{
		tracer:         tracer,
		propagator:     cfg.propagator,
		serverDuration: srv,
		clientDuration: cli,
		uriInSpanName:  cfg.uriInSpanName,
		publicEndpoint: cfg.publicEndpoint,
	}, nil
}

// WrapCall implements runtime.Interceptor: it traces and measures each call, as a server or
// as a client according to Request.IsClient.
func (i *Interceptor) WrapCall(next runtime.CallFunc) runtime.CallFunc {
	return func(ctx context.Context, req *runtime.Request) (*runtime.Response, error) {
		if req.IsClient {
			return i.client(ctx, req, next)
		}
		return i.server(ctx, req, next)
	}
}

// server handles one request on a Server: a SERVER span whose parent is the context from
// _meta (linked to the transport's span, if any) or else the transport's span.
func (i *Interceptor) server(ctx context.Context, req *runtime.Request, next runtime.CallFunc) (*runtime.Response, error) {
	start := time.Now()
	opts := make([]trace.SpanStartOption, 0, 4)
	opts = append(opts, trace.WithSpanKind(trace.SpanKindServer), trace.WithTimestamp(start))
	if req.Meta != nil && len(req.Meta.Other) > 0 {
		ambient := trace.SpanContextFromContext(ctx)
		// Extract also brings the baggage in _meta into the handler's context.
		ctx = i.propagator.Extract(ctx, metaCarrier(req.Meta.Other))
		if remote := trace.SpanContextFromContext(ctx); remote.IsValid() && !remote.Equal(ambient) {
			// The client's span is the parent; the transport's span (HTTP) is a link, since
			// one MCP request may span several HTTP requests and the other way around.
			if ambient.IsValid() {
				opts = append(opts, trace.WithLinks(trace.Link{SpanContext: ambient}))
			}
			if i.publicEndpoint {
				opts = append(opts, trace.WithNewRoot(), trace.WithLinks(trace.Link{SpanContext: remote}))
			}
		}
	}
	attrs := i.requestAttributes(req, make([]attribute.KeyValue, 0, 12))
	if req.SessionID != "" {
		attrs = append(attrs, semconv.McpSessionID(req.SessionID))
	}
	if req.ProtocolVersion != "" {
		attrs = append(attrs, semconv.McpProtocolVersion(req.ProtocolVersion))
	}
	if id := requestID(req.ID); id != "" {
		attrs = append(attrs, semconv.JSONRPCRequestID(id))
	}
	if req.Header != nil {
		attrs = append(attrs, semconv.NetworkProtocolName(networkProtoHTTP), semconv.NetworkTransportTCP)
	}
	opts = append(opts, trace.WithAttributes(attrs...))
	ctx, span := i.tracer.Start(ctx, i.spanName(req), opts...)
	defer span.End()

	hadSession := req.SessionID != ""
	resp, err := next(ctx, req)

	// initialize starts its session inside next: its ID and version are known only now.
	if !hadSession && span.IsRecording() {
		if req.SessionID != "" {
			span.SetAttributes(semconv.McpSessionID(req.SessionID))
		}
		if req.ProtocolVersion != "" {
			span.SetAttributes(semconv.McpProtocolVersion(req.ProtocolVersion))
		}
	}
	o := serverOutcome(ctx, req, resp, err)
	i.finish(ctx, span, req, o, start, false)
	return resp, err
}

// client sends one request from a Client: a CLIENT span, its context injected into _meta.
func (i *Interceptor) client(ctx context.Context, req *runtime.Request, next runtime.CallFunc) (*runtime.Response, error) {
	start := time.Now()
	attrs := i.requestAttributes(req, make([]attribute.KeyValue, 0, 8))
	attrs = append(attrs, semconv.NetworkProtocolName(networkProtoHTTP), semconv.NetworkTransportTCP)
	ctx, span := i.tracer.Start(ctx, i.spanName(req),
		trace.WithSpanKind(trace.SpanKindClient), trace.WithTimestamp(start), trace.WithAttributes(attrs...))
	defer span.End()
	i.inject(ctx, req)

	resp, err := next(ctx, req)

	// The session, its version and the request's ID are known once the request was sent.
	if span.IsRecording() {
		if req.SessionID != "" {
			span.SetAttributes(semconv.McpSessionID(req.SessionID))
		}
		if req.ProtocolVersion != "" {
			span.SetAttributes(semconv.McpProtocolVersion(req.ProtocolVersion))
		}
		if id := requestID(req.ID); id != "" {
			span.SetAttributes(semconv.JSONRPCRequestID(id))
		}
	}
	o := clientOutcome(resp, req, err)
	i.finish(ctx, span, req, o, start, true)
	return resp, err
}

// inject writes ctx's trace context into the request's _meta. It builds a new RequestMeta
// and map, so that a map the caller passed in (runtime.WithMeta) is left alone.
func (i *Interceptor) inject(ctx context.Context, req *runtime.Request) {
	carrier := make(metaCarrier, 2)
	i.propagator.Inject(ctx, carrier)
	if len(carrier) == 0 {
		return // no span to propagate, no baggage
	}
	meta := &runtime.RequestMeta{}
	if req.Meta != nil {
		*meta = *req.Meta
	}
	other := make(map[string]json.RawMessage, len(meta.Other)+len(carrier))
	maps.Copy(other, meta.Other)
	maps.Copy(other, carrier)
	meta.Other = other
	req.Meta = meta
}

// requestAttributes appends the attributes known before the call: the method and its target.
func (i *Interceptor) requestAttributes(req *runtime.Request, attrs []attribute.KeyValue) []attribute.KeyValue {
	attrs = append(attrs, semconv.McpMethodNameKey.String(req.Method))
	return appendTargetAttributes(req, attrs, true)
}

// appendTargetAttributes appends gen_ai.tool.name and gen_ai.operation.name for tools/call,
// gen_ai.prompt.name for prompts/get, and (with uri) mcp.resource.uri for resource methods.
func appendTargetAttributes(req *runtime.Request, attrs []attribute.KeyValue, uri bool) []attribute.KeyValue {
	switch req.Method {
	case methodToolsCall:
		attrs = append(attrs, semconv.GenAIToolName(req.Name), semconv.GenAIOperationNameExecuteTool)
	case methodPromptsGet:
		attrs = append(attrs, semconv.GenAIPromptName(req.Name))
	case methodResRead, methodResSub, methodResUnsub:
		if uri && req.Name != "" {
			attrs = append(attrs, semconv.McpResourceURI(req.Name))
		}
	}
	return attrs
}

// spanName is "{mcp.method.name} {target}": the tool or the prompt, or the resource's URI when
// WithResourceURIInSpanName is set; the method alone when there is no target.
func (i *Interceptor) spanName(req *runtime.Request) string {
	switch req.Method {
	case methodToolsCall, methodPromptsGet:
	case methodResRead, methodResSub, methodResUnsub:
		if !i.uriInSpanName {
			return req.Method
		}
	default:
		return req.Method
	}
	if req.Name == "" {
		return req.Method
	}
	return req.Method + " " + req.Name
}

// outcome is how a call ended, in the terms of the semantic conventions.
type outcome struct {
	errorType  string // error.type; "" for success
	statusCode string // rpc.response.status_code: the JSON-RPC error code; "" for none
	message    string // the span status's description
}

// finish records the outcome on the span and the call's duration in the histogram.
func (i *Interceptor) finish(ctx context.Context, span trace.Span, req *runtime.Request, o outcome, start time.Time, isClient bool) {
	if o.errorType != "" {
		span.SetStatus(codes.Error, o.message)
		span.SetAttributes(semconv.ErrorTypeKey.String(o.errorType))
		if o.statusCode != "" {
			span.SetAttributes(semconv.RPCResponseStatusCode(o.statusCode))
		}
	}
	elapsed := time.Since(start).Seconds()
	attrs := make([]attribute.KeyValue, 0, 8)
	attrs = appendTargetAttributes(req, attrs, false)
	if req.ProtocolVersion != "" {
		attrs = append(attrs, semconv.McpProtocolVersion(req.ProtocolVersion))
	}
	if isClient || req.Header != nil {
		attrs = append(attrs, semconv.NetworkProtocolName(networkProtoHTTP), semconv.NetworkTransportTCP)
	}
	if o.errorType != "" {
		attrs = append(attrs, semconv.ErrorTypeKey.String(o.errorType))
		if o.statusCode != "" {
			attrs = append(attrs, semconv.RPCResponseStatusCode(o.statusCode))
		}
	}
	method := mcpconv.MethodNameAttr(req.Method)
	if isClient {
		i.clientDuration.Record(ctx, elapsed, method, attrs...)
	} else {
		i.serverDuration.Record(ctx, elapsed, method, attrs...)
	}
}

// rpcOutcome is the outcome of a JSON-RPC error: its code's name as error.type, its number as
// rpc.response.status_code.
func rpcOutcome(e *runtime.Error) outcome {
	// The MCP semantic conventions: error.type is the JSON-RPC error code as a string, like
	// rpc.response.status_code.
	code := strconv.Itoa(int(e.Code))
	return outcome{errorType: code, statusCode: code, message: e.Message}
}

// serverOutcome classifies what a Server's handler returned the way the runtime answers it: an
// *Error is that JSON-RPC error; any other error of a tools/call is a tool error (a result
// with isError set); any other error of another method is an internal error; a cancelled
// request gets no answer.
func serverOutcome(ctx context.Context, req *runtime.Request, resp *runtime.Response, err error) outcome {
	if err != nil {
		var e *runtime.Error
		switch {
		case errors.As(err, &e):
			return rpcOutcome(e)
		case req.Method == methodToolsCall && ctx.Err() == nil:
			return outcome{errorType: ErrorTypeToolError, message: err.Error()}
		}
		code := runtime.CodeOf(err)
		if code == runtime.CodeRequestCancelled {
			// Never sent on the wire: no status code.
			return outcome{errorType: code.String(), message: err.Error()}
		}
		return outcome{errorType: code.String(), statusCode: strconv.Itoa(int(code)), message: err.Error()}
	}
	if req.Method == methodToolsCall && toolResultIsError(resp) {
		return outcome{errorType: ErrorTypeToolError, message: "the tool reported an error"}
	}
	return outcome{}
}

// clientOutcome classifies how a Client's call ended: a JSON-RPC error, a tool error (the
// typed CallTool's *runtime.ToolError, or a raw result with isError set), a timeout, a
// cancellation, an unexpected HTTP status, or another failure (_OTHER).
func clientOutcome(resp *runtime.Response, req *runtime.Request, err error) outcome {
	if err != nil {
		var (
			te *runtime.ToolError
			e  *runtime.Error
			he *runtime.HTTPError
		)
		switch {
		case errors.As(err, &te):
			return outcome{errorType: ErrorTypeToolError, message: err.Error()}
		case errors.As(err, &e):
			return rpcOutcome(e)
		case errors.Is(err, context.DeadlineExceeded):
			return outcome{errorType: errorTypeTimeout, message: err.Error()}
		case errors.Is(err, context.Canceled):
			return outcome{errorType: runtime.CodeRequestCancelled.String(), message: err.Error()}
		case errors.As(err, &he):
			return outcome{errorType: strconv.Itoa(he.StatusCode), message: err.Error()}
		}
		return outcome{errorType: errorTypeOther, message: err.Error()}
	}
	if req.Method == methodToolsCall && toolResultIsError(resp) {
		return outcome{errorType: ErrorTypeToolError, message: "the tool reported an error"}
	}
	return outcome{}
}

// toolResultIsError reports whether a tools/call answer is a result with isError set: a
// *runtime.CallToolResult, a typed message with GetIsError (mcpv1.ToolResult), or the raw
// JSON a Client received.
func toolResultIsError(resp *runtime.Response) bool {
	if resp == nil {
		return false
	}
	if tr := resp.ToolResult(); tr != nil {
		return tr.IsError
	}
	if m, ok := resp.Message.(interface{ GetIsError() bool }); ok && m.GetIsError() {
		return true
	}
	raw, ok := resp.Result.(json.RawMessage)
	if !ok || !bytes.Contains(raw, []byte(`"isError"`)) {
		return false
	}
	var r struct {
		IsError bool `json:"isError"`
	}
	return json.Unmarshal(raw, &r) == nil && r.IsError
}

// requestID returns the JSON-RPC ID as the jsonrpc.request.id attribute wants it: a string ID
// without its quotes, a number as written; "" for none (or null).
func requestID(id runtime.ID) string {
	s := id.String()
	if s == "" || s == "null" {
		return ""
	}
	if s[0] == '"' {
		var v string
		if err := json.Unmarshal([]byte(s), &v); err == nil {
			return v
		}
	}
	return s
}

package grpcmcp

import (
	"context"
	"fmt"
	"io"
	"net/textproto"
	"strconv"
	"strings"
	"time"

	"github.com/protomcp/protomcp/runtime"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
)

// The metadata keys under which a bridged handler finds the verified identity of its caller
// (runtime.TokenInfoFrom). The bridge never copies them from the request's headers, even when
// WithHeaders names them, so that a caller cannot claim an identity.
const (
	// MetadataSubject is the token's subject ("sub").
	MetadataSubject = "protomcp-subject"
	// MetadataIssuer is the token's issuer ("iss").
	MetadataIssuer = "protomcp-issuer"
	// MetadataClientID is the OAuth client the token was issued to.
	MetadataClientID = "protomcp-client-id"
	// MetadataScope holds the token's scopes, one value each.
	MetadataScope = "protomcp-scope"
)

// traceKeys are the W3C trace context entries of a request's _meta (spec 2025-11-25, Basic,
// _meta; the trace context convention of SEP-414) that become metadata of the same name.
var traceKeys = []string{"traceparent", "tracestate", "baggage"}

// reserved are the metadata keys the bridge sets itself.
var reserved = map[string]bool{MetadataSubject: true, MetadataIssuer: true, MetadataClientID: true, MetadataScope: true}

// An Option configures a Server or a forwarding Client.
type Option func(*config)

type config struct {
	unary    []grpc.UnaryServerInterceptor
	stream   []grpc.StreamServerInterceptor
	headers  []string
	callOpts []grpc.CallOption
	// ops is the in-process google.longrunning.Operations implementation (WithOperations).
	ops any
	// pollInitial and pollMax bound the wait between two polls of an operation.
	pollInitial, pollMax time.Duration
}

// WithUnaryInterceptors adds the service's unary interceptors, in order, the first outermost
// (as grpc.ChainUnaryInterceptor). They run once per call of a unary rpc.
func WithUnaryInterceptors(ics ...grpc.UnaryServerInterceptor) Option {
	return func(c *config) { c.unary = append(c.unary, ics...) }
}

// WithStreamInterceptors adds the service's stream interceptors, in order, the first
// outermost (as grpc.ChainStreamInterceptor). They run once per call of a server-streaming
// rpc.
func WithStreamInterceptors(ics ...grpc.StreamServerInterceptor) Option {
	return func(c *config) { c.stream = append(c.stream, ics...) }
}

// WithHeaders names the HTTP headers of the MCP request that become incoming (or, forwarding,
// outgoing) metadata, lowercased as gRPC names them. None is copied by default: an MCP
// request's headers are the MCP client's, not a gRPC caller's. Header names that gRPC
// reserves (":authority", "grpc-*", "content-type", ...) and the identity keys are refused.
func WithHeaders(names ...string) Option {
	return func(c *config) {
		for _, n := range names {
			c.headers = append(c.headers, strings.ToLower(textproto.TrimString(n)))
		}
	}
}

// WithCallOptions adds grpc.CallOptions to every forwarded call (ForwardUnary,
// ForwardServerStreaming).
func WithCallOptions(opts ...grpc.CallOption) Option {
	return func(c *config) { c.callOpts = append(c.callOpts, opts...) }
}

func newConfig(opts []Option) config {
	c := config{pollInitial: DefaultPollInitial, pollMax: DefaultPollMax}
	for _, o := range opts {
		o(&c)
	}
	if c.pollInitial <= 0 || c.pollMax < c.pollInitial {
		panic(fmt.Sprintf("grpcmcp: operation polling needs 0 < initial <= max, not %v and %v", c.pollInitial, c.pollMax))
	}
	var keep []string
	for _, h := range c.headers {
		if h == "" || reserved[h] || strings.HasPrefix(h, ":") || strings.HasPrefix(h, "grpc-") || h == "content-type" || h == "te" {
			panic(fmt.Sprintf("grpcmcp: header %q cannot become metadata", h))
		}
		keep = append(keep, h)
	}
	c.headers = keep
	return c
}

// A Server serves one grpc-go service implementation as MCP tools, through its interceptors.
// Make one with NewServer, and give its methods, wrapped by Unary and ServerStreaming, to the
// generated Register function of the service, with HandlerOption.
type Server struct {
	impl   any
	cfg    config
	unary  grpc.UnaryServerInterceptor
	stream grpc.StreamServerInterceptor
}

// NewServer returns a Server for impl, the service implementation that the interceptors see
// as grpc.UnaryServerInfo.Server (and StreamServerInfo.Server).
func NewServer(impl any, opts ...Option) *Server {
	s := &Server{impl: impl, cfg: newConfig(opts)}
	s.unary = chainUnary(s.cfg.unary)
	s.stream = chainStream(s.cfg.stream)
	return s
}

// HandlerOption is the option to pass to the generated Register function with the wrapped
// methods: it turns the gRPC status errors of the handlers into MCP outcomes (docs/grpc.md).
func (s *Server) HandlerOption() runtime.HandlerOption {
	return runtime.WithInterceptors(ErrorInterceptor())
}

// Unary returns the MCP handler method of the unary rpc fullMethod ("/pkg.Service/Method"),
// served by h (the implementation's method) through the Server's unary interceptors.
func Unary[Req, Res any](s *Server, fullMethod string, h func(context.Context, *Req) (*Res, error)) func(context.Context, *Req) (*Res, error) {
	info := &grpc.UnaryServerInfo{Server: s.impl, FullMethod: fullMethod}
	handler := func(ctx context.Context, req any) (any, error) {
		return h(ctx, req.(*Req))
	}
	return func(ctx context.Context, req *Req) (*Res, error) {
		ctx, cancel := s.callContext(ctx, fullMethod)
		defer cancel()
		if s.unary == nil {
			return h(ctx, req)
		}
		out, err := s.unary(ctx, req, info, handler)
		res, _ := out.(*Res)
		return res, err
	}
}

// ServerStreaming returns the MCP handler method of the server-streaming rpc fullMethod, served
// by h (the implementation's method) through the Server's stream interceptors. Each message h
// sends goes out as the streaming tool's progress notification; the last is the result.
func ServerStreaming[Req, Res any](s *Server, fullMethod string, h func(*Req, grpc.ServerStreamingServer[Res]) error) func(context.Context, *Req, *runtime.ServerStream[Res]) error {
	info := &grpc.StreamServerInfo{FullMethod: fullMethod, IsServerStream: true}
	return func(ctx context.Context, req *Req, out *runtime.ServerStream[Res]) error {
		ctx, cancel := s.callContext(ctx, fullMethod)
		defer cancel()
		ss := &serverStream[Req, Res]{ctx: ctx, req: req, out: out}
		handler := func(_ any, stream grpc.ServerStream) error {
			in := new(Req)
			if err := stream.RecvMsg(in); err != nil {
				return err
			}
			return h(in, &grpc.GenericServerStream[Req, Res]{ServerStream: stream})
		}
		if s.stream == nil {
			return handler(s.impl, ss)
		}
		return s.stream(s.impl, ss, info, handler)
	}
}

// callContext returns the context a bridged handler runs under: ctx with the call's incoming
// metadata, its deadline, and a grpc.ServerTransportStream for fullMethod.
func (s *Server) callContext(ctx context.Context, fullMethod string) (context.Context, context.CancelFunc) {
	ctx, cancel := withCallerDeadline(ctx)
	ctx = metadata.NewIncomingContext(ctx, requestMetadata(ctx, s.cfg.headers))
	ctx = grpc.NewContextWithServerTransportStream(ctx, &transportStream{method: fullMethod})
	return ctx, cancel
}

// requestMetadata builds the metadata of the MCP request that ctx belongs to: the allowed
// headers, the verified identity and the trace context of _meta.
func requestMetadata(ctx context.Context, headers []string) metadata.MD {
	md := metadata.MD{}
	c := runtime.CallerFrom(ctx)
	if h := c.Header(); h != nil {
		for _, name := range headers {
			if vs := h.Values(name); len(vs) > 0 {
				md[name] = append([]string(nil), vs...)
			}
		}
	}
	if t := runtime.TokenInfoFrom(ctx); t != nil {
		if t.Subject != "" {
			md[MetadataSubject] = []string{t.Subject}
		}
		if t.Issuer != "" {
			md[MetadataIssuer] = []string{t.Issuer}
		}
		if t.ClientID != "" {
			md[MetadataClientID] = []string{t.ClientID}
		}
		if len(t.Scopes) > 0 {
			md[MetadataScope] = append([]string(nil), t.Scopes...)
		}
	}
	if m := c.Meta(); m != nil {
		for _, k := range traceKeys {
			if raw, ok := m.Other[k]; ok {
				if v, err := strconv.Unquote(string(raw)); err == nil && v != "" {
					md[k] = []string{v}
				}
			}
		}
	}
	return md
}

// withCallerDeadline shortens ctx's deadline to the caller's timeout (MetaTimeout), when its
// request has one.
func withCallerDeadline(ctx context.Context) (context.Context, context.CancelFunc) {
	if m := runtime.CallerFrom(ctx).Meta(); m != nil {
		if raw, ok := m.Other[MetaTimeout]; ok {
			if ms, err := strconv.ParseInt(string(raw), 10, 64); err == nil && ms > 0 {
				return context.WithTimeout(ctx, time.Duration(ms)*time.Millisecond)
			}
		}
	}
	return ctx, func() {} // the handler's context ends with the call already
}

// serverStream is the grpc.ServerStream that a bridged server-streaming rpc runs on: RecvMsg
// yields the tool's decoded request once, SendMsg sends on the MCP stream.
type serverStream[Req, Res any] struct {
	ctx  context.Context
	req  *Req
	read bool
	out  *runtime.ServerStream[Res]
}

func (s *serverStream[Req, Res]) SetHeader(metadata.MD) error  { return nil }
func (s *serverStream[Req, Res]) SendHeader(metadata.MD) error { return nil }
func (s *serverStream[Req, Res]) SetTrailer(metadata.MD)       {}
func (s *serverStream[Req, Res]) Context() context.Context     { return s.ctx }

func (s *serverStream[Req, Res]) SendMsg(m any) error {
	res, ok := m.(*Res)
	if !ok {
		return fmt.Errorf("grpcmcp: stream sends a %T where the rpc sends a %T", m, res)
	}
	return s.out.Send(res)
}

func (s *serverStream[Req, Res]) RecvMsg(m any) error {
	if s.read {
		return io.EOF // a server-streaming rpc has one request
	}
	dst, ok := m.(proto.Message)
	src, ok2 := any(s.req).(proto.Message)
	if !ok || !ok2 {
		return fmt.Errorf("grpcmcp: stream reads a %T where the rpc takes a %T", m, s.req)
	}
	s.read = true
	if dst == src {
		return nil
	}
	proto.Reset(dst)
	proto.Merge(dst, src)
	return nil
}

// transportStream is the grpc.ServerTransportStream of a bridged call: it names the method;
// headers and trailers are accepted and dropped.
type transportStream struct{ method string }

func (t *transportStream) Method() string               { return t.method }
func (t *transportStream) SetHeader(metadata.MD) error  { return nil }
func (t *transportStream) SendHeader(metadata.MD) error { return nil }
func (t *transportStream) SetTrailer(metadata.MD) error { return nil }

// chainUnary chains interceptors as grpc.ChainUnaryInterceptor does: the first outermost.
func chainUnary(ics []grpc.UnaryServerInterceptor) grpc.UnaryServerInterceptor {
	switch len(ics) {
	case 0:
		return nil
	case 1:
		return ics[0]
	}
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		return ics[0](ctx, req, info, next(ics, 1, info, handler))
	}
}

func next(ics []grpc.UnaryServerInterceptor, i int, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) grpc.UnaryHandler {
	if i == len(ics) {
		return handler
	}
	return func(ctx context.Context, req any) (any, error) {
		return ics[i](ctx, req, info, next(ics, i+1, info, handler))
	}
}

// chainStream chains interceptors as grpc.ChainStreamInterceptor does: the first outermost.
func chainStream(ics []grpc.StreamServerInterceptor) grpc.StreamServerInterceptor {
	switch len(ics) {
	case 0:
		return nil
	case 1:
		return ics[0]
	}
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		return ics[0](srv, ss, info, nextStream(ics, 1, info, handler))
	}
}

func nextStream(ics []grpc.StreamServerInterceptor, i int, info *grpc.StreamServerInfo, handler grpc.StreamHandler) grpc.StreamHandler {
	if i == len(ics) {
		return handler
	}
	return func(srv any, ss grpc.ServerStream) error {
		return ics[i](srv, ss, info, nextStream(ics, i+1, info, handler))
	}
}

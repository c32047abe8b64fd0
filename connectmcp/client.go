package connectmcp

import (
	"context"
	"fmt"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"time"

	"connectrpc.com/connect"
	"github.com/protomcp/protomcp/runtime"
)

// The request headers under which a bridged handler finds the verified identity of its
// caller (runtime.TokenInfoFrom). They are never copied from the MCP request's headers, even
// when WithHeaders names them, so that a caller cannot claim an identity.
const (
	// HeaderSubject is the token's subject ("sub").
	HeaderSubject = "Protomcp-Subject"
	// HeaderIssuer is the token's issuer ("iss").
	HeaderIssuer = "Protomcp-Issuer"
	// HeaderClientID is the OAuth client the token was issued to.
	HeaderClientID = "Protomcp-Client-Id"
	// HeaderScope holds the token's scopes, one value each.
	HeaderScope = "Protomcp-Scope"
)

// traceKeys are the W3C trace context entries of a request's _meta (spec 2025-11-25, Basic,
// _meta) that become request headers of the same name.
var traceKeys = []string{"traceparent", "tracestate", "baggage"}

// An Option configures a Client.
type Option func(*config)

type config struct {
	headers     []string
	clientOpts  []connect.ClientOption
	handlerOpts []connect.HandlerOption
	// ops serves google.longrunning.Operations in memory (WithOperations).
	ops http.Handler
	// pollInitial and pollMax bound the wait between two polls of an operation.
	pollInitial, pollMax time.Duration
}

// WithHeaders names the HTTP headers of the MCP request that the Connect call carries. None
// is copied by default: an MCP request's headers are the MCP client's. Headers that the
// protocols reserve (Content-Type, Connect-*, Grpc-*, Te, ...) and the identity headers are
// refused.
func WithHeaders(names ...string) Option {
	return func(c *config) {
		for _, n := range names {
			c.headers = append(c.headers, textproto.CanonicalMIMEHeaderKey(strings.TrimSpace(n)))
		}
	}
}

// WithClientOptions adds connect.ClientOptions to the Client's calls: client interceptors
// (connect.WithInterceptors), the protocol (connect.WithGRPC, connect.WithGRPCWeb), the codec.
func WithClientOptions(opts ...connect.ClientOption) Option {
	return func(c *config) { c.clientOpts = append(c.clientOpts, opts...) }
}

// WithHandlerOptions gives the connect.HandlerOptions of the service's handler (its
// interceptors, connect.WithInterceptors; its codecs, its limits) to a generated
// Register<Service>ConnectHandler, which builds the handler with them. HandlerOptions returns
// them.
func WithHandlerOptions(opts ...connect.HandlerOption) Option {
	return func(c *config) { c.handlerOpts = append(c.handlerOpts, opts...) }
}

// HandlerOptions returns the connect.HandlerOptions given in opts with WithHandlerOptions.
func HandlerOptions(opts ...Option) []connect.HandlerOption {
	var c config
	for _, o := range opts {
		o(&c)
	}
	return c.handlerOpts
}

func refused(h string) bool {
	l := strings.ToLower(h)
	switch {
	case l == "", l == "content-type", l == "te", l == "host", l == "content-length", l == "accept-encoding", l == "content-encoding":
		return true
	case strings.HasPrefix(l, "connect-"), strings.HasPrefix(l, "grpc-"), strings.HasPrefix(l, "protomcp-"):
		return true
	}
	return false
}

// A Client makes the Connect calls of bridged or forwarded tools: to a service's handler in
// memory (NewHandlerClient) or to a backend over the network (NewClient).
type Client struct {
	http connect.HTTPClient
	base string
	cfg  config
	// ops is the Client that polls google.longrunning.Operations: c itself when forwarding,
	// one of the WithOperations handler in memory, or nil.
	ops *Client
}

// NewClient returns a Client that forwards to the Connect backend at baseURL (such as
// "http://127.0.0.1:8080"), through httpClient.
func NewClient(httpClient connect.HTTPClient, baseURL string, opts ...Option) *Client {
	c := &Client{http: httpClient, base: strings.TrimSuffix(baseURL, "/"), cfg: config{pollInitial: DefaultPollInitial, pollMax: DefaultPollMax}}
	for _, o := range opts {
		o(&c.cfg)
	}
	for _, h := range c.cfg.headers {
		if refused(h) {
			panic(fmt.Sprintf("connectmcp: header %q cannot be forwarded", h))
		}
	}
	if c.cfg.pollInitial <= 0 || c.cfg.pollMax < c.cfg.pollInitial {
		panic(fmt.Sprintf("connectmcp: operation polling needs 0 < initial <= max, not %v and %v", c.cfg.pollInitial, c.cfg.pollMax))
	}
	c.ops = c
	return c
}

// NewHandlerClient returns a Client that serves each call with h, the http.Handler of the
// service's generated New<Service>Handler (built with its connect.HandlerOptions, its
// interceptors among them), in memory: no socket, and connect-go's handler runs as for a
// call over the network.
func NewHandlerClient(h http.Handler, opts ...Option) *Client {
	c := NewClient(memoryClient{h}, "http://in-memory.invalid", opts...)
	c.ops = nil
	if c.cfg.ops != nil {
		c.ops = NewClient(memoryClient{c.cfg.ops}, "http://in-memory.invalid", opts...)
	}
	return c
}

// Unary returns the MCP handler method of the unary procedure ("/pkg.Service/Method") that
// serves each call with a Connect call through c.
func Unary[Req, Res any](c *Client, procedure string) func(context.Context, *Req) (*Res, error) {
	client := connect.NewClient[Req, Res](c.http, c.base+procedure, c.cfg.clientOpts...)
	return func(ctx context.Context, req *Req) (*Res, error) {
		ctx, cancel := withCallerDeadline(ctx)
		defer cancel()
		creq := connect.NewRequest(req)
		setHeaders(ctx, creq.Header(), c.cfg.headers)
		res, err := client.CallUnary(ctx, creq)
		if err != nil {
			return nil, err
		}
		return res.Msg, nil
	}
}

// ServerStreaming returns the MCP handler method of the server-streaming procedure that
// serves each call with a Connect call through c, sending each message the service streams on
// as the tool's progress notification; the last is the result.
func ServerStreaming[Req, Res any](c *Client, procedure string) func(context.Context, *Req, *runtime.ServerStream[Res]) error {
	client := connect.NewClient[Req, Res](c.http, c.base+procedure, c.cfg.clientOpts...)
	return func(ctx context.Context, req *Req, out *runtime.ServerStream[Res]) error {
		ctx, cancel := withCallerDeadline(ctx)
		defer cancel() // ends the service's stream when the call ends early
		creq := connect.NewRequest(req)
		setHeaders(ctx, creq.Header(), c.cfg.headers)
		stream, err := client.CallServerStream(ctx, creq)
		if err != nil {
			return err
		}
		defer stream.Close()
		for stream.Receive() {
			if err := out.Send(stream.Msg()); err != nil {
				return err
			}
		}
		return stream.Err()
	}
}

// setHeaders sets the headers of the MCP request that ctx belongs to on h: the allowed
// headers, the verified identity and the trace context of _meta.
func setHeaders(ctx context.Context, h http.Header, allowed []string) {
	caller := runtime.CallerFrom(ctx)
	if in := caller.Header(); in != nil {
		for _, name := range allowed {
			for _, v := range in.Values(name) {
				h.Add(name, v)
			}
		}
	}
	if t := runtime.TokenInfoFrom(ctx); t != nil {
		if t.Subject != "" {
			h.Set(HeaderSubject, t.Subject)
		}
		if t.Issuer != "" {
			h.Set(HeaderIssuer, t.Issuer)
		}
		if t.ClientID != "" {
			h.Set(HeaderClientID, t.ClientID)
		}
		for _, s := range t.Scopes {
			h.Add(HeaderScope, s)
		}
	}
	if m := caller.Meta(); m != nil {
		for _, k := range traceKeys {
			if raw, ok := m.Other[k]; ok {
				if v, err := strconv.Unquote(string(raw)); err == nil && v != "" {
					h.Set(k, v)
				}
			}
		}
	}
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

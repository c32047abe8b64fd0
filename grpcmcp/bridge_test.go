package grpcmcp_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/protomcp/protomcp/grpcmcp"
	pb "github.com/protomcp/protomcp/grpcmcp/internal/gen/bridgetest/v1"
	"github.com/protomcp/protomcp/grpcmcp/internal/gen/bridgetest/v1/bridgetestv1mcp"
	"github.com/protomcp/protomcp/runtime"
	rpccode "google.golang.org/genproto/googleapis/rpc/code"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
)

// service is a grpc-go implementation of BridgeTestService, as a team would have it.
type service struct {
	pb.UnimplementedBridgeTestServiceServer
	waited chan error // Wait sends why its context ended
	waitin chan struct{}
}

func newService() *service {
	return &service{waited: make(chan error, 1), waitin: make(chan struct{}, 1)}
}

func (s *service) Echo(ctx context.Context, req *pb.EchoRequest) (*pb.EchoResponse, error) {
	res := &pb.EchoResponse{Text: req.GetText()}
	md, _ := metadata.FromIncomingContext(ctx)
	for k, vs := range md {
		for _, v := range vs {
			res.Metadata = append(res.Metadata, k+"="+v)
		}
	}
	slices.Sort(res.Metadata)
	if d, ok := ctx.Deadline(); ok {
		res.HasDeadline = true
		res.DeadlineMs = time.Until(d).Milliseconds()
	}
	if m, ok := grpc.Method(ctx); !ok || m != pb.BridgeTestService_Echo_FullMethodName {
		return nil, status.Errorf(codes.Internal, "grpc.Method = %q, %v", m, ok)
	}
	return res, nil
}

func (s *service) Fail(_ context.Context, req *pb.FailRequest) (*pb.FailResponse, error) {
	st := status.New(codes.Code(req.GetCode()), req.GetMessage())
	if req.GetDetails() {
		var err error
		st, err = st.WithDetails(
			&errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: "title", Description: "must not be empty"}}},
			&errdetails.RetryInfo{RetryDelay: durationpb.New(2 * time.Second)},
		)
		if err != nil {
			return nil, err
		}
	}
	return nil, st.Err()
}

func (s *service) Wait(ctx context.Context, _ *pb.WaitRequest) (*pb.WaitResponse, error) {
	s.waitin <- struct{}{}
	<-ctx.Done()
	s.waited <- ctx.Err()
	return nil, ctx.Err()
}

func (s *service) Count(req *pb.CountRequest, stream grpc.ServerStreamingServer[pb.CountResponse]) error {
	if v, _ := stream.Context().Value(wrappedKey{}).(bool); !v {
		return status.Error(codes.Internal, "the handler does not run on the interceptor's stream")
	}
	for i := int32(1); i <= req.GetN(); i++ {
		if err := stream.Send(&pb.CountResponse{Progress: i}); err != nil {
			return err
		}
	}
	return nil
}

func register(srv *runtime.Server, impl pb.BridgeTestServiceServer, opts ...grpcmcp.Option) {
	bridgetestv1mcp.RegisterBridgeTestServiceGRPCServer(srv, impl, opts...)
}

type wrappedKey struct{}

// wrapped is a stream interceptor's stream, with a context of its own.
type wrapped struct {
	grpc.ServerStream
	ctx context.Context
}

func (w wrapped) Context() context.Context { return w.ctx }

// calls counts the interceptors' runs, per interceptor and method.
type calls struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *calls) add(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[key]++
}

func (c *calls) get(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[key]
}

func (c *calls) unary(name string, impl any) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if info.Server != impl {
			return nil, status.Errorf(codes.Internal, "info.Server is %T", info.Server)
		}
		c.add(name + " " + info.FullMethod)
		return h(ctx, req)
	}
}

func (c *calls) stream(name string) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		c.add(name + " " + info.FullMethod)
		return h(srv, wrapped{ss, context.WithValue(ss.Context(), wrappedKey{}, true)})
	}
}

type fixture struct {
	svc    *service
	calls  *calls
	client bridgetestv1mcp.BridgeTestServiceClient
	raw    *runtime.Client
}

// identity is an HTTP middleware that authenticates every request as ada, as a gateway in
// front of the server would.
func identity(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info := &runtime.TokenInfo{Subject: "ada", Issuer: "https://issuer.test", ClientID: "cli", Scopes: []string{"books:read", "books:write"}}
		next.ServeHTTP(w, r.WithContext(runtime.ContextWithTokenInfo(r.Context(), info)))
	})
}

func newFixture(t *testing.T, clientOpts ...runtime.ClientOption) *fixture {
	return newFixtureWith(t, nil, clientOpts...)
}

func newFixtureWith(t *testing.T, serverOpts []runtime.ServerOption, clientOpts ...runtime.ClientOption) *fixture {
	t.Helper()
	f := &fixture{svc: newService(), calls: &calls{}}
	serverOpts = append([]runtime.ServerOption{runtime.WithLogger(slog.New(slog.DiscardHandler))}, serverOpts...)
	srv := runtime.NewServer(runtime.Implementation{Name: "bridge", Version: "1"}, serverOpts...)
	register(srv, f.svc,
		grpcmcp.WithUnaryInterceptors(f.calls.unary("first", f.svc), f.calls.unary("second", f.svc)),
		grpcmcp.WithStreamInterceptors(f.calls.stream("stream")),
		grpcmcp.WithHeaders("X-Request-Id"),
	)
	hs := httptest.NewServer(identity(srv))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		hs.Close()
	})
	opts := append([]runtime.ClientOption{runtime.WithHeader("X-Request-Id", "req-1"), runtime.WithHeader("X-Secret", "no")}, clientOpts...)
	f.raw = runtime.NewClient(hs.URL, opts...)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = f.raw.Close(ctx)
	})
	f.client = bridgetestv1mcp.NewBridgeTestServiceClient(f.raw)
	return f
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestUnaryRunsInterceptorsOnce proves that a unary rpc served as a tool runs the service's
// unary interceptors once each, in order, with the implementation as info.Server, and that its
// handler sees the allowed headers, the verified identity and the trace context of _meta as
// incoming metadata (and nothing else).
func TestUnaryRunsInterceptorsOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := testCtx(t)
	res, err := f.client.Echo(ctx, &pb.EchoRequest{Text: "hi"}, runtime.WithMeta("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"))
	if err != nil {
		t.Fatal(err)
	}
	if res.GetText() != "hi" {
		t.Errorf("text %q, want hi", res.GetText())
	}
	want := []string{
		"protomcp-client-id=cli", "protomcp-issuer=https://issuer.test", "protomcp-scope=books:read", "protomcp-scope=books:write",
		"protomcp-subject=ada", "traceparent=00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "x-request-id=req-1",
	}
	if !slices.Equal(res.GetMetadata(), want) {
		t.Errorf("metadata\n%q\nwant\n%q", res.GetMetadata(), want)
	}
	for _, name := range []string{"first", "second"} {
		if n := f.calls.get(name + " " + pb.BridgeTestService_Echo_FullMethodName); n != 1 {
			t.Errorf("interceptor %s ran %d times, want 1", name, n)
		}
	}
}

// TestServerStreamingTool proves that a server-streaming rpc becomes a streaming tool: each
// message sent reaches the client in order, the stream interceptor runs once, and the handler
// runs on the stream the interceptor passed on.
func TestServerStreamingTool(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var got []int32
	for msg, err := range f.client.Count(testCtx(t), &pb.CountRequest{N: 3}).All() {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, msg.GetProgress())
	}
	if !slices.Equal(got, []int32{1, 2, 3}) {
		t.Errorf("got %v, want [1 2 3]", got)
	}
	if n := f.calls.get("stream " + pb.BridgeTestService_Count_FullMethodName); n != 1 {
		t.Errorf("stream interceptor ran %d times, want 1", n)
	}
}

// TestDeadline proves that the caller's deadline reaches the handler with PropagateDeadline,
// and that without it the handler runs under the server's handler timeout.
func TestDeadline(t *testing.T) {
	t.Parallel()
	f := newFixture(t, runtime.WithInterceptors(grpcmcp.PropagateDeadline()))
	ctx, cancel := context.WithTimeout(testCtx(t), 3*time.Second)
	defer cancel()
	res, err := f.client.Echo(ctx, &pb.EchoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.GetHasDeadline() || res.GetDeadlineMs() > 3000 || res.GetDeadlineMs() <= 0 {
		t.Errorf("handler deadline %v, %d ms; want within the caller's 3 s", res.GetHasDeadline(), res.GetDeadlineMs())
	}

	plain := newFixture(t)
	res, err = plain.client.Echo(ctx, &pb.EchoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.GetHasDeadline() || res.GetDeadlineMs() <= 3000 {
		t.Errorf("handler deadline %v, %d ms; want the server's handler timeout", res.GetHasDeadline(), res.GetDeadlineMs())
	}
}

// TestCancel proves that cancelling the MCP call cancels the handler's context (spec
// 2025-11-25, Utilities, Cancellation).
func TestCancel(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx, cancel := context.WithCancel(testCtx(t))
	done := make(chan error, 1)
	go func() {
		_, err := f.client.Wait(ctx, &pb.WaitRequest{})
		done <- err
	}()
	select {
	case <-f.svc.waitin:
	case <-time.After(10 * time.Second):
		t.Fatal("the handler did not start")
	}
	cancel()
	select {
	case err := <-f.svc.waited:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the handler's context ended with %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the handler's context was not cancelled")
	}
	select {
	case err := <-done:
		if grpcmcp.CodeOf(err) != codes.Canceled {
			t.Errorf("the call failed with %v (%v), want Canceled", err, grpcmcp.CodeOf(err))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the call did not return")
	}
}

// TestErrorCodes proves the error table of docs/grpc.md: every code but Unimplemented comes
// back as a tool error that CodeOf reads, with the code's name and the message in its text;
// Unimplemented is the JSON-RPC error of an unimplemented tool.
func TestErrorCodes(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := testCtx(t)
	for c := codes.Canceled; c <= codes.Unauthenticated; c++ {
		t.Run(c.String(), func(t *testing.T) {
			_, err := f.client.Fail(ctx, &pb.FailRequest{Code: int32(c), Message: "it went wrong"})
			if got := grpcmcp.CodeOf(err); got != c {
				t.Fatalf("CodeOf(%v) = %v, want %v", err, got, c)
			}
			var te *runtime.ToolError
			if c == codes.Unimplemented {
				if runtime.CodeOf(err) != runtime.CodeMethodNotFound {
					t.Errorf("Unimplemented: %v, want the JSON-RPC method-not-found error", err)
				}
				return
			}
			if !errors.As(err, &te) {
				t.Fatalf("%v is not a tool error", err)
			}
			if want := rpccode.Code(c).String() + ": it went wrong"; te.Result.Text() != want {
				t.Errorf("text %q, want %q", te.Result.Text(), want)
			}
			if StatusOfMsg := grpcmcp.StatusOf(err).Message(); StatusOfMsg != "it went wrong" {
				t.Errorf("StatusOf message %q", StatusOfMsg)
			}
		})
	}
}

// TestErrorDetails proves that google.rpc details reach the model as text and the client as
// the status's details.
func TestErrorDetails(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	_, err := f.client.Fail(testCtx(t), &pb.FailRequest{Code: int32(codes.InvalidArgument), Message: "bad book", Details: true})
	var te *runtime.ToolError
	if !errors.As(err, &te) {
		t.Fatalf("%v is not a tool error", err)
	}
	text := te.Result.Text()
	want := "INVALID_ARGUMENT: bad book\nfield title: must not be empty\nretry after 2s"
	if text != want {
		t.Errorf("text %q, want %q", text, want)
	}
	st := grpcmcp.StatusOf(err)
	if st.Code() != codes.InvalidArgument || len(st.Details()) != 2 {
		t.Fatalf("status %v with details %v", st, st.Details())
	}
	br, ok := st.Details()[0].(*errdetails.BadRequest)
	if !ok || br.GetFieldViolations()[0].GetField() != "title" {
		t.Errorf("first detail %v, want the BadRequest", st.Details()[0])
	}
	ri, ok := st.Details()[1].(*errdetails.RetryInfo)
	if !ok || ri.GetRetryDelay().AsDuration() != 2*time.Second {
		t.Errorf("second detail %v, want the RetryInfo", st.Details()[1])
	}
}

// TestInvalidArguments proves that arguments the tool's schema refuses are InvalidArgument
// when the ErrorInterceptor is the server's too (the runtime refuses them before the
// registration's interceptors), and a tool error with the runtime's text otherwise.
func TestInvalidArguments(t *testing.T) {
	t.Parallel()
	plain := newFixture(t)
	res, err := plain.raw.CallTool(testCtx(t), bridgetestv1mcp.BridgeTestServiceEchoToolName, []byte(`{"txt":"typo"}`))
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(res.Text(), `unknown field "txt"`) {
		t.Errorf("result %v, %q; want a tool error naming the field", res.IsError, res.Text())
	}

	f := newFixtureWith(t, []runtime.ServerOption{runtime.WithInterceptors(grpcmcp.ErrorInterceptor())})
	res, err = f.raw.CallTool(testCtx(t), bridgetestv1mcp.BridgeTestServiceEchoToolName, []byte(`{"txt":"typo"}`))
	if err != nil {
		t.Fatal(err)
	}
	st := grpcmcp.ResultStatus(res)
	if st.Code() != codes.InvalidArgument || !strings.Contains(res.Text(), "txt") {
		t.Errorf("status %v, text %q; want InvalidArgument naming the field", st, res.Text())
	}
}

// partial implements Echo only, leaving the other rpcs to grpc-go's Unimplemented server.
type partial struct {
	pb.UnimplementedBridgeTestServiceServer
}

func (partial) Echo(_ context.Context, req *pb.EchoRequest) (*pb.EchoResponse, error) {
	return &pb.EchoResponse{Text: req.GetText()}, nil
}

// TestUnimplementedLeftOut proves that the rpcs a grpc-go implementation leaves to its
// embedded Unimplemented server are not offered as tools.
func TestUnimplementedLeftOut(t *testing.T) {
	t.Parallel()
	srv := runtime.NewServer(runtime.Implementation{Name: "partial", Version: "1"}, runtime.WithLogger(slog.New(slog.DiscardHandler)))
	bridgetestv1mcp.RegisterBridgeTestServiceGRPCServer(srv, partial{})
	hs := httptest.NewServer(srv)
	defer hs.Close()
	ctx := testCtx(t)
	c := runtime.NewClient(hs.URL)
	defer func() { _ = c.Close(ctx) }()
	tools, err := c.ListTools(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	if !slices.Equal(names, []string{bridgetestv1mcp.BridgeTestServiceEchoToolName}) {
		t.Errorf("tools %q, want only echo", names)
	}
}

// TestHandlerTimeout proves that a call past the server's handler timeout is a
// DeadlineExceeded tool error.
func TestHandlerTimeout(t *testing.T) {
	t.Parallel()
	f := newFixtureWith(t, []runtime.ServerOption{runtime.WithHandlerTimeout(200 * time.Millisecond)})
	_, err := f.client.Wait(testCtx(t), &pb.WaitRequest{})
	var te *runtime.ToolError
	if !errors.As(err, &te) || grpcmcp.CodeOf(err) != codes.DeadlineExceeded {
		t.Errorf("%v (%v), want a DeadlineExceeded tool error", err, grpcmcp.CodeOf(err))
	}
	select {
	case <-f.svc.waited:
	case <-time.After(10 * time.Second):
		t.Fatal("the handler's context did not end")
	}
}

// TestReservedHeaders proves that WithHeaders refuses the names gRPC reserves and the
// identity keys, which a caller could otherwise set.
func TestReservedHeaders(t *testing.T) {
	t.Parallel()
	for _, name := range []string{grpcmcp.MetadataSubject, "Grpc-Timeout", ":authority", "content-type", "te"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("WithHeaders(%q) was accepted", name)
				}
			}()
			grpcmcp.NewServer(nil, grpcmcp.WithHeaders(name))
		}()
	}
}

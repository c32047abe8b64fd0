package connectmcp_test

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

	"connectrpc.com/connect"
	"github.com/protomcp/protomcp/connectmcp"
	pb "github.com/protomcp/protomcp/connectmcp/internal/gen/bridgetest/v1"
	"github.com/protomcp/protomcp/connectmcp/internal/gen/bridgetest/v1/bridgetestv1connect"
	"github.com/protomcp/protomcp/connectmcp/internal/gen/bridgetest/v1/bridgetestv1mcp"
	"github.com/protomcp/protomcp/runtime"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/protobuf/types/known/durationpb"
)

// service is a connect-go implementation of BridgeTestService, as a team would have it.
type service struct {
	bridgetestv1connect.UnimplementedBridgeTestServiceHandler
	waitin chan struct{}
	waited chan error
}

func newService() *service {
	return &service{waitin: make(chan struct{}, 1), waited: make(chan error, 1)}
}

func (s *service) Echo(ctx context.Context, req *connect.Request[pb.EchoRequest]) (*connect.Response[pb.EchoResponse], error) {
	res := &pb.EchoResponse{Text: req.Msg.GetText()}
	for _, k := range []string{"X-Request-Id", "X-Secret", connectmcp.HeaderSubject, connectmcp.HeaderIssuer, connectmcp.HeaderClientID, connectmcp.HeaderScope, "Traceparent"} {
		for _, v := range req.Header().Values(k) {
			res.Metadata = append(res.Metadata, strings.ToLower(k)+"="+v)
		}
	}
	slices.Sort(res.Metadata)
	if d, ok := ctx.Deadline(); ok {
		res.HasDeadline = true
		res.DeadlineMs = time.Until(d).Milliseconds()
	}
	if req.Spec().Procedure != bridgetestv1connect.BridgeTestServiceEchoProcedure {
		return nil, connect.NewError(connect.CodeInternal, errors.New("the request's Spec has no procedure: "+req.Spec().Procedure))
	}
	return connect.NewResponse(res), nil
}

func (s *service) Fail(_ context.Context, req *connect.Request[pb.FailRequest]) (*connect.Response[pb.FailResponse], error) {
	e := connect.NewError(connect.Code(req.Msg.GetCode()), errors.New(req.Msg.GetMessage()))
	if req.Msg.GetDetails() {
		br, _ := connect.NewErrorDetail(&errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: "title", Description: "must not be empty"}}})
		ri, _ := connect.NewErrorDetail(&errdetails.RetryInfo{RetryDelay: durationpb.New(2 * time.Second)})
		e.AddDetail(br)
		e.AddDetail(ri)
	}
	return nil, e
}

func (s *service) Wait(ctx context.Context, _ *connect.Request[pb.WaitRequest]) (*connect.Response[pb.WaitResponse], error) {
	s.waitin <- struct{}{}
	<-ctx.Done()
	s.waited <- ctx.Err()
	return nil, ctx.Err()
}

func (s *service) Count(_ context.Context, req *connect.Request[pb.CountRequest], stream *connect.ServerStream[pb.CountResponse]) error {
	for i := int32(1); i <= req.Msg.GetN(); i++ {
		if err := stream.Send(&pb.CountResponse{Progress: i}); err != nil {
			return err
		}
	}
	return nil
}

// calls counts the interceptor's runs by procedure.
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

// counter is a connect.Interceptor that counts unary calls and handler streams.
type counter struct{ c *calls }

func (i counter) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		if req.Spec().IsClient {
			i.c.add("client " + req.Spec().Procedure)
		} else {
			i.c.add("handler " + req.Spec().Procedure)
		}
		return next(ctx, req)
	}
}

func (i counter) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return func(ctx context.Context, spec connect.Spec) connect.StreamingClientConn {
		i.c.add("client " + spec.Procedure)
		return next(ctx, spec)
	}
}

func (i counter) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		i.c.add("handler " + conn.Spec().Procedure)
		return next(ctx, conn)
	}
}

func identity(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info := &runtime.TokenInfo{Subject: "ada", Issuer: "https://issuer.test", ClientID: "cli", Scopes: []string{"books:read", "books:write"}}
		next.ServeHTTP(w, r.WithContext(runtime.ContextWithTokenInfo(r.Context(), info)))
	})
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// serveMCP serves the tools that register adds on loopback and returns the typed MCP client.
func serveMCP(t *testing.T, register func(*runtime.Server)) bridgetestv1mcp.BridgeTestServiceClient {
	t.Helper()
	srv := runtime.NewServer(runtime.Implementation{Name: "connect", Version: "1"}, runtime.WithLogger(slog.New(slog.DiscardHandler)))
	register(srv)
	hs := httptest.NewServer(identity(srv))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		hs.Close()
	})
	rc := runtime.NewClient(hs.URL, runtime.WithHeader("X-Request-Id", "req-1"), runtime.WithHeader("X-Secret", "no"),
		runtime.WithInterceptors(connectmcp.PropagateDeadline()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = rc.Close(ctx)
	})
	return bridgetestv1mcp.NewBridgeTestServiceClient(rc)
}

// check runs the same calls through client, in process or forwarded: metadata, the caller's
// deadline, interceptors once per call, errors with details, streaming and cancellation.
func check(t *testing.T, client bridgetestv1mcp.BridgeTestServiceClient, svc *service, c *calls, sides ...string) {
	ctx := testCtx(t)
	dctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	res, err := client.Echo(dctx, &pb.EchoRequest{Text: "hi"}, runtime.WithMeta("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"))
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"protomcp-client-id=cli", "protomcp-issuer=https://issuer.test", "protomcp-scope=books:read", "protomcp-scope=books:write",
		"protomcp-subject=ada", "traceparent=00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "x-request-id=req-1",
	}
	if !slices.Equal(res.GetMetadata(), want) {
		t.Errorf("headers\n%q\nwant\n%q", res.GetMetadata(), want)
	}
	if !res.GetHasDeadline() || res.GetDeadlineMs() > 3000 || res.GetDeadlineMs() <= 0 {
		t.Errorf("handler deadline %v, %d ms; want within the caller's 3 s", res.GetHasDeadline(), res.GetDeadlineMs())
	}
	for _, side := range sides {
		if n := c.get(side + " " + bridgetestv1connect.BridgeTestServiceEchoProcedure); n != 1 {
			t.Errorf("%s interceptor ran %d times, want 1", side, n)
		}
	}

	_, err = client.Fail(ctx, &pb.FailRequest{Code: int32(connect.CodeInvalidArgument), Message: "bad book", Details: true})
	var te *runtime.ToolError
	if !errors.As(err, &te) {
		t.Fatalf("%v is not a tool error", err)
	}
	if text := te.Result.Text(); text != "INVALID_ARGUMENT: bad book\nfield title: must not be empty\nretry after 2s" {
		t.Errorf("text %q", text)
	}
	ce := connectmcp.ErrorOf(err)
	if ce.Code() != connect.CodeInvalidArgument || len(ce.Details()) != 2 {
		t.Errorf("error %v with %d details", ce, len(ce.Details()))
	} else if m, err := ce.Details()[0].Value(); err != nil {
		t.Error(err)
	} else if br, ok := m.(*errdetails.BadRequest); !ok || br.GetFieldViolations()[0].GetField() != "title" {
		t.Errorf("first detail %v", m)
	}
	for code := connect.CodeCanceled; code <= connect.CodeUnauthenticated; code++ {
		_, err := client.Fail(ctx, &pb.FailRequest{Code: int32(code), Message: "it went wrong"})
		if got := connectmcp.CodeOf(err); got != code {
			t.Errorf("%v: CodeOf(%v) = %v", code, err, got)
		}
		if code == connect.CodeUnimplemented && runtime.CodeOf(err) != runtime.CodeMethodNotFound {
			t.Errorf("unimplemented: %v, want the JSON-RPC method-not-found error", err)
		}
	}

	var got []int32
	for msg, err := range client.Count(ctx, &pb.CountRequest{N: 3}).All() {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, msg.GetProgress())
	}
	if !slices.Equal(got, []int32{1, 2, 3}) {
		t.Errorf("streamed %v, want [1 2 3]", got)
	}
	for _, side := range sides {
		if n := c.get(side + " " + bridgetestv1connect.BridgeTestServiceCountProcedure); n != 1 {
			t.Errorf("%s stream interceptor ran %d times, want 1", side, n)
		}
	}

	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := client.Wait(cctx, &pb.WaitRequest{})
		done <- err
	}()
	select {
	case <-svc.waitin:
	case <-time.After(10 * time.Second):
		t.Fatal("the handler did not start")
	}
	cancel()
	select {
	case err := <-svc.waited:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the handler's context ended with %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the handler's context was not cancelled")
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the call did not return")
	}
}

// TestInProcess proves that a connect-go handler serves as MCP in process, through its own
// interceptors, once per call, with a complete connect.Request.
func TestInProcess(t *testing.T) {
	t.Parallel()
	svc, c := newService(), &calls{}
	client := serveMCP(t, func(s *runtime.Server) {
		bridgetestv1mcp.RegisterBridgeTestServiceConnectHandler(s, svc,
			connectmcp.WithHandlerOptions(connect.WithInterceptors(counter{c})), connectmcp.WithHeaders("X-Request-Id"))
	})
	check(t, client, svc, c, "handler")
}

// TestForward proves that a forwarding gateway calls a Connect backend over the network
// through the client interceptors, with the same metadata, deadline, cancellation and errors.
func TestForward(t *testing.T) {
	t.Parallel()
	svc, c := newService(), &calls{}
	path, h := bridgetestv1connect.NewBridgeTestServiceHandler(svc, connect.WithInterceptors(counter{c}))
	mux := http.NewServeMux()
	mux.Handle(path, h)
	backend := httptest.NewServer(mux)
	t.Cleanup(backend.Close)
	client := serveMCP(t, func(s *runtime.Server) {
		bridgetestv1mcp.ForwardBridgeTestServiceToConnect(s, backend.Client(), backend.URL,
			connectmcp.WithHeaders("X-Request-Id"), connectmcp.WithClientOptions(connect.WithInterceptors(counter{c})))
	})
	check(t, client, svc, c, "client", "handler")
}

// partial implements Echo only, leaving the other rpcs to connect-go's Unimplemented handler.
type partial struct {
	bridgetestv1connect.UnimplementedBridgeTestServiceHandler
}

func (partial) Echo(_ context.Context, req *connect.Request[pb.EchoRequest]) (*connect.Response[pb.EchoResponse], error) {
	return connect.NewResponse(&pb.EchoResponse{Text: req.Msg.GetText()}), nil
}

// TestUnimplementedLeftOut proves that the rpcs a connect-go implementation leaves to its
// embedded Unimplemented handler are not offered as tools.
func TestUnimplementedLeftOut(t *testing.T) {
	t.Parallel()
	srv := runtime.NewServer(runtime.Implementation{Name: "partial", Version: "1"}, runtime.WithLogger(slog.New(slog.DiscardHandler)))
	bridgetestv1mcp.RegisterBridgeTestServiceConnectHandler(srv, partial{})
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

// panicky is a connect-go implementation whose Echo panics.
type panicky struct {
	bridgetestv1connect.UnimplementedBridgeTestServiceHandler
}

func (panicky) Echo(context.Context, *connect.Request[pb.EchoRequest]) (*connect.Response[pb.EchoResponse], error) {
	panic("boom")
}

// TestHandlerPanic proves that a handler that panics in process fails its call, as over the
// network, and does not take the process down.
func TestHandlerPanic(t *testing.T) {
	t.Parallel()
	client := serveMCP(t, func(s *runtime.Server) { bridgetestv1mcp.RegisterBridgeTestServiceConnectHandler(s, panicky{}) })
	_, err := client.Echo(testCtx(t), &pb.EchoRequest{Text: "hi"})
	if err == nil {
		t.Fatal("a call whose handler panicked succeeded")
	}
	var te *runtime.ToolError
	if !errors.As(err, &te) {
		t.Errorf("%v, want a tool error", err)
	}
}

// TestReservedHeaders proves that WithHeaders refuses the headers the protocols reserve and
// the identity headers, which a caller could otherwise set.
func TestReservedHeaders(t *testing.T) {
	t.Parallel()
	for _, name := range []string{connectmcp.HeaderSubject, "protomcp-scope", "Connect-Timeout-Ms", "Grpc-Timeout", "Content-Type", "Te"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("WithHeaders(%q) was accepted", name)
				}
			}()
			connectmcp.NewClient(http.DefaultClient, "http://127.0.0.1", connectmcp.WithHeaders(name))
		}()
	}
}

package grpcmcp_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/protomcp/protomcp/grpcmcp"
	pb "github.com/protomcp/protomcp/grpcmcp/internal/gen/bridgetest/v1"
	"github.com/protomcp/protomcp/grpcmcp/internal/gen/bridgetest/v1/bridgetestv1mcp"
	"github.com/protomcp/protomcp/runtime"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
)

// backendEnv makes the test binary a gRPC backend process (see TestMain): it serves
// BridgeTestService on a loopback port, prints the address, and exits when stdin closes.
const backendEnv = "GRPCMCP_TEST_BACKEND"

func TestMain(m *testing.M) {
	if os.Getenv(backendEnv) == "1" {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		gs := grpc.NewServer()
		pb.RegisterBridgeTestServiceServer(gs, newService())
		go func() { _ = gs.Serve(lis) }()
		fmt.Println(lis.Addr().String())
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n') // until the test closes stdin
		gs.Stop()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// startBackend serves svc with grpc-go on loopback, through the counting interceptor.
func startBackend(t *testing.T, svc *service, c *calls) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer(grpc.ChainUnaryInterceptor(c.unary("backend", svc)), grpc.ChainStreamInterceptor(c.stream("backend")))
	pb.RegisterBridgeTestServiceServer(gs, svc)
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	return lis.Addr().String()
}

// startGateway serves, as MCP, the tools of BridgeTestService forwarded to the gRPC backend at
// addr, and returns its typed client.
func startGateway(t *testing.T, addr string, c *calls, clientOpts ...runtime.ClientOption) bridgetestv1mcp.BridgeTestServiceClient {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			c.add("client " + method)
			return invoker(ctx, method, req, reply, cc, opts...)
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cc.Close() })
	srv := runtime.NewServer(runtime.Implementation{Name: "gateway", Version: "1"}, runtime.WithLogger(slog.New(slog.DiscardHandler)))
	bridgetestv1mcp.ForwardBridgeTestServiceToGRPC(srv, cc, grpcmcp.WithHeaders("x-request-id"))
	hs := httptest.NewServer(identity(srv))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		hs.Close()
	})
	opts := append([]runtime.ClientOption{runtime.WithHeader("X-Request-Id", "req-1")}, clientOpts...)
	rc := runtime.NewClient(hs.URL, opts...)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = rc.Close(ctx)
	})
	return bridgetestv1mcp.NewBridgeTestServiceClient(rc)
}

// TestForward proves that a forwarding gateway calls the backend once per tool call through
// the connection's client interceptors and the backend's server interceptors, with the MCP
// request's metadata, the caller's deadline, its cancellation, and the backend's errors and
// details mapped as an in-process bridge maps them.
func TestForward(t *testing.T) {
	t.Parallel()
	svc, c := newService(), &calls{}
	client := startGateway(t, startBackend(t, svc, c), c, runtime.WithInterceptors(grpcmcp.PropagateDeadline()))
	ctx := testCtx(t)

	dctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	res, err := client.Echo(dctx, &pb.EchoRequest{Text: "hi"}, runtime.WithMeta("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"))
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"protomcp-subject=ada", "protomcp-scope=books:write", "x-request-id=req-1", "traceparent=00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"} {
		if !slices.Contains(res.GetMetadata(), want) {
			t.Errorf("backend metadata %q lacks %q", res.GetMetadata(), want)
		}
	}
	if !res.GetHasDeadline() || res.GetDeadlineMs() > 3000 || res.GetDeadlineMs() <= 0 {
		t.Errorf("backend deadline %v, %d ms; want within the caller's 3 s", res.GetHasDeadline(), res.GetDeadlineMs())
	}
	for _, key := range []string{"client " + pb.BridgeTestService_Echo_FullMethodName, "backend " + pb.BridgeTestService_Echo_FullMethodName} {
		if n := c.get(key); n != 1 {
			t.Errorf("%s ran %d times, want 1", key, n)
		}
	}

	_, err = client.Fail(ctx, &pb.FailRequest{Code: int32(codes.FailedPrecondition), Message: "shelf is full", Details: true})
	st := grpcmcp.StatusOf(err)
	if st.Code() != codes.FailedPrecondition || len(st.Details()) != 2 {
		t.Errorf("status %v, details %v; want FailedPrecondition with two details", st, st.Details())
	} else if _, ok := st.Details()[0].(*errdetails.BadRequest); !ok {
		t.Errorf("first detail %T, want *errdetails.BadRequest", st.Details()[0])
	}
	_, err = client.Fail(ctx, &pb.FailRequest{Code: int32(codes.Unimplemented)})
	if runtime.CodeOf(err) != runtime.CodeMethodNotFound {
		t.Errorf("Unimplemented: %v, want method not found", err)
	}

	var got []int32
	for msg, err := range client.Count(ctx, &pb.CountRequest{N: 4}).All() {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, msg.GetProgress())
	}
	if !slices.Equal(got, []int32{1, 2, 3, 4}) {
		t.Errorf("streamed %v, want [1 2 3 4]", got)
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
		t.Fatal("the backend's handler did not start")
	}
	cancel()
	select {
	case err := <-svc.waited:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the backend's context ended with %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the backend's context was not cancelled")
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the call did not return")
	}
}

// TestForwardToProcess proves forwarding to a gRPC backend in a separate process.
func TestForwardToProcess(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), backendEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = stdin.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	addrc := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		addrc <- strings.TrimSpace(line)
	}()
	var addr string
	select {
	case addr = <-addrc:
	case <-time.After(30 * time.Second):
		t.Fatal("the backend process did not start")
	}
	if addr == "" {
		t.Fatal("the backend process printed no address")
	}
	client := startGateway(t, addr, &calls{})
	ctx := testCtx(t)
	res, err := client.Echo(ctx, &pb.EchoRequest{Text: "across"})
	if err != nil {
		t.Fatal(err)
	}
	if res.GetText() != "across" || !slices.Contains(res.GetMetadata(), "protomcp-subject=ada") {
		t.Errorf("echo %q with metadata %q", res.GetText(), res.GetMetadata())
	}
	_, err = client.Fail(ctx, &pb.FailRequest{Code: int32(codes.NotFound), Message: "no such book"})
	if grpcmcp.CodeOf(err) != codes.NotFound || !strings.Contains(err.Error(), "NOT_FOUND: no such book") {
		t.Errorf("Fail: %v (%v), want NotFound", err, grpcmcp.CodeOf(err))
	}
}

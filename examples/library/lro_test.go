package library_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/longrunning/autogen/longrunningpb"
	"connectrpc.com/connect"
	"go.uber.org/goleak"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/protomcp/protomcp/connectmcp"
	libraryv1 "github.com/protomcp/protomcp/examples/library/gen/library/v1"
	"github.com/protomcp/protomcp/examples/library/gen/library/v1/libraryv1connect"
	"github.com/protomcp/protomcp/examples/library/gen/library/v1/libraryv1mcp"
	"github.com/protomcp/protomcp/grpcmcp"
	"github.com/protomcp/protomcp/runtime"
)

// jobs is the backend of an AIP-151 service whose ImportBooks returns an operation that is
// not done: GetOperation reports one more book imported (metadata that changes) on each poll,
// until the test finishes the operation; CancelOperation records the name it was given.
// The first book's title picks the operation's fate: "fail" ends in an error status; one
// that starts with "flaky" is Unavailable at its first two polls, then done; one that starts
// with "down" is always Unavailable.
type jobs struct {
	mu        sync.Mutex
	seen      map[string]map[string]bool // by bridge, the methods its interceptors saw
	polls     map[string]int
	finished  map[string]bool
	cancelled chan string
}

func newJobs() *jobs {
	return &jobs{polls: map[string]int{}, finished: map[string]bool{}, seen: map[string]map[string]bool{}, cancelled: make(chan string, 8)}
}

const jobTotal = 10

func jobMeta(imported int32) *anypb.Any {
	md, err := anypb.New(&libraryv1.ImportBooksMetadata{Imported: imported, Total: jobTotal})
	if err != nil {
		panic(err)
	}
	return md
}

// start is ImportBooks: an operation named after the first book, not done.
func (j *jobs) start(req *libraryv1.ImportBooksRequest) *longrunningpb.Operation {
	name := "imports/" + req.GetBooks()[0].GetTitle()
	return &longrunningpb.Operation{Name: name, Metadata: jobMeta(0)}
}

// saw records that the interceptors of bridge saw a call of method.
func (j *jobs) saw(bridge, method string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.seen[bridge] == nil {
		j.seen[bridge] = map[string]bool{}
	}
	j.seen[bridge][method] = true
}

// sawAll reports whether the interceptors of bridge saw every one of methods.
func (j *jobs) sawAll(bridge string, methods ...string) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, m := range methods {
		if !j.seen[bridge][m] {
			return false
		}
	}
	return true
}

// finish lets the operation name be done at its next poll.
func (j *jobs) finish(name string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.finished[name] = true
}

// pollsOf is how many times GetOperation was called for name.
func (j *jobs) pollsOf(name string) int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.polls[name]
}

func (j *jobs) get(name string) (*longrunningpb.Operation, error) {
	if !strings.HasPrefix(name, "imports/") {
		return nil, status.Errorf(codes.NotFound, "no operation %q", name)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.polls[name]++
	n := int32(min(j.polls[name], jobTotal-1))
	if strings.HasPrefix(name, "imports/flaky") && j.polls[name] > 2 {
		j.finished[name] = true
	}
	switch {
	case strings.HasPrefix(name, "imports/down") || strings.HasPrefix(name, "imports/flaky") && j.polls[name] <= 2:
		return nil, status.Errorf(codes.Unavailable, "the job store is restarting")
	case name == "imports/fail" && j.polls[name] >= 2:
		return &longrunningpb.Operation{Name: name, Done: true, Metadata: jobMeta(n),
			Result: &longrunningpb.Operation_Error{Error: &spb.Status{Code: int32(codes.FailedPrecondition), Message: "the shelf is full"}}}, nil
	case j.finished[name]:
		res, err := anypb.New(&libraryv1.ImportBooksResponse{Books: []*libraryv1.Book{{Id: 1, Title: strings.TrimPrefix(name, "imports/"), Author: "A", Available: true}}})
		if err != nil {
			return nil, err
		}
		return &longrunningpb.Operation{Name: name, Done: true, Metadata: jobMeta(jobTotal), Result: &longrunningpb.Operation_Response{Response: res}}, nil
	}
	return &longrunningpb.Operation{Name: name, Metadata: jobMeta(n)}, nil
}

func (j *jobs) cancel(name string) {
	j.cancelled <- name
}

// grpcJobs is jobs as grpc-go services: LibraryService (ImportBooks) and Operations.
type grpcJobs struct {
	libraryv1.UnimplementedLibraryServiceServer
	longrunningpb.UnimplementedOperationsServer
	j *jobs
}

func (g grpcJobs) ImportBooks(_ context.Context, req *libraryv1.ImportBooksRequest) (*longrunningpb.Operation, error) {
	return g.j.start(req), nil
}

func (g grpcJobs) GetOperation(_ context.Context, req *longrunningpb.GetOperationRequest) (*longrunningpb.Operation, error) {
	return g.j.get(req.GetName())
}

func (g grpcJobs) CancelOperation(_ context.Context, req *longrunningpb.CancelOperationRequest) (*emptypb.Empty, error) {
	g.j.cancel(req.GetName())
	return &emptypb.Empty{}, nil
}

// connectJobs is jobs as a connect-go LibraryService.
type connectJobs struct {
	libraryv1connect.UnimplementedLibraryServiceHandler
	j *jobs
}

func (c connectJobs) ImportBooks(_ context.Context, req *connect.Request[libraryv1.ImportBooksRequest]) (*connect.Response[longrunningpb.Operation], error) {
	return connect.NewResponse(c.j.start(req.Msg)), nil
}

// connectOperations serves jobs' google.longrunning.Operations with connect-go.
func connectOperations(j *jobs) http.Handler {
	mux := http.NewServeMux()
	mux.Handle(connectmcp.GetOperationProcedure, connect.NewUnaryHandler(connectmcp.GetOperationProcedure,
		func(_ context.Context, req *connect.Request[longrunningpb.GetOperationRequest]) (*connect.Response[longrunningpb.Operation], error) {
			op, err := j.get(req.Msg.GetName())
			if err != nil {
				return nil, connect.NewError(connect.Code(status.Code(err)), errors.New(status.Convert(err).Message()))
			}
			return connect.NewResponse(op), nil
		}))
	mux.Handle(connectmcp.CancelOperationProcedure, connect.NewUnaryHandler(connectmcp.CancelOperationProcedure,
		func(_ context.Context, req *connect.Request[longrunningpb.CancelOperationRequest]) (*connect.Response[emptypb.Empty], error) {
			j.cancel(req.Msg.GetName())
			return connect.NewResponse(&emptypb.Empty{}), nil
		}))
	return mux
}

// lroBridges are the four ways a LibraryService reaches MCP, each serving jobs and polling
// its Operations: forwarded to a grpc-go server on loopback, forwarded to a connect-go
// handler on httptest, and both in process with the WithOperations option.
func lroBridges(t *testing.T, j *jobs) map[string]func(*runtime.Server) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	libraryv1.RegisterLibraryServiceServer(gs, grpcJobs{j: j})
	longrunningpb.RegisterOperationsServer(gs, grpcJobs{j: j})
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			j.saw("forward gRPC", method)
			return invoker(ctx, method, req, reply, cc, opts...)
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cc.Close() })

	mux := http.NewServeMux()
	mux.Handle(libraryv1connect.NewLibraryServiceHandler(connectJobs{j: j}))
	mux.Handle("/google.longrunning.Operations/", connectOperations(j))
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)

	fast := 10 * time.Millisecond
	serverSaw := grpcmcp.WithUnaryInterceptors(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		j.saw("in-process gRPC", info.FullMethod)
		return handler(ctx, req)
	})
	clientSaw := connectmcp.WithClientOptions(connect.WithInterceptors(connect.UnaryInterceptorFunc(func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			j.saw("forward Connect", req.Spec().Procedure)
			return next(ctx, req)
		}
	})))
	return map[string]func(*runtime.Server){
		"forward gRPC": func(s *runtime.Server) {
			libraryv1mcp.ForwardLibraryServiceToGRPC(s, cc, grpcmcp.WithOperationPolling(fast, 4*fast))
		},
		"forward Connect": func(s *runtime.Server) {
			libraryv1mcp.ForwardLibraryServiceToConnect(s, hs.Client(), hs.URL, connectmcp.WithOperationPolling(fast, 4*fast), clientSaw)
		},
		"in-process gRPC": func(s *runtime.Server) {
			libraryv1mcp.RegisterLibraryServiceGRPCServer(s, grpcJobs{j: j}, grpcmcp.WithOperations(grpcJobs{j: j}), grpcmcp.WithOperationPolling(fast, 4*fast), serverSaw)
		},
		"in-process Connect": func(s *runtime.Server) {
			libraryv1mcp.RegisterLibraryServiceConnectHandler(s, connectJobs{j: j}, connectmcp.WithOperations(connectOperations(j)), connectmcp.WithOperationPolling(fast, 4*fast))
		},
	}
}

// lroClient is the generated MCP client of an MCP server (on httptest) that register fills.
func lroClient(t *testing.T, register func(*runtime.Server)) libraryv1mcp.LibraryServiceClient {
	url := gateway(t, register)
	rc := runtime.NewClient(url)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = rc.Close(ctx)
	})
	return libraryv1mcp.NewLibraryServiceClient(rc)
}

// waitUntil polls cond every 5 ms until it holds or ctx ends.
func waitUntil(ctx context.Context, cond func() bool) error {
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	return nil
}

func books(title string) *libraryv1.ImportBooksRequest {
	return &libraryv1.ImportBooksRequest{Books: []*libraryv1.CreateBookRequest{{Title: title, Author: "A"}}}
}

// TestLongRunningOperations proves that an rpc returning a google.longrunning.Operation that
// is not done (AIP-151) is a task tool over every bridge: the bridge polls
// google.longrunning.Operations/GetOperation until the operation is done, the task's
// metadata (spec 2025-11-25, Tasks) shows the operation's metadata as it changes and at the
// end, the result is the operation's response, an operation that ends in an error is the
// call's error with its code, and cancelling the task (tasks/cancel) calls CancelOperation;
// the bridge's interceptors see those calls.
// It leaves no goroutine behind, so it does not run in parallel.
func TestLongRunningOperations(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) }) // the first cleanup runs last

	j := newJobs()
	for name, register := range lroBridges(t, j) {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			client := lroClient(t, register)
			slug := strings.ReplaceAll(name, " ", "-")

			// Done after a few polls: intermediate metadata, then the response and the final one.
			h, err := client.StartImportBooks(ctx, books(slug))
			if err != nil {
				t.Fatalf("StartImportBooks: %v", err)
			}
			var seen *libraryv1.ImportBooksMetadata
			if err := waitUntil(ctx, func() bool {
				md, err := h.Metadata(ctx)
				seen = md
				return err == nil && md.GetImported() >= 1 && md.GetImported() < jobTotal
			}); err != nil {
				t.Fatalf("the task's metadata never showed the operation under way: last %v: %v", seen, err)
			}
			j.finish("imports/" + slug)
			res, err := h.Wait(ctx)
			if err != nil {
				t.Fatalf("Wait: %v", err)
			}
			if got := res.GetBooks(); len(got) != 1 || got[0].GetTitle() != slug {
				t.Errorf("the result is %v, want the operation's response", res)
			}
			want := &libraryv1.ImportBooksMetadata{Imported: jobTotal, Total: jobTotal}
			if md, err := h.Metadata(ctx); err != nil || !proto.Equal(md, want) {
				t.Errorf("the task's final metadata is %v, %v; want %v", md, err, want)
			}
			if n := j.pollsOf("imports/" + slug); n < 2 {
				t.Errorf("GetOperation was called %d times, want at least 2", n)
			}

			// An operation that ends in an error: the call's error, with its code.
			_, err = client.ImportBooks(ctx, books("fail"))
			if code := grpcmcp.CodeOf(err); code != codes.FailedPrecondition || !strings.Contains(fmt.Sprint(err), "the shelf is full") {
				t.Errorf("an operation that failed: %v (%v), want FailedPrecondition", err, code)
			}
			j.mu.Lock()
			delete(j.polls, "imports/fail")
			j.mu.Unlock()

			// Cancelling the task cancels the operation, once.
			forever := "imports/" + slug + "-forever"
			h, err = client.StartImportBooks(ctx, books(slug+"-forever"))
			if err != nil {
				t.Fatalf("StartImportBooks: %v", err)
			}
			if err := waitUntil(ctx, func() bool { return j.pollsOf(forever) >= 1 }); err != nil {
				t.Fatalf("the bridge never polled %s: %v", forever, err)
			}
			if err := h.Cancel(ctx); err != nil {
				t.Fatalf("Cancel: %v", err)
			}
			select {
			case got := <-j.cancelled:
				if got != forever {
					t.Errorf("CancelOperation(%q), want %q", got, forever)
				}
			case <-ctx.Done():
				t.Fatalf("CancelOperation was never called for %s", forever)
			}
			if _, err := h.Wait(ctx); err == nil {
				t.Errorf("Wait of a cancelled task: no error")
			}
			select {
			case got := <-j.cancelled:
				t.Errorf("CancelOperation(%q) again", got)
			default:
			}

			// The polls and the cancellation went through the bridge's interceptors: the
			// connection's client interceptors forwarding, the Server's in process.
			if name != "in-process Connect" && !j.sawAll(name, grpcmcp.GetOperationMethod, grpcmcp.CancelOperationMethod) {
				t.Errorf("the interceptors of %s did not see GetOperation and CancelOperation", name)
			}
		})
	}
}

// TestLongRunningOperationWithoutOperations proves that, in process with no Operations
// implementation, an operation that is not done is refused with an error that names the
// option to pass.
func TestLongRunningOperationWithoutOperations(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	j := newJobs()
	for name, register := range map[string]func(*runtime.Server){
		"gRPC":    func(s *runtime.Server) { libraryv1mcp.RegisterLibraryServiceGRPCServer(s, grpcJobs{j: j}) },
		"Connect": func(s *runtime.Server) { libraryv1mcp.RegisterLibraryServiceConnectHandler(s, connectJobs{j: j}) },
	} {
		client := lroClient(t, register)
		_, err := client.ImportBooks(ctx, books("orphan"))
		if code := grpcmcp.CodeOf(err); code != codes.FailedPrecondition || !strings.Contains(fmt.Sprint(err), "WithOperations") {
			t.Errorf("%s: an operation nobody polls: %v, want an error that names WithOperations", name, err)
		}
	}
}

// TestLongRunningOperationBackendWithoutOperations proves that a forwarded operation that is
// not done, from a backend that serves no google.longrunning.Operations, fails with
// FailedPrecondition naming GetOperation, not with the "no such tool" of Unimplemented.
func TestLongRunningOperationBackendWithoutOperations(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	j := newJobs()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	libraryv1.RegisterLibraryServiceServer(gs, grpcJobs{j: j})
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cc.Close() })
	mux := http.NewServeMux()
	mux.Handle(libraryv1connect.NewLibraryServiceHandler(connectJobs{j: j}))
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)

	for name, register := range map[string]func(*runtime.Server){
		"gRPC":    func(s *runtime.Server) { libraryv1mcp.ForwardLibraryServiceToGRPC(s, cc) },
		"Connect": func(s *runtime.Server) { libraryv1mcp.ForwardLibraryServiceToConnect(s, hs.Client(), hs.URL) },
	} {
		client := lroClient(t, register)
		_, err := client.ImportBooks(ctx, books("nowhere"))
		if code := grpcmcp.CodeOf(err); code != codes.FailedPrecondition || !strings.Contains(fmt.Sprint(err), "GetOperation") {
			t.Errorf("%s: an operation its backend cannot poll: %v (%v), want FailedPrecondition naming GetOperation", name, err, code)
		}
	}
}

// TestLongRunningOperationOptions proves that the bridges refuse, at registration, polling
// bounds that make no backoff and an Operations implementation of the wrong types.
func TestLongRunningOperationOptions(t *testing.T) {
	t.Parallel()
	panics := func(what string, f func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s: no panic", what)
			}
		}()
		f()
	}
	j := newJobs()
	s := func() *runtime.Server {
		srv := runtime.NewServer(runtime.Implementation{Name: "t", Version: "1"})
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(ctx)
		})
		return srv
	}
	panics("grpcmcp polling 0", func() {
		libraryv1mcp.RegisterLibraryServiceGRPCServer(s(), grpcJobs{j: j}, grpcmcp.WithOperationPolling(0, time.Second))
	})
	panics("grpcmcp polling max < initial", func() {
		libraryv1mcp.RegisterLibraryServiceGRPCServer(s(), grpcJobs{j: j}, grpcmcp.WithOperationPolling(time.Second, time.Millisecond))
	})
	panics("connectmcp polling max < initial", func() {
		libraryv1mcp.RegisterLibraryServiceConnectHandler(s(), connectJobs{j: j}, connectmcp.WithOperationPolling(time.Second, time.Millisecond))
	})
	panics("grpcmcp operations of the wrong type", func() {
		libraryv1mcp.RegisterLibraryServiceGRPCServer(s(), grpcJobs{j: j}, grpcmcp.WithOperations(connectJobs{j: j}))
	})
}

// TestLongRunningOperationTransientErrors proves that a poll that fails with Unavailable is
// repeated, over every bridge: an operation whose GetOperation is Unavailable twice, then
// done, completes; one whose GetOperation stays Unavailable fails with that error after
// lro.MaxPollFailures polls, not sooner and not never.
func TestLongRunningOperationTransientErrors(t *testing.T) {
	t.Parallel()
	j := newJobs()
	for name, register := range lroBridges(t, j) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := testCtx(t)
			client := lroClient(t, register)
			slug := strings.ReplaceAll(name, " ", "-")
			res, err := client.ImportBooks(ctx, books("flaky-"+slug))
			if err != nil {
				t.Fatalf("an operation whose polls failed twice with Unavailable: %v", err)
			}
			if got := res.GetBooks(); len(got) != 1 || got[0].GetTitle() != "flaky-"+slug {
				t.Errorf("the result is %v, want the operation's response", res)
			}
			if n := j.pollsOf("imports/flaky-" + slug); n != 3 {
				t.Errorf("GetOperation was called %d times, want 3 (two failures, then done)", n)
			}
			_, err = client.ImportBooks(ctx, books("down-"+slug))
			if code := grpcmcp.CodeOf(err); code != codes.Unavailable || !strings.Contains(fmt.Sprint(err), "restarting") {
				t.Errorf("an operation whose polls always fail: %v (%v), want Unavailable with the backend's message", err, code)
			}
			if n := j.pollsOf("imports/down-" + slug); n != 5 {
				t.Errorf("GetOperation was called %d times, want 5 (lro.MaxPollFailures)", n)
			}
		})
	}
}

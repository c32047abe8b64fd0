package library_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/protomcp/protomcp/connectmcp"
	libraryv1 "github.com/protomcp/protomcp/examples/library/gen/library/v1"
	"github.com/protomcp/protomcp/examples/library/gen/library/v1/libraryv1connect"
	"github.com/protomcp/protomcp/examples/library/gen/library/v1/libraryv1mcp"
	"github.com/protomcp/protomcp/runtime"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// binary is the server built once for every test (TestMain).
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "library")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "server")
	if out, err := exec.Command("go", "build", "-o", binary, "./server").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build ./server: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// server is a running library binary and what it logs.
type server struct {
	url  string
	addr string
	mu   sync.Mutex
	log  []string
}

// lines returns the log lines that contain every one of subs.
func (s *server) lines(subs ...string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
next:
	for _, l := range s.log {
		for _, sub := range subs {
			if !strings.Contains(l, sub) {
				continue next
			}
		}
		out = append(out, l)
	}
	return out
}

// waitLines waits (bounded) until the log has n lines with every one of subs: the server logs
// a call after answering it.
func (s *server) waitLines(t *testing.T, n int, subs ...string) []string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := s.lines(subs...)
		if len(got) >= n || time.Now().After(deadline) {
			return got
		}
		time.Sleep(20 * time.Millisecond)
	}
}

var servingURL = regexp.MustCompile(`msg=serving url=(\S+)`)

// start runs the server binary on a free loopback port with a new database.
func start(t *testing.T, args ...string) *server {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"-addr", "127.0.0.1:0", "-db", filepath.Join(t.TempDir(), "library.db")}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &server{}
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			s.mu.Lock()
			s.log = append(s.log, sc.Text())
			s.mu.Unlock()
			if m := servingURL.FindStringSubmatch(sc.Text()); m != nil {
				urls <- m[1]
			}
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	select {
	case s.url = <-urls:
	case <-time.After(30 * time.Second):
		t.Fatalf("the server did not start:\n%s", strings.Join(s.lines(), "\n"))
	}
	s.addr = strings.TrimPrefix(s.url, "http://")
	return s
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// requestIDKey carries the X-Request-Id that the clients send, so that a test finds the log
// line of each of its calls.
type requestIDKey struct{}

var ids atomic.Int64

func withID(ctx context.Context) (context.Context, string) {
	id := fmt.Sprintf("req-%d", ids.Add(1))
	return context.WithValue(ctx, requestIDKey{}, id), id
}

func idOf(ctx context.Context) string { s, _ := ctx.Value(requestIDKey{}).(string); return s }

// caller is one client of the library, on one protocol, with the answers of every rpc.
type caller struct {
	protocol string // as the server logs it
	list     func(context.Context, *libraryv1.ListBooksRequest) (*libraryv1.ListBooksResponse, error)
	get      func(context.Context, *libraryv1.GetBookRequest) (*libraryv1.Book, error)
	create   func(context.Context, *libraryv1.CreateBookRequest) (*libraryv1.Book, error)
	remove   func(context.Context, *libraryv1.DeleteBookRequest) (*libraryv1.DeleteBookResponse, error)
	export   func(context.Context) ([]*libraryv1.ExportBooksResponse, error)
	code     func(error) codes.Code
	details  func(error) []proto.Message
}

// tokenKey carries the bearer token that the clients send.
type tokenKeyType struct{}

var tokenKey = tokenKeyType{}

// grpcCaller is a real grpc-go client, on h2c.
func grpcCaller(t *testing.T, s *server) caller {
	cc, err := grpc.NewClient(s.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cc.Close() })
	outgoing := func(ctx context.Context) context.Context {
		ctx = metadata.AppendToOutgoingContext(ctx, "x-request-id", idOf(ctx))
		if tok, _ := ctx.Value(tokenKey).(string); tok != "" {
			ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+tok)
		}
		return ctx
	}
	invoke := func(ctx context.Context, proc string, req, res proto.Message) error {
		return cc.Invoke(outgoing(ctx), proc, req, res)
	}
	return caller{
		protocol: "grpc",
		list: func(ctx context.Context, r *libraryv1.ListBooksRequest) (*libraryv1.ListBooksResponse, error) {
			res := new(libraryv1.ListBooksResponse)
			return res, invoke(ctx, libraryv1connect.LibraryServiceListBooksProcedure, r, res)
		},
		get: func(ctx context.Context, r *libraryv1.GetBookRequest) (*libraryv1.Book, error) {
			res := new(libraryv1.Book)
			return res, invoke(ctx, libraryv1connect.LibraryServiceGetBookProcedure, r, res)
		},
		create: func(ctx context.Context, r *libraryv1.CreateBookRequest) (*libraryv1.Book, error) {
			res := new(libraryv1.Book)
			return res, invoke(ctx, libraryv1connect.LibraryServiceCreateBookProcedure, r, res)
		},
		remove: func(ctx context.Context, r *libraryv1.DeleteBookRequest) (*libraryv1.DeleteBookResponse, error) {
			res := new(libraryv1.DeleteBookResponse)
			return res, invoke(ctx, libraryv1connect.LibraryServiceDeleteBookProcedure, r, res)
		},
		export: func(ctx context.Context) ([]*libraryv1.ExportBooksResponse, error) {
			st, err := cc.NewStream(outgoing(ctx), &grpc.StreamDesc{ServerStreams: true}, libraryv1connect.LibraryServiceExportBooksProcedure)
			if err != nil {
				return nil, err
			}
			if err := st.SendMsg(&libraryv1.ExportBooksRequest{}); err != nil {
				return nil, err
			}
			if err := st.CloseSend(); err != nil {
				return nil, err
			}
			var out []*libraryv1.ExportBooksResponse
			for {
				m := new(libraryv1.ExportBooksResponse)
				if err := st.RecvMsg(m); errors.Is(err, io.EOF) {
					return out, nil
				} else if err != nil {
					return nil, err
				}
				out = append(out, m)
			}
		},
		code: func(err error) codes.Code { return status.Code(err) },
		details: func(err error) []proto.Message {
			var out []proto.Message
			for _, d := range status.Convert(err).Details() {
				if m, ok := d.(proto.Message); ok {
					out = append(out, m)
				}
			}
			return out
		},
	}
}

// connectCaller is a real connect-go client, speaking Connect, or gRPC-Web with
// connect.WithGRPCWeb.
func connectCaller(s *server, protocol string, opts ...connect.ClientOption) caller {
	c := libraryv1connect.NewLibraryServiceClient(http.DefaultClient, s.url, opts...)
	header := func(ctx context.Context, h http.Header) {
		h.Set("X-Request-Id", idOf(ctx))
		if tok, _ := ctx.Value(tokenKey).(string); tok != "" {
			h.Set("Authorization", "Bearer "+tok)
		}
	}
	return caller{
		protocol: protocol,
		list: func(ctx context.Context, r *libraryv1.ListBooksRequest) (*libraryv1.ListBooksResponse, error) {
			req := connect.NewRequest(r)
			header(ctx, req.Header())
			res, err := c.ListBooks(ctx, req)
			if err != nil {
				return nil, err
			}
			return res.Msg, nil
		},
		get: func(ctx context.Context, r *libraryv1.GetBookRequest) (*libraryv1.Book, error) {
			req := connect.NewRequest(r)
			header(ctx, req.Header())
			res, err := c.GetBook(ctx, req)
			if err != nil {
				return nil, err
			}
			return res.Msg, nil
		},
		create: func(ctx context.Context, r *libraryv1.CreateBookRequest) (*libraryv1.Book, error) {
			req := connect.NewRequest(r)
			header(ctx, req.Header())
			res, err := c.CreateBook(ctx, req)
			if err != nil {
				return nil, err
			}
			return res.Msg, nil
		},
		remove: func(ctx context.Context, r *libraryv1.DeleteBookRequest) (*libraryv1.DeleteBookResponse, error) {
			req := connect.NewRequest(r)
			header(ctx, req.Header())
			res, err := c.DeleteBook(ctx, req)
			if err != nil {
				return nil, err
			}
			return res.Msg, nil
		},
		export: func(ctx context.Context) ([]*libraryv1.ExportBooksResponse, error) {
			req := connect.NewRequest(&libraryv1.ExportBooksRequest{})
			header(ctx, req.Header())
			st, err := c.ExportBooks(ctx, req)
			if err != nil {
				return nil, err
			}
			defer st.Close()
			var out []*libraryv1.ExportBooksResponse
			for st.Receive() {
				out = append(out, st.Msg())
			}
			return out, st.Err()
		},
		code: func(err error) codes.Code { return codes.Code(connect.CodeOf(err)) },
		details: func(err error) []proto.Message {
			var ce *connect.Error
			if !errors.As(err, &ce) {
				return nil
			}
			var out []proto.Message
			for _, d := range ce.Details() {
				if m, err := d.Value(); err == nil {
					out = append(out, m)
				}
			}
			return out
		},
	}
}

// mcpCaller is protomcp's MCP client, through the generated typed client, sending its
// context's deadline (connectmcp.PropagateDeadline).
func mcpCaller(t *testing.T, s *server) (caller, *runtime.Client) {
	return mcpCallerAt(t, s.url+"/mcp", "mcp")
}

// mcpCallerAt is mcpCaller for the MCP server at url, whose calls the library logs with
// protocol.
func mcpCallerAt(t *testing.T, url, protocol string) (caller, *runtime.Client) {
	headers := runtime.InterceptorFunc(func(next runtime.CallFunc) runtime.CallFunc {
		return func(ctx context.Context, req *runtime.Request) (*runtime.Response, error) {
			if id := idOf(ctx); id != "" {
				req.Header = http.Header{"X-Request-Id": {id}}
				if tok, _ := ctx.Value(tokenKey).(string); tok != "" {
					req.Header.Set("Authorization", "Bearer "+tok)
				}
			}
			return next(ctx, req)
		}
	})
	rc := runtime.NewClient(url, runtime.WithInterceptors(headers, connectmcp.PropagateDeadline()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = rc.Close(ctx)
	})
	c := libraryv1mcp.NewLibraryServiceClient(rc)
	return caller{
		protocol: protocol,
		list: func(ctx context.Context, r *libraryv1.ListBooksRequest) (*libraryv1.ListBooksResponse, error) {
			return c.ListBooks(ctx, r)
		},
		get: func(ctx context.Context, r *libraryv1.GetBookRequest) (*libraryv1.Book, error) {
			return c.GetBook(ctx, r)
		},
		create: func(ctx context.Context, r *libraryv1.CreateBookRequest) (*libraryv1.Book, error) {
			return c.CreateBook(ctx, r)
		},
		remove: func(ctx context.Context, r *libraryv1.DeleteBookRequest) (*libraryv1.DeleteBookResponse, error) {
			return c.DeleteBook(ctx, r)
		},
		export: func(ctx context.Context) ([]*libraryv1.ExportBooksResponse, error) {
			var out []*libraryv1.ExportBooksResponse
			for m, err := range c.ExportBooks(ctx, &libraryv1.ExportBooksRequest{}).All() {
				if err != nil {
					return nil, err
				}
				out = append(out, m)
			}
			return out, nil
		},
		code: func(err error) codes.Code { return codes.Code(connectmcp.CodeOf(err)) },
		details: func(err error) []proto.Message {
			ce := connectmcp.ErrorOf(err)
			if ce == nil {
				return nil
			}
			var out []proto.Message
			for _, d := range ce.Details() {
				if m, err := d.Value(); err == nil {
					out = append(out, m)
				}
			}
			return out
		},
	}, rc
}

func callers(t *testing.T, s *server) []caller {
	m, _ := mcpCaller(t, s)
	return []caller{grpcCaller(t, s), connectCaller(s, "connect"), connectCaller(s, "grpcweb", connect.WithGRPCWeb()), m}
}

// TestIdenticalAnswers proves that a grpc-go client, a connect-go client (Connect and
// gRPC-Web) and protomcp's MCP client get the same answer to every read-only rpc of the one
// implementation, and that the server's interceptors run once per call on every protocol.
func TestIdenticalAnswers(t *testing.T) {
	t.Parallel()
	s := start(t)
	ctx := testCtx(t)
	type answer struct {
		name string
		msgs []proto.Message
	}
	var want []answer
	for i, c := range callers(t, s) {
		var got []answer
		record := func(name string, id string, err error, msgs ...proto.Message) {
			t.Helper()
			if err != nil {
				t.Fatalf("%s %s: %v", c.protocol, name, err)
			}
			got = append(got, answer{name, msgs})
			lines := s.waitLines(t, 1, "request_id="+id+" ")
			if len(lines) != 1 || !strings.Contains(lines[0], "protocol="+c.protocol+" ") {
				t.Errorf("%s %s: the interceptor logged %q, want one line with protocol=%s", c.protocol, name, lines, c.protocol)
			}
		}
		cctx, id := withID(ctx)
		all, err := c.list(cctx, &libraryv1.ListBooksRequest{})
		record("ListBooks", id, err, all)
		cctx, id = withID(ctx)
		some, err := c.list(cctx, &libraryv1.ListBooksRequest{Author: "Octavia E. Butler"})
		record("ListBooks(author)", id, err, some)
		cctx, id = withID(ctx)
		book, err := c.get(cctx, &libraryv1.GetBookRequest{Id: 3})
		record("GetBook", id, err, book)
		cctx, id = withID(ctx)
		export, err := c.export(cctx)
		msgs := make([]proto.Message, len(export))
		for j, m := range export {
			msgs[j] = m
		}
		record("ExportBooks", id, err, msgs...)
		if len(all.GetBooks()) != 5 || len(some.GetBooks()) != 2 || book.GetTitle() != "Kindred" || len(export) != 5 {
			t.Errorf("%s: %d books, %d by Butler, book 3 %q, %d exported; want the seeded catalogue", c.protocol, len(all.GetBooks()), len(some.GetBooks()), book.GetTitle(), len(export))
		}
		if i == 0 {
			want = got
			continue
		}
		for j := range want {
			if len(got[j].msgs) != len(want[j].msgs) {
				t.Errorf("%s %s: %d messages, grpc-go got %d", c.protocol, want[j].name, len(got[j].msgs), len(want[j].msgs))
				continue
			}
			for k := range want[j].msgs {
				if !proto.Equal(got[j].msgs[k], want[j].msgs[k]) {
					t.Errorf("%s %s: %v, grpc-go got %v", c.protocol, want[j].name, got[j].msgs[k], want[j].msgs[k])
				}
			}
		}
	}
}

// TestErrors proves that the service's errors reach every client with the same code and
// details: not found with ResourceInfo, invalid argument with BadRequest, and the auth
// interceptor's unauthenticated and permission denied, on every protocol.
func TestErrors(t *testing.T) {
	t.Parallel()
	s := start(t)
	ctx := testCtx(t)
	for _, c := range callers(t, s) {
		cctx, _ := withID(ctx)
		_, err := c.get(cctx, &libraryv1.GetBookRequest{Id: 99})
		if c.code(err) != codes.NotFound {
			t.Errorf("%s GetBook(99): %v, want NotFound", c.protocol, err)
		} else if d := c.details(err); len(d) != 1 || d[0].(*errdetails.ResourceInfo).GetResourceName() != "99" {
			t.Errorf("%s GetBook(99): details %v, want the ResourceInfo", c.protocol, d)
		}

		cctx, _ = withID(context.WithValue(ctx, tokenKey, "admin-token"))
		_, err = c.create(cctx, &libraryv1.CreateBookRequest{Year: 2000})
		if c.code(err) != codes.InvalidArgument {
			t.Errorf("%s CreateBook({}): %v, want InvalidArgument", c.protocol, err)
		} else if d := c.details(err); len(d) != 1 || len(d[0].(*errdetails.BadRequest).GetFieldViolations()) != 2 {
			t.Errorf("%s CreateBook({}): details %v, want a BadRequest with two field violations", c.protocol, d)
		}

		cctx, _ = withID(ctx)
		if _, err := c.remove(cctx, &libraryv1.DeleteBookRequest{Id: 1}); c.code(err) != codes.Unauthenticated {
			t.Errorf("%s DeleteBook without a token: %v, want Unauthenticated", c.protocol, err)
		}
		cctx, _ = withID(context.WithValue(ctx, tokenKey, "reader-token"))
		_, err = c.remove(cctx, &libraryv1.DeleteBookRequest{Id: 1})
		if c.code(err) != codes.PermissionDenied {
			t.Errorf("%s DeleteBook with a reader's token: %v, want PermissionDenied", c.protocol, err)
		} else if d := c.details(err); len(d) != 1 || d[0].(*errdetails.ErrorInfo).GetReason() != "MISSING_SCOPE" {
			t.Errorf("%s DeleteBook with a reader's token: details %v, want the ErrorInfo", c.protocol, d)
		}

		// With the scope: a book of its own is created, then deleted.
		cctx, _ = withID(context.WithValue(ctx, tokenKey, "admin-token"))
		b, err := c.create(cctx, &libraryv1.CreateBookRequest{Title: "Dawn", Author: "Octavia E. Butler", Year: 1987})
		if err != nil {
			t.Fatalf("%s CreateBook: %v", c.protocol, err)
		}
		cctx, _ = withID(context.WithValue(ctx, tokenKey, "admin-token"))
		if res, err := c.remove(cctx, &libraryv1.DeleteBookRequest{Id: b.GetId()}); err != nil || !res.GetDeleted() {
			t.Errorf("%s DeleteBook(%d) with the admin's token: %v, %v", c.protocol, b.GetId(), res, err)
		}
	}
}

// TestMCPDeadlineAndCancel proves that the deadline of an MCP client's call reaches the
// handler, and that cancelling an MCP call cancels the handler's context.
func TestMCPDeadlineAndCancel(t *testing.T) {
	t.Parallel()
	s := start(t, "-export-delay", "300ms")
	m, _ := mcpCaller(t, s)
	ctx := testCtx(t)

	dctx, cancel := context.WithTimeout(ctx, 4*time.Second)
	dctx, id := withID(dctx)
	_, err := m.get(dctx, &libraryv1.GetBookRequest{Id: 1})
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	lines := s.waitLines(t, 1, "request_id="+id+" ")
	ms := regexp.MustCompile(`deadline_ms=(\d+)`).FindStringSubmatch(strings.Join(lines, ""))
	var left int
	if ms != nil {
		fmt.Sscan(ms[1], &left)
	}
	if ms == nil || left <= 0 || left > 4000 {
		t.Errorf("the handler's deadline: %q, want within the MCP client's 4 s", lines)
	}

	cctx, cancel := context.WithCancel(ctx)
	cctx, id = withID(cctx)
	stream := func() error {
		_, err := m.export(cctx)
		return err
	}
	done := make(chan error, 1)
	go func() { done <- stream() }()
	if got := s.waitLines(t, 1, `msg="export started" request_id=`+id+" "); len(got) != 1 {
		t.Fatalf("the export did not start: %q", s.lines())
	}
	cancel() // before the first book, 300 ms after the start

	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled call did not return")
	}
	if got := s.waitLines(t, 1, `msg="export cancelled"`); len(got) != 1 {
		t.Errorf("the handler did not see its context cancelled: %q", s.lines())
	}
	if got := s.waitLines(t, 1, "request_id="+id+" ", "code=canceled"); len(got) != 1 {
		t.Errorf("the interceptor logged %q for the cancelled call, want code=canceled", s.lines("request_id="+id+" "))
	}
}

// TestReflectionAndHealth proves that the server answers gRPC server reflection and
// grpc.health.v1, to grpc-go's own clients.
func TestReflectionAndHealth(t *testing.T) {
	t.Parallel()
	s := start(t)
	ctx := testCtx(t)
	cc, err := grpc.NewClient(s.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	hres, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{Service: libraryv1connect.LibraryServiceName})
	if err != nil || hres.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("health: %v, %v; want SERVING", hres, err)
	}
	rs, err := reflectionpb.NewServerReflectionClient(cc).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := rs.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	res, err := rs.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, svc := range res.GetListServicesResponse().GetService() {
		names = append(names, svc.GetName())
	}
	if !strings.Contains(strings.Join(names, " "), libraryv1connect.LibraryServiceName) {
		t.Errorf("reflection lists %q, want %s", names, libraryv1connect.LibraryServiceName)
	}
	_ = rs.CloseSend()
}

// TestUnknownFields proves that a field the request does not have is refused the same way in
// JSON on every protocol: Connect's JSON and MCP's arguments both fail with invalid argument.
func TestUnknownFields(t *testing.T) {
	t.Parallel()
	s := start(t)
	ctx := testCtx(t)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url+libraryv1connect.LibraryServiceGetBookProcedure, strings.NewReader(`{"id":3,"idd":4}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), `"code":"invalid_argument"`) {
		t.Errorf("Connect JSON with an unknown field: %d %s, want 400 invalid_argument", res.StatusCode, body)
	}

	_, rc := mcpCaller(t, s)
	tr, err := rc.CallTool(ctx, "get_book", []byte(`{"id":3,"idd":4}`))
	if err != nil {
		t.Fatal(err)
	}
	if ce := connectmcp.ResultError(tr); ce == nil || ce.Code() != connect.CodeInvalidArgument || !strings.Contains(tr.Text(), "idd") {
		t.Errorf("MCP arguments with an unknown field: %v, %q; want invalid_argument naming the field", ce, tr.Text())
	}
}

package library_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/protomcp/protomcp/connectmcp"
	libraryv1 "github.com/protomcp/protomcp/examples/library/gen/library/v1"
	"github.com/protomcp/protomcp/examples/library/gen/library/v1/libraryv1mcp"
	"github.com/protomcp/protomcp/grpcmcp"
	"github.com/protomcp/protomcp/runtime"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
)

// gateway serves, at the returned URL, an MCP server whose tools register forwards.
func gateway(t *testing.T, register func(*runtime.Server)) string {
	t.Helper()
	srv := runtime.NewServer(runtime.Implementation{Name: "library-gateway", Version: "1"}, runtime.WithLogger(slog.New(slog.DiscardHandler)))
	register(srv)
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		hs.Close()
	})
	return hs.URL
}

// TestGateways proves that an MCP gateway in front of the library binary (a separate
// process), forwarding over gRPC with grpc-go (grpcmcp) or with connect-go (connectmcp) over
// Connect, gRPC and gRPC-Web, gives an
// MCP client the answers a grpc-go client gets directly, with the service's errors and
// details, the caller's token, deadline and cancellation.
func TestGateways(t *testing.T) {
	t.Parallel()
	s := start(t, "-export-delay", "200ms")
	cc, err := grpc.NewClient(s.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cc.Close() })
	viaGRPC := gateway(t, func(srv *runtime.Server) {
		libraryv1mcp.ForwardLibraryServiceToGRPC(srv, cc, grpcmcp.WithHeaders("authorization", "x-request-id"))
	})
	viaConnect := gateway(t, func(srv *runtime.Server) {
		libraryv1mcp.ForwardLibraryServiceToConnect(srv, http.DefaultClient, s.url, connectmcp.WithHeaders("Authorization", "X-Request-Id"))
	})
	// connect-go's client speaks gRPC too, over HTTP/2 without TLS, and gRPC-Web.
	var h2c http.Protocols
	h2c.SetUnencryptedHTTP2(true)
	h2cClient := &http.Client{Transport: &http.Transport{Protocols: &h2c}}
	t.Cleanup(h2cClient.CloseIdleConnections)
	viaConnectGRPC := gateway(t, func(srv *runtime.Server) {
		libraryv1mcp.ForwardLibraryServiceToConnect(srv, h2cClient, s.url, connectmcp.WithHeaders("Authorization", "X-Request-Id"),
			connectmcp.WithClientOptions(connect.WithGRPC()))
	})
	viaConnectGRPCWeb := gateway(t, func(srv *runtime.Server) {
		libraryv1mcp.ForwardLibraryServiceToConnect(srv, http.DefaultClient, s.url, connectmcp.WithHeaders("Authorization", "X-Request-Id"),
			connectmcp.WithClientOptions(connect.WithGRPCWeb()))
	})
	direct := grpcCaller(t, s)
	ctx := testCtx(t)
	wantList, err := direct.list(ctx, &libraryv1.ListBooksRequest{})
	if err != nil {
		t.Fatal(err)
	}
	wantExport, err := direct.export(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Each gateway, by the protocol the backend logs its calls with.
	gateways := []struct{ name, url, protocol string }{
		{"grpc-go", viaGRPC, "grpc"},
		{"connect-go, Connect", viaConnect, "connect"},
		{"connect-go, gRPC", viaConnectGRPC, "grpc"},
		{"connect-go, gRPC-Web", viaConnectGRPCWeb, "grpcweb"},
	}
	for _, g := range gateways {
		backend := g.name
		m, _ := mcpCallerAt(t, g.url, g.protocol)

		dctx, cancel := context.WithTimeout(ctx, 4*time.Second)
		dctx, id := withID(dctx)
		list, err := m.list(dctx, &libraryv1.ListBooksRequest{})
		cancel()
		if err != nil || !proto.Equal(list, wantList) {
			t.Errorf("via %s: ListBooks %v, %v; want what grpc-go gets", backend, list, err)
		}
		lines := s.waitLines(t, 1, "request_id="+id+" ")
		ms := regexp.MustCompile(`deadline_ms=(\d+)`).FindStringSubmatch(strings.Join(lines, ""))
		left := -1
		if ms != nil {
			left, _ = strconv.Atoi(ms[1])
		}
		if len(lines) != 1 || !strings.Contains(lines[0], "protocol="+g.protocol+" ") || left <= 0 || left > 4000 {
			t.Errorf("via %s: the backend logged %q, want one %s call within the MCP client's 4 s", backend, lines, g.protocol)
		}

		export, err := m.export(ctx)
		if err != nil || len(export) != len(wantExport) {
			t.Errorf("via %s: ExportBooks %d messages, %v; want %d", backend, len(export), err, len(wantExport))
		}
		for i := range export {
			if i < len(wantExport) && !proto.Equal(export[i], wantExport[i]) {
				t.Errorf("via %s: exported %v, grpc-go got %v", backend, export[i], wantExport[i])
			}
		}

		cctx, _ := withID(ctx)
		_, err = m.get(cctx, &libraryv1.GetBookRequest{Id: 99})
		if m.code(err) != codes.NotFound {
			t.Errorf("via %s: GetBook(99): %v, want NotFound", backend, err)
		} else if d := m.details(err); len(d) != 1 || d[0].(*errdetails.ResourceInfo).GetResourceName() != "99" {
			t.Errorf("via %s: GetBook(99) details %v", backend, d)
		}
		cctx, _ = withID(context.WithValue(ctx, tokenKey, "reader-token"))
		if _, err := m.remove(cctx, &libraryv1.DeleteBookRequest{Id: 1}); m.code(err) != codes.PermissionDenied {
			t.Errorf("via %s: DeleteBook with a reader's token: %v, want PermissionDenied", backend, err)
		}

		cctx, cancel = context.WithCancel(ctx)
		cctx, id = withID(cctx)
		done := make(chan error, 1)
		go func() {
			_, err := m.export(cctx)
			done <- err
		}()
		if got := s.waitLines(t, 1, `msg="export started" request_id=`+id+" "); len(got) != 1 {
			t.Fatalf("via %s: the export did not start: %q", backend, s.lines())
		}
		cancel() // the export takes a second: it is cut short

		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("via %s: the cancelled call did not return", backend)
		}
		if got := s.waitLines(t, 1, "request_id="+id+" ", "code=canceled"); len(got) != 1 {
			t.Errorf("via %s: the backend logged %q for the cancelled call, want code=canceled", backend, s.lines("request_id="+id+" "))
		}
	}
}

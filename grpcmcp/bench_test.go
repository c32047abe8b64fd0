package grpcmcp_test

import (
	"context"
	"log/slog"
	"net"
	"net/http/httptest"
	"testing"

	"github.com/protomcp/protomcp/grpcmcp"
	pb "github.com/protomcp/protomcp/grpcmcp/internal/gen/bridgetest/v1"
	"github.com/protomcp/protomcp/grpcmcp/internal/gen/bridgetest/v1/bridgetestv1mcp"
	"github.com/protomcp/protomcp/runtime"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// native is the Echo tool as a protomcp handler, with no bridge: the baseline.
type native struct {
	bridgetestv1mcp.UnimplementedBridgeTestServiceHandler
}

func (native) Echo(_ context.Context, req *pb.EchoRequest) (*pb.EchoResponse, error) {
	return &pb.EchoResponse{Text: req.GetText()}, nil
}

// plain is the grpc-go implementation of Echo with nothing else, for the benchmarks.
type plain struct {
	pb.UnimplementedBridgeTestServiceServer
}

func (plain) Echo(_ context.Context, req *pb.EchoRequest) (*pb.EchoResponse, error) {
	return &pb.EchoResponse{Text: req.GetText()}, nil
}

func pass(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	return h(ctx, req)
}

// benchMCP serves what register adds over loopback HTTP and returns a typed client.
func benchMCP(b *testing.B, register func(*runtime.Server)) bridgetestv1mcp.BridgeTestServiceClient {
	srv := runtime.NewServer(runtime.Implementation{Name: "bench", Version: "1"}, runtime.WithLogger(slog.New(slog.DiscardHandler)))
	register(srv)
	hs := httptest.NewServer(srv)
	b.Cleanup(hs.Close)
	c := runtime.NewClient(hs.URL)
	b.Cleanup(func() { _ = c.Close(context.Background()) })
	return bridgetestv1mcp.NewBridgeTestServiceClient(c)
}

// benchBackend serves plain with grpc-go on loopback and returns a connection to it.
func benchBackend(b *testing.B) *grpc.ClientConn {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	gs := grpc.NewServer(grpc.ChainUnaryInterceptor(pass))
	pb.RegisterBridgeTestServiceServer(gs, plain{})
	go func() { _ = gs.Serve(lis) }()
	b.Cleanup(gs.Stop)
	cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cc.Close() })
	return cc
}

// BenchmarkEcho is one Echo call: as a native protomcp tool, through the in-process bridge
// (one interceptor), through a forwarding gateway to a gRPC backend on loopback, and straight
// to that backend with grpc-go: what the bridge and the gateway cost.
func BenchmarkEcho(b *testing.B) {
	req := &pb.EchoRequest{Text: "hello"}
	run := func(b *testing.B, call func(context.Context, *pb.EchoRequest) (*pb.EchoResponse, error)) {
		ctx := context.Background()
		if _, err := call(ctx, req); err != nil { // warm up: the session, the connections
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			if _, err := call(ctx, req); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("mcp-native", func(b *testing.B) {
		c := benchMCP(b, func(s *runtime.Server) { bridgetestv1mcp.RegisterBridgeTestServiceHandler(s, native{}) })
		run(b, func(ctx context.Context, r *pb.EchoRequest) (*pb.EchoResponse, error) { return c.Echo(ctx, r) })
	})
	b.Run("mcp-bridge", func(b *testing.B) {
		c := benchMCP(b, func(s *runtime.Server) {
			bridgetestv1mcp.RegisterBridgeTestServiceGRPCServer(s, plain{}, grpcmcp.WithUnaryInterceptors(pass))
		})
		run(b, func(ctx context.Context, r *pb.EchoRequest) (*pb.EchoResponse, error) { return c.Echo(ctx, r) })
	})
	b.Run("mcp-gateway", func(b *testing.B) {
		cc := benchBackend(b)
		c := benchMCP(b, func(s *runtime.Server) { bridgetestv1mcp.ForwardBridgeTestServiceToGRPC(s, cc) })
		run(b, func(ctx context.Context, r *pb.EchoRequest) (*pb.EchoResponse, error) { return c.Echo(ctx, r) })
	})
	b.Run("grpc-direct", func(b *testing.B) {
		c := pb.NewBridgeTestServiceClient(benchBackend(b))
		run(b, func(ctx context.Context, r *pb.EchoRequest) (*pb.EchoResponse, error) { return c.Echo(ctx, r) })
	})
}

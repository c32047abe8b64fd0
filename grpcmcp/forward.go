package grpcmcp

import (
	"context"
	"errors"
	"io"

	"github.com/protomcp/protomcp/runtime"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// ForwardUnary returns the MCP handler method of the unary rpc fullMethod
// ("/pkg.Service/Method") that serves each call by calling the rpc on cc: protomcp as an MCP
// gateway in front of a running gRPC service. The call's outgoing metadata is what a bridged
// handler's incoming metadata would be (see the package doc: allowed headers, the verified
// identity, trace context), added to any the context already has; its deadline and
// cancellation are the MCP call's, through ctx. The interceptors of cc (grpc.WithChainUnaryInterceptor
// at grpc.NewClient) run as for any call on it. Give the generated Register function
// HandlerOption() of a Server, or ErrorInterceptor, for the backend's errors.
func ForwardUnary[Req, Res any](cc grpc.ClientConnInterface, fullMethod string, opts ...Option) func(context.Context, *Req) (*Res, error) {
	cfg := newConfig(opts)
	return func(ctx context.Context, req *Req) (*Res, error) {
		ctx, cancel := forwardContext(ctx, cfg)
		defer cancel()
		res := new(Res)
		if err := cc.Invoke(ctx, fullMethod, req, res, cfg.callOpts...); err != nil {
			return nil, err
		}
		return res, nil
	}
}

// ForwardServerStreaming returns the MCP handler method of the server-streaming rpc fullMethod
// that serves each call by calling the rpc on cc, as ForwardUnary does, sending each message
// the backend streams on as the tool's progress notification; the last is the result.
func ForwardServerStreaming[Req, Res any](cc grpc.ClientConnInterface, fullMethod string, opts ...Option) func(context.Context, *Req, *runtime.ServerStream[Res]) error {
	cfg := newConfig(opts)
	desc := &grpc.StreamDesc{StreamName: fullMethod, ServerStreams: true}
	return func(ctx context.Context, req *Req, out *runtime.ServerStream[Res]) error {
		ctx, cancelDeadline := forwardContext(ctx, cfg)
		defer cancelDeadline()
		ctx, cancel := context.WithCancel(ctx)
		defer cancel() // ends the backend's stream when the call ends early
		cs, err := cc.NewStream(ctx, desc, fullMethod, cfg.callOpts...)
		if err != nil {
			return err
		}
		if err := cs.SendMsg(req); err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		if err := cs.CloseSend(); err != nil {
			return err
		}
		for {
			msg := new(Res)
			if err := cs.RecvMsg(msg); err != nil {
				if errors.Is(err, io.EOF) {
					return nil
				}
				return err
			}
			if err := out.Send(msg); err != nil {
				return err
			}
		}
	}
}

// forwardContext returns the context of a forwarded call: the caller's deadline, and the MCP
// request's metadata as outgoing metadata.
func forwardContext(ctx context.Context, cfg config) (context.Context, context.CancelFunc) {
	ctx, cancel := withCallerDeadline(ctx)
	md := requestMetadata(ctx, cfg.headers)
	if out, ok := metadata.FromOutgoingContext(ctx); ok {
		md = metadata.Join(out, md)
	}
	return metadata.NewOutgoingContext(ctx, md), cancel
}

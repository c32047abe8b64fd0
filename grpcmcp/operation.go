package grpcmcp

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/protomcp/protomcp/internal/lro"
)

// The methods of google.longrunning.Operations that the bridge calls (AIP-151).
const (
	// GetOperationMethod is the full method that polls an operation that is not done.
	GetOperationMethod = lro.GetOperation
	// CancelOperationMethod is the full method called, once, when the MCP task is cancelled.
	CancelOperationMethod = lro.CancelOperation
)

// The default bounds of the wait between two polls of an operation (WithOperationPolling).
const (
	DefaultPollInitial = lro.DefaultPollInitial
	DefaultPollMax     = lro.DefaultPollMax
)

// An Operation is a google.longrunning.Operation as the bridge reads it: the getters of
// longrunningpb.Operation, so that this package needs no Go code of google/longrunning.
type Operation = lro.Operation

// protocol is how the waiting of internal/lro makes and reads this bridge's errors.
var protocol = &lro.Protocol{
	Name:           "grpcmcp",
	NewError:       func(code int32, err error) error { return status.Error(codes.Code(code), err.Error()) },
	Code:           func(err error) int32 { return int32(status.Code(err)) },
	StatusError:    status.ErrorProto,
	WithOperations: "grpcmcp.WithOperations",
}

// OperationsServer is the part of an implementation of google.longrunning.Operations that the
// bridge calls; longrunningpb.OperationsServer has it (GetReq is longrunningpb.GetOperationRequest,
// CancelReq longrunningpb.CancelOperationRequest, Op longrunningpb.Operation).
type OperationsServer[GetReq, CancelReq, Op any] interface {
	GetOperation(context.Context, *GetReq) (*Op, error)
	CancelOperation(context.Context, *CancelReq) (*emptypb.Empty, error)
}

// WithOperations names ops, the implementation of google.longrunning.Operations (a
// longrunningpb.OperationsServer) that a generated Register<Service>GRPCServer polls when an
// rpc returns an operation that is not done. Its calls run through the Server's unary
// interceptors, as FullMethod GetOperationMethod and CancelOperationMethod. Without it, such
// an operation is refused (FailedPrecondition, with a message that names this option).
// Forwarding ignores it: the backend's own Operations service, on the same connection, is
// polled.
func WithOperations(ops any) Option {
	return func(c *config) { c.ops = ops }
}

// WithOperationPolling sets the bounds of the wait between two polls of an operation that is
// not done: the first wait is initial, and each next one 1.5 times the last, at most max.
// The defaults are DefaultPollInitial and DefaultPollMax.
func WithOperationPolling(initial, max time.Duration) Option {
	return func(c *config) { c.pollInitial, c.pollMax = initial, max }
}

// ForwardOperation returns the MCP handler method of the unary rpc fullMethod that returns a
// google.longrunning.Operation (Op), forwarded to cc as ForwardUnary does: when the operation
// is not done, it polls GetOperationMethod on cc, with the same call options, metadata and
// deadline, until it is; when the MCP task is cancelled, it calls CancelOperationMethod once.
// The tool's result is the operation's response (Res); see Await.
func ForwardOperation[Req, Res, Op, GetReq, CancelReq any, PRes interface {
	*Res
	proto.Message
}, POp interface {
	*Op
	Operation
}, PGet interface {
	*GetReq
	proto.Message
}, PCancel interface {
	*CancelReq
	proto.Message
}](cc grpc.ClientConnInterface, fullMethod string, opts ...Option) func(context.Context, *Req) (*Res, error) {
	cfg := newConfig(opts)
	call := ForwardUnary[Req, Op](cc, fullMethod, opts...)
	ops := &lro.Poller[Op]{
		Get: func(ctx context.Context, name string) (*Op, error) {
			ctx, cancel := forwardContext(ctx, cfg)
			defer cancel()
			op := new(Op)
			if err := cc.Invoke(ctx, GetOperationMethod, lro.Named[GetReq, PGet](name), op, cfg.callOpts...); err != nil {
				return nil, err
			}
			return op, nil
		},
		Cancel: func(ctx context.Context, name string) error {
			ctx, cancel := forwardContext(ctx, cfg)
			defer cancel()
			return cc.Invoke(ctx, CancelOperationMethod, lro.Named[CancelReq, PCancel](name), new(emptypb.Empty), cfg.callOpts...)
		},
		Initial: cfg.pollInitial,
		Max:     cfg.pollMax,
	}
	return func(ctx context.Context, req *Req) (*Res, error) {
		op, err := call(ctx, req)
		if err != nil {
			return nil, err
		}
		return lro.Await[Res, Op, PRes, POp](ctx, op, ops, protocol)
	}
}

// UnaryOperation returns the MCP handler method of the unary rpc fullMethod that returns a
// google.longrunning.Operation (Op), served by h through the Server's unary interceptors as
// Unary does. When the operation is not done, it polls the Operations implementation given
// with WithOperations (asserted to an OperationsServer[GetReq, CancelReq, Op]) until it is;
// when the MCP task is cancelled, it calls its CancelOperation once. Without WithOperations,
// an operation that is not done is refused. It panics if the implementation given is not an
// OperationsServer of these types.
func UnaryOperation[Res, GetReq, CancelReq, Req, Op any, PRes interface {
	*Res
	proto.Message
}, POp interface {
	*Op
	Operation
}, PGet interface {
	*GetReq
	proto.Message
}, PCancel interface {
	*CancelReq
	proto.Message
}](s *Server, fullMethod string, h func(context.Context, *Req) (*Op, error)) func(context.Context, *Req) (*Res, error) {
	call := Unary(s, fullMethod, h)
	ops := &lro.Poller[Op]{Initial: s.cfg.pollInitial, Max: s.cfg.pollMax}
	if s.cfg.ops != nil {
		impl, ok := s.cfg.ops.(OperationsServer[GetReq, CancelReq, Op])
		if !ok {
			panic(fmt.Sprintf("grpcmcp: the Operations implementation %T has no GetOperation(context.Context, %T) (%T, error) and CancelOperation(context.Context, %T) (*emptypb.Empty, error)", s.cfg.ops, new(GetReq), new(Op), new(CancelReq)))
		}
		get := Unary(&Server{impl: impl, cfg: s.cfg, unary: s.unary}, GetOperationMethod, impl.GetOperation)
		cancel := Unary(&Server{impl: impl, cfg: s.cfg, unary: s.unary}, CancelOperationMethod, impl.CancelOperation)
		ops.Get = func(ctx context.Context, name string) (*Op, error) {
			return get(ctx, lro.Named[GetReq, PGet](name))
		}
		ops.Cancel = func(ctx context.Context, name string) error {
			_, err := cancel(ctx, lro.Named[CancelReq, PCancel](name))
			return err
		}
	}
	return func(ctx context.Context, req *Req) (*Res, error) {
		op, err := call(ctx, req)
		if err != nil {
			return nil, err
		}
		return lro.Await[Res, Op, PRes, POp](ctx, op, ops, protocol)
	}
}

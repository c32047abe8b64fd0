package grpcmcp

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/protomcp/protomcp/runtime"
)

// The methods of google.longrunning.Operations that the bridge calls (AIP-151).
const (
	// GetOperationMethod is the full method that polls an operation that is not done.
	GetOperationMethod = "/google.longrunning.Operations/GetOperation"
	// CancelOperationMethod is the full method called, once, when the MCP task is cancelled.
	CancelOperationMethod = "/google.longrunning.Operations/CancelOperation"
)

// The default bounds of the wait between two polls of an operation (WithOperationPolling),
// and the time CancelOperation is given once the task's context has ended.
const (
	DefaultPollInitial = 100 * time.Millisecond
	DefaultPollMax     = 5 * time.Second
	cancelTimeout      = 5 * time.Second
	pollFactor         = 1.5
)

// An Operation is a google.longrunning.Operation as the bridge reads it: the getters of
// longrunningpb.Operation, so that this package needs no Go code of google/longrunning.
type Operation interface {
	proto.Message
	GetName() string
	GetDone() bool
	GetError() *spb.Status
	GetMetadata() *anypb.Any
	GetResponse() *anypb.Any
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

// operations gets and cancels operations by name: the backend's Operations service, or the
// in-process implementation.
type operations[Op any] struct {
	get    func(ctx context.Context, name string) (*Op, error)
	cancel func(ctx context.Context, name string) error
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
	ops := &operations[Op]{
		get: func(ctx context.Context, name string) (*Op, error) {
			ctx, cancel := forwardContext(ctx, cfg)
			defer cancel()
			op := new(Op)
			if err := cc.Invoke(ctx, GetOperationMethod, named[GetReq, PGet](name), op, cfg.callOpts...); err != nil {
				return nil, err
			}
			return op, nil
		},
		cancel: func(ctx context.Context, name string) error {
			ctx, cancel := forwardContext(ctx, cfg)
			defer cancel()
			return cc.Invoke(ctx, CancelOperationMethod, named[CancelReq, PCancel](name), new(emptypb.Empty), cfg.callOpts...)
		},
	}
	return func(ctx context.Context, req *Req) (*Res, error) {
		op, err := call(ctx, req)
		if err != nil {
			return nil, err
		}
		return awaitOperation[Res, Op, PRes, POp](ctx, op, ops, cfg)
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
	var ops *operations[Op]
	if s.cfg.ops != nil {
		impl, ok := s.cfg.ops.(OperationsServer[GetReq, CancelReq, Op])
		if !ok {
			panic(fmt.Sprintf("grpcmcp: the Operations implementation %T has no GetOperation(context.Context, %T) (%T, error) and CancelOperation(context.Context, %T) (*emptypb.Empty, error)", s.cfg.ops, new(GetReq), new(Op), new(CancelReq)))
		}
		get := Unary(&Server{impl: impl, cfg: s.cfg, unary: s.unary}, GetOperationMethod, impl.GetOperation)
		cancel := Unary(&Server{impl: impl, cfg: s.cfg, unary: s.unary}, CancelOperationMethod, impl.CancelOperation)
		ops = &operations[Op]{
			get: func(ctx context.Context, name string) (*Op, error) {
				return get(ctx, named[GetReq, PGet](name))
			},
			cancel: func(ctx context.Context, name string) error {
				_, err := cancel(ctx, named[CancelReq, PCancel](name))
				return err
			},
		}
	}
	return func(ctx context.Context, req *Req) (*Res, error) {
		op, err := call(ctx, req)
		if err != nil {
			return nil, err
		}
		return awaitOperation[Res, Op, PRes, POp](ctx, op, ops, s.cfg)
	}
}

// named returns a new M (GetOperationRequest or CancelOperationRequest) with its name field
// set to name.
func named[M any, PM interface {
	*M
	proto.Message
}](name string) *M {
	m := PM(new(M))
	r := m.ProtoReflect()
	if fd := r.Descriptor().Fields().ByName("name"); fd != nil && fd.Kind() == protoreflect.StringKind {
		r.Set(fd, protoreflect.ValueOfString(name))
	}
	return (*M)(m)
}

// awaitOperation turns op into the tool's outcome (AIP-151): while it is not done, it polls
// ops with a bounded backoff, publishing each new metadata as the task's
// (runtime.Caller.SetTaskMetadata); once done, its error is the call's, and its response the
// result. When ctx ends first, it cancels the operation, best effort, and returns ctx's error.
func awaitOperation[Res, Op any, PRes interface {
	*Res
	proto.Message
}, POp interface {
	*Op
	Operation
}](ctx context.Context, op *Op, ops *operations[Op], cfg config) (*Res, error) {
	cur := POp(op)
	var published *anypb.Any
	publish := func() error {
		md := cur.GetMetadata()
		if md.GetTypeUrl() == "" || (published != nil && proto.Equal(md, published)) {
			return nil
		}
		if err := runtime.CallerFrom(ctx).SetTaskMetadata(ctx, md); err != nil {
			return status.Errorf(codes.Internal, "operation %q: %v", cur.GetName(), err)
		}
		published = md
		return nil
	}
	wait := cfg.pollInitial
	for !cur.GetDone() {
		if ops == nil {
			return nil, status.Errorf(codes.FailedPrecondition, "operation %q is not done, and no google.longrunning.Operations implementation polls it: pass grpcmcp.WithOperations to the Register function", cur.GetName())
		}
		if err := publish(); err != nil {
			return nil, err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			cancelOperation(ctx, ops, cur.GetName())
			return nil, ctx.Err()
		case <-t.C:
		}
		wait = min(time.Duration(float64(wait)*pollFactor), cfg.pollMax)
		next, err := ops.get(ctx, cur.GetName())
		if err != nil {
			if ctx.Err() != nil {
				cancelOperation(ctx, ops, cur.GetName())
				return nil, ctx.Err()
			}
			if status.Code(err) == codes.Unimplemented {
				// Not the tool's Unimplemented, which the error mapping would make "no such tool".
				return nil, status.Errorf(codes.FailedPrecondition, "operation %q is not done, and its service does not serve %s: %v", cur.GetName(), GetOperationMethod, err)
			}
			return nil, err
		}
		cur = POp(next)
	}
	if e := cur.GetError(); e != nil {
		return nil, status.ErrorProto(e)
	}
	if err := publish(); err != nil {
		return nil, err
	}
	res := PRes(new(Res))
	if err := cur.GetResponse().UnmarshalTo(res); err != nil {
		return nil, status.Errorf(codes.Internal, "operation %q: %v", cur.GetName(), err)
	}
	return (*Res)(res), nil
}

// cancelOperation calls CancelOperation for name once, under a timeout of its own, since ctx
// (the cancelled task's) has ended. It is best effort: an error is logged, at debug level for
// Unimplemented (AIP-151 lets a service not support cancellation).
func cancelOperation[Op any](ctx context.Context, ops *operations[Op], name string) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelTimeout)
	defer cancel()
	err := ops.cancel(cctx, name)
	switch {
	case err == nil:
	case status.Code(err) == codes.Unimplemented:
		slog.DebugContext(cctx, "grpcmcp: the Operations service cannot cancel an operation", "operation", name, "error", err)
	default:
		slog.WarnContext(cctx, "grpcmcp: cancel the operation of a cancelled task", "operation", name, "error", err)
	}
}

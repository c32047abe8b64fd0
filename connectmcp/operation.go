package connectmcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"connectrpc.com/connect"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/protomcp/protomcp/runtime"
)

// The procedures of google.longrunning.Operations that the bridge calls (AIP-151).
const (
	// GetOperationProcedure polls an operation that is not done.
	GetOperationProcedure = "/google.longrunning.Operations/GetOperation"
	// CancelOperationProcedure is called, once, when the MCP task is cancelled.
	CancelOperationProcedure = "/google.longrunning.Operations/CancelOperation"
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

// WithOperations gives a generated Register<Service>ConnectHandler h, the http.Handler that
// serves google.longrunning.Operations (GetOperationProcedure and CancelOperationProcedure;
// what protoc-gen-connect-go's NewOperationsHandler returns, or connect.NewUnaryHandlers on a
// mux), which it calls in memory, as it calls the service, to poll an operation that an rpc
// returns not done. Without it, such an operation is refused (CodeFailedPrecondition, with a
// message that names this option). Forwarding (NewClient) ignores it: the backend's own
// Operations service, at the same base URL, is polled.
func WithOperations(h http.Handler) Option {
	return func(c *config) { c.ops = h }
}

// WithOperationPolling sets the bounds of the wait between two polls of an operation that is
// not done: the first wait is initial, and each next one 1.5 times the last, at most max.
// The defaults are DefaultPollInitial and DefaultPollMax.
func WithOperationPolling(initial, max time.Duration) Option {
	return func(c *config) { c.pollInitial, c.pollMax = initial, max }
}

// UnaryOperation returns the MCP handler method of the unary procedure that returns a
// google.longrunning.Operation (Op), called through c as Unary does. When the operation is
// not done, it polls GetOperationProcedure with the same client machinery (headers,
// deadline, interceptors) until it is: on the backend at c's base URL when c forwards
// (NewClient), on the handler given with WithOperations when c serves in memory
// (NewHandlerClient), and refuses the operation when there is none. Each new metadata of the
// operation becomes the task's (runtime.Caller.SetTaskMetadata); once done, its error is the
// call's and its response (Res) the result. When the MCP task is cancelled, it calls
// CancelOperationProcedure once, best effort, and returns the context's error.
func UnaryOperation[Req, Res, Op, GetReq, CancelReq any, PRes interface {
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
}](c *Client, procedure string) func(context.Context, *Req) (*Res, error) {
	call := Unary[Req, Op](c, procedure)
	var get func(context.Context, *GetReq) (*Op, error)
	var cancel func(context.Context, *CancelReq) (*emptypb.Empty, error)
	if c.ops != nil {
		get = Unary[GetReq, Op](c.ops, GetOperationProcedure)
		cancel = Unary[CancelReq, emptypb.Empty](c.ops, CancelOperationProcedure)
	}
	return func(ctx context.Context, req *Req) (*Res, error) {
		op, err := call(ctx, req)
		if err != nil {
			return nil, err
		}
		cur := POp(op)
		var published *anypb.Any
		publish := func() error {
			md := cur.GetMetadata()
			if md.GetTypeUrl() == "" || (published != nil && proto.Equal(md, published)) {
				return nil
			}
			if err := runtime.CallerFrom(ctx).SetTaskMetadata(ctx, md); err != nil {
				return connect.NewError(connect.CodeInternal, fmt.Errorf("operation %q: %w", cur.GetName(), err))
			}
			published = md
			return nil
		}
		cancelOp := func() {
			cctx, stop := context.WithTimeout(context.WithoutCancel(ctx), cancelTimeout)
			defer stop()
			_, err := cancel(cctx, named[CancelReq, PCancel](cur.GetName()))
			switch {
			case err == nil:
			case connect.CodeOf(err) == connect.CodeUnimplemented:
				slog.DebugContext(cctx, "connectmcp: the Operations service cannot cancel an operation", "operation", cur.GetName(), "error", err)
			default:
				slog.WarnContext(cctx, "connectmcp: cancel the operation of a cancelled task", "operation", cur.GetName(), "error", err)
			}
		}
		wait := c.cfg.pollInitial
		for !cur.GetDone() {
			if get == nil {
				return nil, connect.NewError(connect.CodeFailedPrecondition, fmt.Errorf("operation %q is not done, and no google.longrunning.Operations handler polls it: pass connectmcp.WithOperations to the Register function", cur.GetName()))
			}
			if err := publish(); err != nil {
				return nil, err
			}
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				cancelOp()
				return nil, ctx.Err()
			case <-t.C:
			}
			wait = min(time.Duration(float64(wait)*pollFactor), c.cfg.pollMax)
			next, err := get(ctx, named[GetReq, PGet](cur.GetName()))
			if err != nil {
				if ctx.Err() != nil {
					cancelOp()
					return nil, ctx.Err()
				}
				if connect.CodeOf(err) == connect.CodeUnimplemented {
					// Not the tool's Unimplemented, which the error mapping would make "no such tool".
					return nil, connect.NewError(connect.CodeFailedPrecondition, fmt.Errorf("operation %q is not done, and its service does not serve %s: %w", cur.GetName(), GetOperationProcedure, err))
				}
				return nil, err
			}
			cur = POp(next)
		}
		if e := cur.GetError(); e != nil {
			return nil, operationError(e)
		}
		if err := publish(); err != nil {
			return nil, err
		}
		res := PRes(new(Res))
		if err := cur.GetResponse().UnmarshalTo(res); err != nil {
			return nil, connect.NewError(connect.CodeInternal, fmt.Errorf("operation %q: %w", cur.GetName(), err))
		}
		return (*Res)(res), nil
	}
}

// operationError is the *connect.Error of an operation's error status, with its details.
func operationError(s *spb.Status) error {
	e := connect.NewError(connect.Code(s.GetCode()), errors.New(s.GetMessage()))
	for _, d := range s.GetDetails() {
		if ed, err := connect.NewErrorDetail(d); err == nil {
			e.AddDetail(ed)
		}
	}
	return e
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

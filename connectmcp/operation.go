package connectmcp

import (
	"context"
	"errors"
	"net/http"
	"time"

	"connectrpc.com/connect"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/protomcp/protomcp/internal/lro"
)

// The procedures of google.longrunning.Operations that the bridge calls (AIP-151).
const (
	// GetOperationProcedure polls an operation that is not done.
	GetOperationProcedure = lro.GetOperation
	// CancelOperationProcedure is called, once, when the MCP task is cancelled.
	CancelOperationProcedure = lro.CancelOperation
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
	Name:           "connectmcp",
	NewError:       func(code int32, err error) error { return connect.NewError(connect.Code(code), err) },
	Code:           func(err error) int32 { return int32(connect.CodeOf(err)) },
	StatusError:    operationError,
	WithOperations: "connectmcp.WithOperations",
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
	ops := &lro.Poller[Op]{Initial: c.cfg.pollInitial, Max: c.cfg.pollMax}
	if c.ops != nil {
		get := Unary[GetReq, Op](c.ops, GetOperationProcedure)
		cancel := Unary[CancelReq, emptypb.Empty](c.ops, CancelOperationProcedure)
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

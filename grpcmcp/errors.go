package grpcmcp

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/protomcp/protomcp/internal/rpcstatus"
	"github.com/protomcp/protomcp/runtime"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
)

// The _meta keys of the bridge's tool results.
const (
	// MetaStatus holds, in the _meta of a bridged tool's error result, the gRPC status as
	// the protojson of a google.rpc.Status: its code (a number), message and details. CodeOf
	// and StatusOf read it.
	MetaStatus = "protomcp/grpc-status"
	// MetaTimeout holds, in a tools/call request's _meta, the caller's time left in
	// milliseconds (a JSON number): the bridged handler's deadline is shortened to it, as
	// gRPC's grpc-timeout header does. PropagateDeadline sends it.
	MetaTimeout = "protomcp/timeout-ms"
)

// ErrorInterceptor returns the server interceptor that turns the errors of bridged (and
// forwarded) handlers into MCP outcomes, as the table in docs/grpc.md says:
//   - an error of a cancelled call is left to the runtime, which sends no answer (spec
//     2025-11-25, Utilities, Cancellation); one of a call past the server's handler timeout
//     is a DeadlineExceeded tool error;
//   - a *runtime.Error stays the JSON-RPC error it is;
//   - Unimplemented becomes the JSON-RPC error of a tool that is not implemented, as the
//     generated Unimplemented handlers return;
//   - arguments that could not be decoded become InvalidArgument;
//   - every other error, a gRPC status or not (which gRPC reports as Unknown), becomes a tool
//     error (isError, spec 2025-11-25, Server Features, Tools, Error Handling): its text names
//     the code, the message and the details a model can act on, and its _meta holds the
//     status under MetaStatus.
//
// Server.HandlerOption gives it to a Register function; a Server that forwards to a backend
// passes it the same way.
func ErrorInterceptor() runtime.Interceptor {
	return runtime.InterceptorFunc(func(next runtime.CallFunc) runtime.CallFunc {
		return func(ctx context.Context, req *runtime.Request) (*runtime.Response, error) {
			resp, err := next(ctx, req)
			if err == nil || req.Method != "tools/call" {
				return resp, err
			}
			if cerr := ctx.Err(); cerr != nil {
				if errors.Is(cerr, context.DeadlineExceeded) {
					// The server's handler timeout: the model may retry with less to do.
					return &runtime.Response{Result: StatusResult(status.New(codes.DeadlineExceeded, "the call ran out of time: "+err.Error()))}, nil
				}
				return resp, err // cancelled: no answer
			}
			var rpcErr *runtime.Error
			if errors.As(err, &rpcErr) {
				return resp, err
			}
			var st *status.Status
			switch {
			case req.Message == nil:
				// The runtime refused the arguments before the handler ran.
				st = status.New(codes.InvalidArgument, err.Error())
			default:
				st = status.Convert(err)
				if _, ok := status.FromError(err); !ok {
					st = status.New(codes.Unknown, err.Error())
				}
			}
			if st.Code() == codes.Unimplemented {
				return nil, runtime.Unimplemented(req.Name)
			}
			return &runtime.Response{Result: StatusResult(st)}, nil
		}
	})
}

// StatusResult returns the tool error result of st (see ErrorInterceptor): a text a model can
// read, and the status in _meta under MetaStatus. st must not be OK.
func StatusResult(st *status.Status) *runtime.CallToolResult {
	raw, err := protojson.Marshal(st.Proto())
	if err != nil {
		// A detail of a type this binary does not link: the code and message still go.
		raw, _ = protojson.Marshal(status.New(st.Code(), st.Message()).Proto())
	}
	return &runtime.CallToolResult{
		IsError: true,
		Content: []runtime.Content{runtime.TextContent(StatusText(st))},
		Meta:    map[string]any{MetaStatus: json.RawMessage(raw)},
	}
}

// StatusText describes st for a model: "NOT_FOUND: book 7 does not exist", then one line per
// detail it can act on (a field to fix, when to retry, what is missing).
func StatusText(st *status.Status) string {
	return rpcstatus.Text(int32(st.Code()), st.Message(), st.Details())
}

// StatusOf returns the gRPC status of an error a protomcp client returned for a bridged tool:
//   - nil: nil (OK);
//   - a tool error (*runtime.ToolError) with MetaStatus: that status, details included;
//   - another tool error: Unknown, with its text;
//   - a JSON-RPC error: the code of its kind (method not found: Unimplemented; invalid
//     params: InvalidArgument; resource not found: NotFound; a request cancelled or timed
//     out: Canceled or DeadlineExceeded; unavailable: Unavailable; internal: Internal;
//     others Unknown), with its message;
//   - a context error: Canceled or DeadlineExceeded;
//   - any other error (a transport failure): Unavailable.
func StatusOf(err error) *status.Status {
	if err == nil {
		return nil
	}
	var te *runtime.ToolError
	if errors.As(err, &te) {
		if st := metaStatus(te.Result); st != nil {
			return st
		}
		return status.New(codes.Unknown, te.Result.Text())
	}
	switch {
	case errors.Is(err, context.Canceled):
		return status.New(codes.Canceled, err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		return status.New(codes.DeadlineExceeded, err.Error())
	}
	var rpcErr *runtime.Error
	if errors.As(err, &rpcErr) {
		return status.New(rpcCode(rpcErr.Code), rpcErr.Message)
	}
	return status.New(codes.Unavailable, err.Error())
}

// CodeOf returns the gRPC code of an error a protomcp client returned for a bridged tool, as
// StatusOf reads it: codes.OK for nil.
func CodeOf(err error) codes.Code {
	return StatusOf(err).Code()
}

// rpcCode maps a JSON-RPC error code to the gRPC code of the same kind.
func rpcCode(c runtime.Code) codes.Code {
	switch c {
	case runtime.CodeMethodNotFound:
		return codes.Unimplemented
	case runtime.CodeInvalidParams, runtime.CodeParseError, runtime.CodeInvalidRequest:
		return codes.InvalidArgument
	case runtime.CodeInternalError:
		return codes.Internal
	case runtime.CodeResourceNotFound:
		return codes.NotFound
	case runtime.CodeRequestCancelled:
		return codes.Canceled
	case runtime.CodeDeadlineExceeded:
		return codes.DeadlineExceeded
	case runtime.CodeUnavailable:
		return codes.Unavailable
	}
	return codes.Unknown
}

// ResultStatus returns the gRPC status of a tools/call result that a raw call
// (runtime.Client.CallTool) returned: nil when it is not an error, the status in its _meta
// (MetaStatus) when it has one, else Unknown with its text.
func ResultStatus(r *runtime.CallToolResult) *status.Status {
	if r == nil || !r.IsError {
		return nil
	}
	if st := metaStatus(r); st != nil {
		return st
	}
	return status.New(codes.Unknown, r.Text())
}

// metaStatus reads MetaStatus from a result's _meta, or returns nil.
func metaStatus(r *runtime.CallToolResult) *status.Status {
	if r == nil {
		return nil
	}
	v, ok := r.Meta[MetaStatus]
	if !ok {
		return nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	p := new(spb.Status)
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(raw, p); err != nil {
		// A detail of a type this binary does not link: keep the code and message.
		var q struct {
			Code    int32  `json:"code"`
			Message string `json:"message"`
		}
		if json.Unmarshal(raw, &q) != nil {
			return nil
		}
		return status.New(codes.Code(q.Code), q.Message)
	}
	return status.FromProto(p)
}

package connectmcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"connectrpc.com/connect"
	"github.com/protomcp/protomcp/internal/rpcstatus"
	"github.com/protomcp/protomcp/runtime"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// The _meta keys of the bridge, the same as grpcmcp's.
const (
	// MetaStatus holds, in the _meta of a bridged tool's error result, the status as the
	// protojson of a google.rpc.Status: its code (a number: Connect's codes are gRPC's),
	// message and details. CodeOf and ErrorOf read it.
	MetaStatus = "protomcp/grpc-status"
	// MetaTimeout holds, in a tools/call request's _meta, the caller's time left in
	// milliseconds: the bridged call's deadline is shortened to it. PropagateDeadline sends it.
	MetaTimeout = "protomcp/timeout-ms"
)

// ErrorInterceptor returns the server interceptor that turns the errors of bridged and
// forwarded handlers into MCP outcomes, by the table of docs/grpc.md:
//   - an error of a cancelled call is left to the runtime, which sends no answer (spec
//     2025-11-25, Utilities, Cancellation); one of a call past the server's handler timeout is
//     a deadline_exceeded tool error;
//   - a *runtime.Error stays the JSON-RPC error it is;
//   - CodeUnimplemented becomes the JSON-RPC error of a tool that is not implemented;
//   - arguments that could not be decoded become invalid_argument;
//   - every other error, a *connect.Error or not (which connect-go reports as unknown),
//     becomes a tool error (isError, spec 2025-11-25, Server Features, Tools, Error
//     Handling): its text names the code, the message and the details a model can act on,
//     and its _meta holds the status under MetaStatus.
//
// Pass it to the generated Register function (runtime.WithInterceptors).
func ErrorInterceptor() runtime.Interceptor {
	return runtime.InterceptorFunc(func(next runtime.CallFunc) runtime.CallFunc {
		return func(ctx context.Context, req *runtime.Request) (*runtime.Response, error) {
			resp, err := next(ctx, req)
			if err == nil || req.Method != "tools/call" {
				return resp, err
			}
			if cerr := ctx.Err(); cerr != nil {
				if errors.Is(cerr, context.DeadlineExceeded) {
					return &runtime.Response{Result: ErrorResult(connect.NewError(connect.CodeDeadlineExceeded, fmt.Errorf("the call ran out of time: %w", err)))}, nil
				}
				return resp, err
			}
			var rpcErr *runtime.Error
			if errors.As(err, &rpcErr) {
				return resp, err
			}
			var ce *connect.Error
			switch {
			case req.Message == nil:
				ce = connect.NewError(connect.CodeInvalidArgument, err)
			case !errors.As(err, &ce):
				ce = connect.NewError(connect.CodeUnknown, err)
			}
			if ce.Code() == connect.CodeUnimplemented {
				return nil, runtime.Unimplemented(req.Name)
			}
			return &runtime.Response{Result: ErrorResult(ce)}, nil
		}
	})
}

// ErrorResult returns the tool error result of e (see ErrorInterceptor): a text a model can
// read, and the status in _meta under MetaStatus.
func ErrorResult(e *connect.Error) *runtime.CallToolResult {
	st := &spb.Status{Code: int32(e.Code()), Message: e.Message()}
	var details []proto.Message
	for _, d := range e.Details() {
		st.Details = append(st.Details, &anypb.Any{TypeUrl: "type.googleapis.com/" + d.Type(), Value: d.Bytes()})
		if m, err := d.Value(); err == nil {
			details = append(details, m)
		}
	}
	raw, err := protojson.Marshal(st)
	if err != nil {
		// A detail of a type this binary does not link: the code and message still go.
		raw, _ = protojson.Marshal(&spb.Status{Code: st.Code, Message: st.Message})
	}
	return &runtime.CallToolResult{
		IsError: true,
		Content: []runtime.Content{runtime.TextContent(statusText(e.Code(), e.Message(), details))},
		Meta:    map[string]any{MetaStatus: json.RawMessage(raw)},
	}
}

// statusText describes a status for a model, as grpcmcp does: "NOT_FOUND: book 7 does not
// exist", then one line per detail it can act on.
func statusText(code connect.Code, msg string, details []proto.Message) string {
	ds := make([]any, len(details))
	for i, d := range details {
		ds[i] = d
	}
	return rpcstatus.Text(int32(code), msg, ds)
}

// ErrorOf returns the *connect.Error of an error a protomcp client returned for a bridged
// tool, as grpcmcp.StatusOf reads a status: nil for nil; a tool error's status from its _meta
// (MetaStatus), details included (unknown without one); a JSON-RPC error by kind (method not
// found: unimplemented; invalid params: invalid_argument; resource not found: not_found;
// cancelled, deadline exceeded, unavailable, internal; others unknown); a context error as
// canceled or deadline_exceeded; any other failure as unavailable.
func ErrorOf(err error) *connect.Error {
	if err == nil {
		return nil
	}
	var te *runtime.ToolError
	if errors.As(err, &te) {
		if ce := metaError(te.Result); ce != nil {
			return ce
		}
		return connect.NewError(connect.CodeUnknown, errors.New(te.Result.Text()))
	}
	switch {
	case errors.Is(err, context.Canceled):
		return connect.NewError(connect.CodeCanceled, err)
	case errors.Is(err, context.DeadlineExceeded):
		return connect.NewError(connect.CodeDeadlineExceeded, err)
	}
	var rpcErr *runtime.Error
	if errors.As(err, &rpcErr) {
		return connect.NewError(rpcCode(rpcErr.Code), errors.New(rpcErr.Message))
	}
	return connect.NewError(connect.CodeUnavailable, err)
}

// CodeOf returns the code of an error a protomcp client returned for a bridged tool, as
// ErrorOf reads it; 0 (OK) for nil.
func CodeOf(err error) connect.Code {
	if ce := ErrorOf(err); ce != nil {
		return ce.Code()
	}
	return 0
}

// ResultError returns the *connect.Error of a tools/call result that a raw call
// (runtime.Client.CallTool) returned: nil when it is not an error.
func ResultError(r *runtime.CallToolResult) *connect.Error {
	if r == nil || !r.IsError {
		return nil
	}
	if ce := metaError(r); ce != nil {
		return ce
	}
	return connect.NewError(connect.CodeUnknown, errors.New(r.Text()))
}

func rpcCode(c runtime.Code) connect.Code {
	switch c {
	case runtime.CodeMethodNotFound:
		return connect.CodeUnimplemented
	case runtime.CodeInvalidParams, runtime.CodeParseError, runtime.CodeInvalidRequest:
		return connect.CodeInvalidArgument
	case runtime.CodeInternalError:
		return connect.CodeInternal
	case runtime.CodeResourceNotFound:
		return connect.CodeNotFound
	case runtime.CodeRequestCancelled:
		return connect.CodeCanceled
	case runtime.CodeDeadlineExceeded:
		return connect.CodeDeadlineExceeded
	case runtime.CodeUnavailable:
		return connect.CodeUnavailable
	}
	return connect.CodeUnknown
}

// metaError reads MetaStatus from a result's _meta, or returns nil.
func metaError(r *runtime.CallToolResult) *connect.Error {
	v, ok := r.Meta[MetaStatus]
	if !ok {
		return nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	st := new(spb.Status)
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(raw, st); err != nil {
		var q struct {
			Code    int32  `json:"code"`
			Message string `json:"message"`
		}
		if json.Unmarshal(raw, &q) != nil {
			return nil
		}
		st = &spb.Status{Code: q.Code, Message: q.Message}
	}
	ce := connect.NewWireError(connect.Code(st.GetCode()), errors.New(st.GetMessage()))
	for _, a := range st.GetDetails() {
		m, err := a.UnmarshalNew()
		if err != nil {
			continue
		}
		if d, err := connect.NewErrorDetail(m); err == nil {
			ce.AddDetail(d)
		}
	}
	return ce
}

// PropagateDeadline returns a client interceptor (runtime.WithInterceptors on a
// runtime.Client) that sends the time left of each tools/call's context in its _meta under
// MetaTimeout, as Connect sends Connect-Timeout-Ms: a bridged call then runs under the
// caller's deadline. MCP itself carries no deadline.
func PropagateDeadline() runtime.Interceptor {
	return runtime.InterceptorFunc(func(next runtime.CallFunc) runtime.CallFunc {
		return func(ctx context.Context, req *runtime.Request) (*runtime.Response, error) {
			if d, ok := ctx.Deadline(); ok && req.Method == "tools/call" {
				ms := max(time.Until(d).Milliseconds(), 1)
				// A copy: the request's _meta may be the caller's, shared by its calls.
				meta := &runtime.RequestMeta{Other: map[string]json.RawMessage{}}
				if req.Meta != nil {
					meta.ProgressToken = req.Meta.ProgressToken
					for k, v := range req.Meta.Other {
						meta.Other[k] = v
					}
				}
				meta.Other[MetaTimeout] = json.RawMessage(strconv.FormatInt(ms, 10))
				req.Meta = meta
			}
			return next(ctx, req)
		}
	})
}

// Package lro waits for a google.longrunning.Operation (AIP-151) on behalf of the bridges of
// grpc-go (grpcmcp) and connect-go (connectmcp): it polls an operation that is not done, with
// a bounded backoff, publishes its metadata as the MCP task's, cancels it when the task is
// cancelled, and turns the done operation into the tool's outcome. What differs between the
// two bridges, how their errors are made and read, is a Protocol.
package lro

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/protomcp/protomcp/runtime"
)

// The methods of google.longrunning.Operations that the bridges call.
const (
	GetOperation    = "/google.longrunning.Operations/GetOperation"
	CancelOperation = "/google.longrunning.Operations/CancelOperation"
)

// The default bounds of the wait between two polls, and the time CancelOperation is given
// once the task's context has ended.
const (
	DefaultPollInitial = 100 * time.Millisecond
	DefaultPollMax     = 5 * time.Second
	cancelTimeout      = 5 * time.Second
	pollFactor         = 1.5
)

// The google.rpc codes the waiter answers with; gRPC's and Connect's codes are the same numbers.
const (
	codeDeadlineExceeded   = 4
	codeFailedPrecondition = 9
	codeUnimplemented      = 12
	codeInternal           = 13
	codeUnavailable        = 14
)

// MaxPollFailures is how many polls in a row may fail with a transient error (Unavailable, or
// DeadlineExceeded while the task's context has not ended) before the call fails with the
// last one: GetOperation is safe to repeat, and a long job should outlive a backend's
// restart or a dropped connection (AIP-194).
const MaxPollFailures = 5

// An Operation is a google.longrunning.Operation as the bridges read it: the getters of
// longrunningpb.Operation, so that they need no Go code of google/longrunning.
type Operation interface {
	proto.Message
	GetName() string
	GetDone() bool
	GetError() *spb.Status
	GetMetadata() *anypb.Any
	GetResponse() *anypb.Any
}

// Protocol is what differs between the bridges.
type Protocol struct {
	// Name names the bridge in log lines ("grpcmcp").
	Name string
	// NewError makes an error of the bridge's protocol with a google.rpc code.
	NewError func(code int32, err error) error
	// Code reads the google.rpc code of an error of the bridge's protocol.
	Code func(err error) int32
	// StatusError is the error of a done operation's status.
	StatusError func(*spb.Status) error
	// WithOperations names the option that gives an in-process bridge its Operations service.
	WithOperations string
}

// Poller gets and cancels operations by their names. Get is nil when nothing serves
// google.longrunning.Operations to the bridge: an operation that is not done is refused.
type Poller[Op any] struct {
	Get          func(ctx context.Context, name string) (*Op, error)
	Cancel       func(ctx context.Context, name string) error
	Initial, Max time.Duration
}

// Await turns op into the tool's outcome (AIP-151): while it is not done, it polls p with a
// bounded backoff, publishing each new metadata as the task's (runtime.Caller.SetTaskMetadata);
// once done, its error is the call's, and its response (Res) the result. When ctx ends first,
// it cancels the operation, best effort, and returns ctx's error.
func Await[Res, Op any, PRes interface {
	*Res
	proto.Message
}, POp interface {
	*Op
	Operation
}](ctx context.Context, op *Op, p *Poller[Op], pr *Protocol) (*Res, error) {
	cur := POp(op)
	var published *anypb.Any
	publish := func() error {
		md := cur.GetMetadata()
		if md.GetTypeUrl() == "" || (published != nil && proto.Equal(md, published)) {
			return nil
		}
		if err := runtime.CallerFrom(ctx).SetTaskMetadata(ctx, md); err != nil {
			return pr.NewError(codeInternal, fmt.Errorf("operation %q: %w", cur.GetName(), err))
		}
		published = md
		return nil
	}
	wait := p.Initial
	failures := 0
	for !cur.GetDone() {
		if p.Get == nil {
			return nil, pr.NewError(codeFailedPrecondition, fmt.Errorf("operation %q is not done, and no google.longrunning.Operations service polls it: pass %s to the Register function", cur.GetName(), pr.WithOperations))
		}
		if err := publish(); err != nil {
			return nil, err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			p.cancel(ctx, cur.GetName(), pr)
			return nil, ctx.Err()
		case <-t.C:
		}
		wait = min(time.Duration(float64(wait)*pollFactor), p.Max)
		next, err := p.Get(ctx, cur.GetName())
		if err != nil {
			if ctx.Err() != nil {
				p.cancel(ctx, cur.GetName(), pr)
				return nil, ctx.Err()
			}
			switch code := pr.Code(err); {
			case code == codeUnimplemented:
				// Not the tool's Unimplemented, which the error mapping would make "no such tool".
				return nil, pr.NewError(codeFailedPrecondition, fmt.Errorf("operation %q is not done, and its service does not serve %s: %w", cur.GetName(), GetOperation, err))
			case (code == codeUnavailable || code == codeDeadlineExceeded) && failures+1 < MaxPollFailures:
				failures++
				slog.DebugContext(ctx, pr.Name+": poll an operation again after a transient error", "operation", cur.GetName(), "failures", failures, "error", err)
				continue // after the next, longer, wait
			}
			return nil, err
		}
		failures = 0
		cur = POp(next)
	}
	if e := cur.GetError(); e != nil {
		return nil, pr.StatusError(e)
	}
	if err := publish(); err != nil {
		return nil, err
	}
	res := PRes(new(Res))
	if err := cur.GetResponse().UnmarshalTo(res); err != nil {
		return nil, pr.NewError(codeInternal, fmt.Errorf("operation %q: %w", cur.GetName(), err))
	}
	return (*Res)(res), nil
}

// cancel calls CancelOperation for name once, under a timeout of its own, since ctx (the
// cancelled task's) has ended. It is best effort: an error is logged, at debug level for
// Unimplemented (AIP-151 lets a service not support cancellation).
func (p *Poller[Op]) cancel(ctx context.Context, name string, pr *Protocol) {
	if p.Cancel == nil {
		return
	}
	cctx, stop := context.WithTimeout(context.WithoutCancel(ctx), cancelTimeout)
	defer stop()
	err := p.Cancel(cctx, name)
	switch {
	case err == nil:
	case pr.Code(err) == codeUnimplemented:
		slog.DebugContext(cctx, pr.Name+": the Operations service cannot cancel an operation", "operation", name, "error", err)
	default:
		slog.WarnContext(cctx, pr.Name+": cancel the operation of a cancelled task", "operation", name, "error", err)
	}
}

// Named returns a new M (a GetOperationRequest or CancelOperationRequest) with its name field
// set to name.
func Named[M any, PM interface {
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

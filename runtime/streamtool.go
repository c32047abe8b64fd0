package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"strconv"
	"sync"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// The _meta keys of a server-streaming tool's messages.
const (
	// MetaStreamMessage holds, in the _meta of each notifications/progress of a streaming
	// tool, the streamed message as protojson.
	MetaStreamMessage = "protomcp/message"
	// MetaStreamSeq holds, in the same _meta, the message's 1-based sequence number.
	MetaStreamSeq = "protomcp/seq"
	// MetaStreamCount holds, in the _meta of a streaming tool's result, how many messages the
	// handler sent; the result's structuredContent is the last of them.
	MetaStreamCount = "protomcp/count"
)

// StreamBuffer is how many streamed messages a ToolStream holds that Recv has not returned
// yet. When it is full the client stops reading that call's answer until Recv catches up.
const StreamBuffer = 16

// ServerStream sends the messages of a server-streaming rpc served as a tool. Each Send
// goes out at once as a notifications/progress of the call (when the client gave a
// progressToken), with the message as protojson in its _meta under MetaStreamMessage and its
// sequence number under MetaStreamSeq. The progress is the message's numeric field named
// "progress" when it has one (it must then increase), else the sequence number; its numeric
// "total" field and string "message" field, when it has them, give the notification's total
// and message. When the handler returns, the last message sent is the tool's result
// (structuredContent, with MetaStreamCount in its _meta).
//
// Send never waits for the network: it queues the notification on the call's stream, in
// order. A client that reads so slowly that the stream's queue (WithMaxQueuedEvents) fills
// makes Send fail with an error, and nothing is dropped silently: return that error. A
// ServerStream is not safe for concurrent use.
//
// Res is the message's struct type, as in ToolStream[Res] and grpc-go's
// ServerStreamingServer[Res]: Send takes a *Res.
type ServerStream[Res any] struct {
	ctx  context.Context
	last proto.Message
	n    int
}

// Send sends one message.
func (st *ServerStream[Res]) Send(res *Res) error {
	if err := st.ctx.Err(); err != nil {
		return err
	}
	// AddStreamTool, the only maker of a ServerStream, requires *Res to be a proto.Message.
	msg := any(res).(proto.Message)
	b, err := resultMarshal.Marshal(msg)
	if err != nil {
		return fmt.Errorf("mcp: encode streamed message: %w", err)
	}
	st.n++
	st.last = msg
	rs := stateFrom(st.ctx)
	if rs == nil || len(rs.progressToken) == 0 {
		return nil
	}
	p := &ProgressParams{ProgressToken: rs.progressToken, Progress: float64(st.n), Meta: map[string]json.RawMessage{
		MetaStreamMessage: b,
		MetaStreamSeq:     json.RawMessage(strconv.Itoa(st.n)),
	}}
	m := msg.ProtoReflect()
	fields := m.Descriptor().Fields()
	if fd := fields.ByName("progress"); fd != nil && isNumber(fd) {
		p.Progress = number(m.Get(fd))
	}
	if fd := fields.ByName("total"); fd != nil && isNumber(fd) {
		if t := number(m.Get(fd)); t > 0 {
			p.Total = &t
		}
	}
	if fd := fields.ByName("message"); fd != nil && fd.Kind() == protoreflect.StringKind && !fd.IsList() {
		p.Message = m.Get(fd).String()
	}
	rs.mu.Lock()
	if rs.sentProgress && p.Progress <= rs.lastProgress {
		rs.mu.Unlock()
		return fmt.Errorf("mcp: progress must increase: %v after %v", p.Progress, rs.lastProgress)
	}
	rs.lastProgress, rs.sentProgress = p.Progress, true
	rs.mu.Unlock()
	return rs.send(notifProgress, p)
}

func isNumber(fd protoreflect.FieldDescriptor) bool {
	if fd.IsList() || fd.IsMap() {
		return false
	}
	switch fd.Kind() {
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind, protoreflect.Int64Kind,
		protoreflect.Sint64Kind, protoreflect.Sfixed64Kind, protoreflect.Uint32Kind, protoreflect.Fixed32Kind,
		protoreflect.Uint64Kind, protoreflect.Fixed64Kind, protoreflect.FloatKind, protoreflect.DoubleKind:
		return true
	}
	return false
}

func number(v protoreflect.Value) float64 {
	switch x := v.Interface().(type) {
	case int32:
		return float64(x)
	case int64:
		return float64(x)
	case uint32:
		return float64(x)
	case uint64:
		return float64(x)
	case float32:
		return float64(x)
	case float64:
		return x
	}
	return 0
}

// AddStreamTool adds a tool served by a server-streaming handler (see ServerStream). The
// arguments are decoded as AddTypedTool decodes them. A handler that returns an error fails the
// call as AddTypedTool's do; one that returns nil without sending anything answers with an empty
// Res. Generated Register functions call this once per server-streaming rpc.
func AddStreamTool[Req, Res any, PReq interface {
	*Req
	proto.Message
}, PRes interface {
	*Res
	proto.Message
}](s *Server, spec ToolSpec, h func(context.Context, PReq, *ServerStream[Res]) error, opts ...HandlerOption) {
	if h == nil {
		panic(fmt.Sprintf("mcp: nil handler for tool %q", spec.Name))
	}
	name := spec.Name
	e := &toolEntry{decode: typedDecoder[Req, PReq](spec)}
	e.call = func(ctx context.Context, req *Request) (*Response, error) {
		in, ok := req.Message.(PReq)
		if !ok {
			return nil, Errorf(CodeInternalError, "tool %s: the request is a %T where the tool takes a %T (an interceptor replaced it)", name, req.Message, in)
		}
		st := &ServerStream[Res]{ctx: ctx}
		if err := h(ctx, in, st); err != nil {
			return nil, err
		}
		last := st.last
		if last == nil {
			last = PRes(new(Res))
		}
		b, err := resultMarshal.Marshal(last)
		if err != nil {
			return nil, Errorf(CodeInternalError, "could not encode tool result: %v", err)
		}
		resp := req.response()
		resp.Message = last
		resp.Result = &CallToolResult{
			Content:           []Content{TextContent(string(b))},
			StructuredContent: b,
			Meta:              map[string]any{MetaStreamCount: st.n},
		}
		return resp, nil
	}
	s.addTool(spec, e, opts)
}

// ToolStream is the client side of a server-streaming tool: the messages the server sent,
// in order, from the call's progress notifications and then its result. Read it with Recv
// or All; a stream that is not read to its end must be closed (All closes it).
//
// Back-pressure: the stream holds up to StreamBuffer messages that Recv has not returned.
// When it is full, the client stops reading this call's answer (its other calls go on), so
// the server's queue for the call grows instead, up to its bound (WithMaxQueuedEvents),
// past which the server's Send fails; over stdio, where one reader serves every call, the
// client holds what the stream has not taken within its notification budget
// (WithNotificationBudget), past which the call fails. A slow reader thus never loses or reorders a message:
// at worst the call ends with an error. Cancelling ctx, or Close, cancels the call
// (notifications/cancelled) and ends the stream promptly.
type ToolStream[Res any] struct {
	msgs   chan *Res
	cancel context.CancelFunc
	err    error // read after msgs is closed
	once   sync.Once
}

// CallToolStream calls a server-streaming tool (see AddStreamTool). The call runs in the
// background, feeding the stream; generated clients call this once per streaming rpc.
func CallToolStream[Res any, PRes interface {
	*Res
	proto.Message
}](ctx context.Context, c *Client, name string, req proto.Message, opts ...CallOption) *ToolStream[Res] {
	ctx, cancel := context.WithCancel(ctx)
	st := &ToolStream[Res]{msgs: make(chan *Res, StreamBuffer), cancel: cancel}
	// The progress callbacks may run on another goroutine than the call's (a message
	// connection's dispatcher), even after the call has returned: mu guards what they share
	// with it, and inflight lets the call close msgs only once no callback can send on it.
	var (
		mu       sync.Mutex
		received int
		recvErr  error
		finished bool
		inflight sync.WaitGroup
	)
	deliver := func(m *Res) bool {
		select {
		case st.msgs <- m:
			return true
		case <-ctx.Done():
			return false
		}
	}
	fail := func(err error) {
		mu.Lock()
		if recvErr == nil {
			recvErr = err
		}
		mu.Unlock()
		cancel()
	}
	onProgress := func(p *ProgressParams) {
		raw, ok := p.Meta[MetaStreamMessage]
		if !ok {
			return
		}
		seq, _ := strconv.Atoi(string(p.Meta[MetaStreamSeq]))
		mu.Lock()
		if finished || recvErr != nil {
			mu.Unlock()
			return
		}
		if seq != received+1 {
			mu.Unlock()
			fail(fmt.Errorf("mcp tools/call %s: streamed message %d arrived after message %d", name, seq, received))
			return
		}
		received++
		inflight.Add(1)
		mu.Unlock()
		defer inflight.Done()
		out := PRes(new(Res))
		if err := resultUnmarshal.Unmarshal(raw, out); err != nil {
			fail(fmt.Errorf("mcp tools/call %s: decode streamed message into %s: %w", name, out.ProtoReflect().Descriptor().FullName(), err))
			return
		}
		deliver((*Res)(out))
	}
	// A WithProgress of the caller's sees the notifications too, before the stream does.
	if user := newCallOptions(opts).onProgress; user != nil {
		stream := onProgress
		onProgress = func(p *ProgressParams) {
			user(p)
			stream(p)
		}
	}
	co := newCallOptions(append(opts, WithProgress(onProgress)))
	co.progressSync = true
	go func() {
		defer func() {
			cancel() // a callback waiting to deliver gives up
			mu.Lock()
			finished = true
			mu.Unlock()
			inflight.Wait()
			close(st.msgs)
		}()
		st.err = func() error {
			args, err := marshalArgs(req)
			if err != nil {
				return fmt.Errorf("mcp tools/call %s: encode arguments: %w", name, err)
			}
			resp, err := c.invoke(ctx, newToolRequest(name, args, req), co)
			mu.Lock()
			rerr, received := recvErr, received
			finished = true // what arrives from now on is not part of the stream
			mu.Unlock()
			if rerr != nil && (err == nil || ctx.Err() != nil) {
				return rerr // the stream's own failure cancelled the call
			}
			if err != nil {
				return err
			}
			raw := rawResult(resp)
			last, err := decodeToolResult[Res, PRes](name, raw)
			if err != nil {
				return err
			}
			var meta struct {
				Meta map[string]json.RawMessage `json:"_meta"`
			}
			_ = json.Unmarshal(raw, &meta)
			count := received + 1 // a server that does not say: its result is one more message
			if n, ok := meta.Meta[MetaStreamCount]; ok {
				if count, err = strconv.Atoi(string(n)); err != nil {
					return fmt.Errorf("mcp tools/call %s: bad %s %s", name, MetaStreamCount, n)
				}
			}
			switch {
			case count == received:
			case count == received+1:
				if !deliver((*Res)(last)) {
					return ctx.Err()
				}
			default:
				return fmt.Errorf("mcp tools/call %s: the server streamed %d messages and %d arrived (were progress notifications dropped?)", name, count, received)
			}
			return io.EOF
		}()
	}()
	return st
}

// Recv returns the next message; at the end of the stream it returns io.EOF, or the error
// that ended it.
func (st *ToolStream[Res]) Recv() (*Res, error) {
	if m, ok := <-st.msgs; ok {
		return m, nil
	}
	return nil, st.err
}

// All returns an iterator over the messages: it yields each with a nil error, then, if the
// call failed, a nil message and the error. Breaking out of the loop closes the stream.
func (st *ToolStream[Res]) All() iter.Seq2[*Res, error] {
	return func(yield func(*Res, error) bool) {
		defer st.Close()
		for {
			m, err := st.Recv()
			if errors.Is(err, io.EOF) {
				return
			}
			if !yield(m, err) || err != nil {
				return
			}
		}
	}
}

// Close cancels the call if it is still running and waits for it to end. It is safe to call
// more than once, and after the end of the stream.
func (st *ToolStream[Res]) Close() {
	st.once.Do(func() {
		st.cancel()
		for range st.msgs {
		}
	})
}

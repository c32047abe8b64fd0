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
	progressFields(msg.ProtoReflect(), p)
	if err := rs.advanceProgress(p.Progress); err != nil {
		return err
	}
	return rs.send(notifProgress, p)
}

// progressFields sets p's progress, total and message from the message's fields of those
// names, when it has them with a fitting type: numbers for the first two (a total only when
// positive), a string for the message.
func progressFields(m protoreflect.Message, p *ProgressParams) {
	fields := m.Descriptor().Fields()
	if v, ok := numberField(m, fields.ByName("progress")); ok {
		p.Progress = v
	}
	if v, ok := numberField(m, fields.ByName("total")); ok && v > 0 {
		p.Total = &v
	}
	if fd := fields.ByName("message"); fd != nil && fd.Kind() == protoreflect.StringKind && !fd.IsList() {
		p.Message = m.Get(fd).String()
	}
}

// numberField returns the value of m's field fd when it is a numeric field (isNumber); fd
// nil is no such field.
func numberField(m protoreflect.Message, fd protoreflect.FieldDescriptor) (float64, bool) {
	if fd == nil || !isNumber(fd) {
		return 0, false
	}
	return number(fd, m.Get(fd)), true
}

// isNumber reports whether a field holds one number (no list, no map).
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

// number returns the value of fd, a numeric field (isNumber), as a float64.
func number(fd protoreflect.FieldDescriptor, v protoreflect.Value) float64 {
	switch fd.Kind() {
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return v.Float()
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return float64(v.Uint())
	default:
		return float64(v.Int())
	}
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
	sc := &streamCall[Res, PRes]{ctx: ctx, cancel: cancel, name: name, msgs: st.msgs, closing: c.listenCtx.Done()}
	onProgress := sc.onProgress
	// A WithProgress of the caller's sees the notifications too, before the stream does.
	if user := newCallOptions(opts).onProgress; user != nil {
		onProgress = func(p *ProgressParams) {
			user(p)
			sc.onProgress(p)
		}
	}
	co := newCallOptions(append(opts, WithProgress(onProgress)))
	co.progressSync = true
	go func() {
		st.err = sc.run(c, req, co)
		cancel() // a callback waiting to deliver gives up
		sc.end()
		sc.inflight.Wait() // none is sending on msgs any more, and none will
		close(st.msgs)
	}()
	return st
}

// streamCall is the client's side of one server-streaming call while it runs: the messages
// delivered to its ToolStream so far, and the error that ends it early. Its progress
// callbacks run one at a time, and may still run once the call has returned (a reader shared
// by every call queues them, and does not wait for them when the call fails): mu orders them
// with the call's end, after which they deliver nothing.
type streamCall[Res any, PRes interface {
	*Res
	proto.Message
}] struct {
	ctx    context.Context
	cancel context.CancelFunc
	name   string
	msgs   chan<- *Res
	// closing is closed when the client's Close begins: a message its caller has not taken
	// is not waited for past it.
	closing  <-chan struct{}
	mu       sync.Mutex
	received int   // messages delivered
	recvErr  error // a streamed message out of sequence or undecodable
	ended    bool  // the call returned: notifications are no longer delivered
	// inflight counts the callbacks between inSequence and the end of their delivery: msgs
	// is closed only once it is zero and the call has ended.
	inflight sync.WaitGroup
}

// deliver hands m to the stream, waiting while its buffer is full, and reports whether it
// did before the call ended. A client that closes meanwhile ends the call with ErrClosed:
// Close does not wait for a stream its caller does not read.
func (sc *streamCall[Res, PRes]) deliver(m *Res) bool {
	select {
	case sc.msgs <- m:
		sc.mu.Lock()
		sc.received++
		sc.mu.Unlock()
		return true
	case <-sc.ctx.Done():
		return false
	case <-sc.closing:
		sc.fail(fmt.Errorf("mcp tools/call %s: %w", sc.name, ErrClosed))
		return false
	}
}

// onProgress delivers the streamed message of a progress notification of the call. One out
// of sequence, or that does not decode, ends the call.
func (sc *streamCall[Res, PRes]) onProgress(p *ProgressParams) {
	raw, ok := p.Meta[MetaStreamMessage]
	if !ok || !sc.inSequence(p.Meta[MetaStreamSeq]) {
		return
	}
	defer sc.inflight.Done()
	out := PRes(new(Res))
	if err := resultUnmarshal.Unmarshal(raw, out); err != nil {
		sc.fail(fmt.Errorf("mcp tools/call %s: decode streamed message into %s: %w", sc.name, out.ProtoReflect().Descriptor().FullName(), err))
		return
	}
	sc.deliver((*Res)(out))
}

// inSequence decides whether the streamed message numbered seq is to be delivered: the call
// goes on, and seq follows the last message delivered. One out of sequence ends the call.
func (sc *streamCall[Res, PRes]) inSequence(seq json.RawMessage) bool {
	sc.mu.Lock()
	// A call that has ended, failed or been cancelled delivers nothing more; a cancelled one
	// does not report the gap its cancellation leaves either: its error is its context's.
	if sc.recvErr != nil || sc.ended || sc.ctx.Err() != nil {
		sc.mu.Unlock()
		return false
	}
	n, _ := strconv.Atoi(string(seq))
	received := sc.received
	if n != received+1 {
		sc.mu.Unlock()
		sc.fail(fmt.Errorf("mcp tools/call %s: streamed message %d arrived after message %d", sc.name, n, received))
		return false
	}
	sc.inflight.Add(1) // under mu, so that end's caller waits for this delivery
	sc.mu.Unlock()
	return true
}

// fail ends the call with err.
func (sc *streamCall[Res, PRes]) fail(err error) {
	sc.mu.Lock()
	sc.recvErr = err
	sc.mu.Unlock()
	sc.cancel()
}

// run sends the call and, once its result arrives, delivers the last message if the
// notifications did not; it returns io.EOF at the stream's end, else the error that ended it.
func (sc *streamCall[Res, PRes]) run(c *Client, req proto.Message, co *callOptions) error {
	args, err := marshalArgs(req)
	if err == nil {
		err = checkTypedArgs(sc.name, req.ProtoReflect().Descriptor(), args)
	}
	if err != nil {
		return fmt.Errorf("mcp tools/call %s: encode arguments: %w", sc.name, err)
	}
	resp, err := c.invoke(sc.ctx, newToolRequest(sc.name, args, req), co)
	received, recvErr := sc.end()
	if recvErr != nil {
		return recvErr
	}
	// A call its caller cancelled (ctx, or Close) ends with its context's error, not with what
	// the cancellation cut short: a stream that lacks messages, an error of the exchange's.
	if ctxErr := sc.ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	if err != nil {
		return err
	}
	raw := rawResult(resp)
	last, err := decodeToolResult[Res, PRes](sc.name, raw)
	if err != nil {
		return err
	}
	count, err := streamCount(sc.name, raw, received)
	if err != nil {
		return err
	}
	return sc.deliverLast(count, received, (*Res)(last))
}

// end marks the call as returned, and returns how many messages were delivered and the error
// a streamed message caused.
func (sc *streamCall[Res, PRes]) end() (int, error) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.ended = true
	return sc.received, sc.recvErr
}

// streamCount is how many messages the result of the streaming tool name says the server
// streamed (MetaStreamCount); a server that does not say has its result be one more message
// than the received ones.
func streamCount(name string, raw json.RawMessage, received int) (int, error) {
	var meta struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	_ = json.Unmarshal(raw, &meta)
	n, ok := meta.Meta[MetaStreamCount]
	if !ok {
		return received + 1, nil
	}
	count, err := strconv.Atoi(string(n))
	if err != nil {
		return 0, fmt.Errorf("mcp tools/call %s: bad %s %s", name, MetaStreamCount, n)
	}
	return count, nil
}

// deliverLast checks that count messages were streamed, of which received arrived: all of
// them, or all but the last, which is the result (last) and is delivered now. It returns
// io.EOF when they were.
func (sc *streamCall[Res, PRes]) deliverLast(count, received int, last *Res) error {
	switch {
	case count == received:
	case count == received+1:
		if !sc.deliver(last) {
			return sc.ctx.Err()
		}
	default:
		return fmt.Errorf("mcp tools/call %s: the server streamed %d messages and %d arrived (were progress notifications dropped?)", sc.name, count, received)
	}
	return io.EOF
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

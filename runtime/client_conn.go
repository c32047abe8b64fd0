package runtime

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// clientTransport is what carries a Client's messages for a session: Streamable HTTP
// (httpTransport, client_transport.go) or a message connection (msgConn, below). The Client
// does the rest the same way over either: initialization, the encoding of requests and their
// _meta, interceptors, the handlers of the server's requests and notifications.
type clientTransport interface {
	// exchange sends one request, encoded in body with id, and returns the result of its
	// response, or its JSON-RPC error as an *Error. The notifications and server requests
	// that come with it go to co's callbacks and to the client's handlers. For initialize it
	// also returns the session ID the server assigned, if any.
	exchange(ctx context.Context, st *clientSession, r *Request, id ID, body []byte, co *callOptions) (json.RawMessage, string, error)
	// post sends a notification or a response, which get no answer.
	post(ctx context.Context, st *clientSession, body []byte) error
	// listen receives what the server sends outside calls on st until the client closes; it
	// closes ready once it is set up (or has failed), and calls c.bg.Done when it returns.
	listen(st *clientSession, ready chan struct{})
	// endSession tells the server that the client is done with st.
	endSession(ctx context.Context, st *clientSession) error
	// close releases the transport once the client's own work has stopped.
	close(ctx context.Context) error
}

// errConnClosed is what the errors of the calls of a client whose message connection has
// ended match (the stdio server's sentinel, stdio.go: one error for a closed stdio connection).
var errConnClosed = errStdioClosed

// connPeer describes the other end of a message connection, for the errors a user acts on.
type connPeer struct {
	// name is what the errors call the server ("the stdio server /usr/bin/x -y").
	name string
	// exited waits up to d for the server process to exit, reporting whether it did and how
	// (nil when the connection has no process).
	exited func(d time.Duration) (bool, error)
	// stderr returns the first and last lines the server wrote to stderr ("" when none or
	// unknown).
	stderr func() string
}

// exitWait bounds how long a message connection whose input ended waits for the server's
// process to exit, to say how it did.
const exitWait = 2 * time.Second

// msgConn carries a Client's messages as lines of JSON over a reader and a writer: the stdio
// transport (spec 2025-11-25, Transports, stdio), and the in-memory one. One goroutine reads
// and decodes each line once and routes it: a response to the call waiting for its id; a
// progress notification to the call that sent its token; everything else (the server's
// requests, list changes, log messages) to the client's handlers. Writes are serialised. No
// wait is unbounded: a call waits within its context, a line is bounded by the client's
// maximum event size, and the notifications waiting for their callbacks by its notification
// budget.
type msgConn struct {
	c       *Client
	w       io.Writer
	maxLine int
	peer    connPeer

	// The writer goroutine writes what wq brings, in order, until stop is closed; then it
	// writes what is queued and closes wdone. A write that blocks (a server that does not
	// read its input) blocks it alone: callers wait for a place in wq within their context.
	wq    chan outMsg
	stop  chan struct{}
	wdone chan struct{}

	mu       sync.Mutex           // guards calls, progress, err and overflowed
	calls    map[string]*connCall // by request ID
	progress map[string]*connCall // by progress token
	err      error                // why the connection ended, once it has
	// overflowed are the calls failed for spending the notification budget whose callbacks
	// may still hold some of it (makeRoom).
	overflowed []*connCall

	disp  dispatcher             // callbacks of notifications outside calls, in order
	heard atomic.Bool            // the server has written a message
	junk  atomic.Pointer[string] // the last line it wrote that was not one

	done     chan struct{} // closed when the reader has returned
	shutdown func(context.Context) error
	closing  sync.Once
	closeErr error
}

// connCall is a call waiting for its response on a message connection.
type connCall struct {
	done chan struct{} // closed once resp or err is set
	resp *wireMessage
	err  error
	id   string
	// token is the progress token the call sent, "" for none.
	token string
	// method is the request's, for the notifications/cancelled that ends it.
	method string
	st     *clientSession
	co     *callOptions
	disp   dispatcher // the call's progress callbacks, in order
}

// outMsg is a message for the writer, and the call it starts (nil for a notification or a
// response), which fails if the write does.
type outMsg struct {
	msg  []byte
	call *connCall
}

// writeQueue is how many messages may wait for the writer.
const writeQueue = 64

func newMsgConn(w io.Writer, cfg *clientConfig, peer connPeer) *msgConn {
	return &msgConn{
		w:        w,
		maxLine:  cfg.maxEventSize,
		peer:     peer,
		wq:       make(chan outMsg, writeQueue),
		stop:     make(chan struct{}),
		wdone:    make(chan struct{}),
		calls:    make(map[string]*connCall),
		progress: make(map[string]*connCall),
		done:     make(chan struct{}),
	}
}

// newConnClient returns a Client on m, whose reader reads r; shutdown ends the connection
// (Client.Close calls it last).
func newConnClient(m *msgConn, r io.Reader, cfg clientConfig, shutdown func(context.Context) error) *Client {
	cfg.era = EraLegacy // the modern era's stdio binding is not implemented
	cfg.listen = false  // what the server sends outside calls arrives on the one connection
	c := newClient(cfg)
	c.tr = m
	m.c = c
	m.shutdown = shutdown
	go m.read(r)
	go m.writeLoop()
	return c
}

func (m *msgConn) exchange(ctx context.Context, st *clientSession, r *Request, id ID, body []byte, co *callOptions) (json.RawMessage, string, error) {
	call := &connCall{done: make(chan struct{}), id: id.raw, method: r.Method, st: st, co: co}
	if co != nil && co.onProgress != nil {
		call.token = string(co.progressToken)
	}
	if err := m.register(call); err != nil {
		return nil, "", err
	}
	if err := m.enqueue(ctx, outMsg{msg: body, call: call}); err != nil {
		m.forget(call.id, call.token)
		return nil, "", err
	}
	select {
	case <-call.done:
	case <-ctx.Done():
		m.forget(call.id, call.token)
		// Tell the server, and return at once (spec 2025-11-25, Cancellation).
		m.c.cancelRemote(st, r.Method, &id, ctx)
		return nil, "", m.silence(r.Method, ctx.Err())
	}
	m.forget("", call.token)
	if call.err != nil {
		// A failed call does not wait for its callbacks: they may be what failed it, a
		// stream its caller does not read, which ends once the call has.
		return nil, "", call.err
	}
	// The callbacks of the progress that came before the response run first; a call whose
	// context ends meanwhile has been cancelled, and says so (the server, which has answered,
	// is not told).
	if err := call.disp.wait(ctx); err != nil {
		return nil, "", err
	}
	raw, err := call.result()
	return raw, "", err
}

// register routes the server's answers to call, unless the connection has ended.
func (m *msgConn) register(call *connCall) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return m.err
	}
	m.calls[call.id] = call
	if call.token != "" {
		m.progress[call.token] = call
	}
	return nil
}

// result is the call's outcome, once done is closed.
func (call *connCall) result() (json.RawMessage, error) {
	switch {
	case call.err != nil:
		return nil, call.err
	case call.resp.Error != nil:
		return nil, call.resp.Error
	}
	return call.resp.Result, nil
}

// silence adds to err, the end of a call's context, what a user needs to know when the server
// process has not written a single message: it may not speak this transport at all.
func (m *msgConn) silence(method string, err error) error {
	if m.heard.Load() || method != methodInitialize || m.peer.exited == nil {
		return err
	}
	hint := fmt.Sprintf("%s has written nothing to its stdout: was it started in its stdio mode?", m.peer.name)
	if junk := m.junk.Load(); junk != nil {
		hint = fmt.Sprintf("%s has written nothing but lines that are not JSON-RPC to its stdout, the last %q: was it started in its stdio mode?", m.peer.name, *junk)
	}
	if tail := m.stderrTail(); tail != "" {
		hint += " Its stderr: " + tail
	}
	return fmt.Errorf("%w (%s)", err, hint)
}

// stderrTail is the end of what the server's process wrote to its stderr ("" when there is
// no process, or it wrote nothing).
func (m *msgConn) stderrTail() string {
	if m.peer.stderr == nil {
		return ""
	}
	return m.peer.stderr()
}

// post queues a notification or a response for the writer; a failed write is logged.
func (m *msgConn) post(ctx context.Context, _ *clientSession, body []byte) error {
	m.mu.Lock()
	err := m.err
	m.mu.Unlock()
	if err != nil {
		return err
	}
	return m.enqueue(ctx, outMsg{msg: body})
}

// enqueue hands a message to the writer, within ctx.
func (m *msgConn) enqueue(ctx context.Context, out outMsg) error {
	select {
	case <-m.stop:
		return errConnClosed
	case m.wq <- out:
		return nil
	default:
	}
	select {
	case m.wq <- out:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-m.stop:
		return errConnClosed
	}
}

// writeLoop writes the queued messages in order, until the connection is shut down.
func (m *msgConn) writeLoop() {
	defer close(m.wdone)
	for {
		select {
		case out := <-m.wq:
			m.writeOut(out)
		case <-m.stop:
			for {
				select {
				case out := <-m.wq:
					m.writeOut(out)
				default:
					return
				}
			}
		}
	}
}

// writeOut writes one message; a failed write fails the call it starts.
func (m *msgConn) writeOut(out outMsg) {
	err := m.write(out.msg)
	if err == nil {
		return
	}
	if out.call == nil {
		m.disp.logs.log(m.c.baseCtx, m.c.cfg.logger, slog.LevelDebug, "mcp: could not write a message to the server", "server", m.peer.name, "error", err)
		return
	}
	m.mu.Lock()
	waiting := m.calls[out.call.id] == out.call
	m.mu.Unlock()
	if waiting { // else the call has returned, or the reader has failed it
		m.failCall(out.call, m.writeErr(err))
	}
}

// failCall ends call with err, and reports whether it did: not when the call has returned or
// was failed already. The notifications that follow are not the call's any more (a stream
// whose budget was spent would see a gap in their sequence, and fail for it instead).
func (m *msgConn) failCall(call *connCall, err error) bool {
	m.mu.Lock()
	live := m.calls[call.id] == call
	if live {
		delete(m.calls, call.id)
		delete(m.progress, call.token)
	}
	m.mu.Unlock()
	if live {
		call.err = err
		close(call.done)
	}
	return live
}

// flushWait bounds how long a shutdown waits for the writer to write what is queued before it
// closes the server's input (which ends a write that blocks).
const flushWait = time.Second

// stopWriter makes the writer write what is queued and return, waiting up to flushWait for
// it; a write that blocks longer ends when the caller closes the output.
func (m *msgConn) stopWriter(ctx context.Context) {
	select {
	case <-m.stop:
	default:
		close(m.stop)
	}
	waitOr(m.wdone, flushWait, ctx)
}

// listen has nothing to do: the reader routes what the server sends outside calls.
func (m *msgConn) listen(_ *clientSession, ready chan struct{}) {
	defer m.c.bg.Done()
	close(ready)
}

// endSession has nothing to do: a connection is one session, which ends with it.
func (m *msgConn) endSession(context.Context, *clientSession) error { return nil }

// close shuts the connection down, once.
func (m *msgConn) close(ctx context.Context) error {
	m.closing.Do(func() { m.closeErr = m.shutdown(ctx) })
	return m.closeErr
}

// forget drops a call from the routing tables ("" for what it does not have).
func (m *msgConn) forget(id, token string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if id != "" {
		delete(m.calls, id)
	}
	if token != "" {
		delete(m.progress, token)
	}
}

// write writes one message and its newline, on the writer goroutine. A message with line
// breaks in it (whitespace of JSON a caller wrote) is compacted first: a message is one line
// (spec 2025-11-25, Transports, stdio).
func (m *msgConn) write(msg []byte) error {
	msg = bytes.TrimSpace(msg)
	if bytes.ContainsAny(msg, "\r\n") {
		var b bytes.Buffer
		if err := json.Compact(&b, msg); err != nil {
			return fmt.Errorf("mcp: a message to the server is not valid JSON: %w", err)
		}
		msg = b.Bytes()
	}
	// The newline goes in the message's spare capacity when it has some: its encoder made
	// it for this write alone.
	_, err := m.w.Write(append(msg, '\n'))
	return err
}

// writeErr explains a failed write: when the server has gone, why (the reader sees its
// output end at about the same time).
func (m *msgConn) writeErr(err error) error {
	t := time.NewTimer(exitWait + time.Second)
	defer t.Stop()
	select {
	case <-m.done:
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.err
	case <-t.C:
		return fmt.Errorf("mcp: write to the server: %w", err)
	}
}

// read routes each line the server writes until its output ends.
func (m *msgConn) read(r io.Reader) {
	defer close(m.done)
	br := bufio.NewReaderSize(r, 64<<10)
	var err error
	for {
		var line []byte
		line, err = readLine(br, m.maxLine)
		if errors.Is(err, errLineTooLong) {
			m.tooLong(line)
			continue
		}
		if len(line) > 0 {
			m.route(line)
		}
		if err != nil {
			break
		}
	}
	m.end(err)
}

// route delivers one message from the server.
func (m *msgConn) route(line []byte) {
	c := m.c
	msg, rpcErr := decodeMessage(line)
	if rpcErr != nil {
		junk := truncate(string(line), 200)
		m.junk.Store(&junk)
		m.disp.logs.log(c.baseCtx, c.cfg.logger, slog.LevelWarn, "mcp: the server wrote something other than a JSON-RPC message; skipped", "server", m.peer.name, "line", junk, "error", rpcErr.Message)
		return
	}
	m.heard.Store(true)
	if msg.isResponse() {
		m.respond(msg)
		return
	}
	if !m.hold() {
		return // the client is closing: nothing more is handled
	}
	defer c.bg.Done()
	if msg.isRequest() {
		c.serveRequest(c.baseCtx, nil, msg)
		return
	}
	m.notify(msg)
}

// respond hands a response to the call waiting for it.
func (m *msgConn) respond(msg *wireMessage) {
	m.mu.Lock()
	call := m.calls[msg.ID.raw]
	delete(m.calls, msg.ID.raw)
	m.mu.Unlock()
	if call == nil {
		m.disp.logs.log(m.c.baseCtx, m.c.cfg.logger, slog.LevelDebug, "mcp: ignoring a response to no call in progress", "id", msg.ID.short())
		return
	}
	call.resp = msg
	close(call.done)
}

// notify hands a notification to the call that sent its progress token, if any, else to the
// client's handlers.
func (m *msgConn) notify(msg *wireMessage) {
	c := m.c
	var call *connCall
	if msg.Method == notifProgress {
		var p struct {
			ProgressToken json.RawMessage `json:"progressToken"`
		}
		if json.Unmarshal(msg.Params, &p) == nil && len(p.ProgressToken) > 0 {
			m.mu.Lock()
			call = m.progress[string(p.ProgressToken)]
			m.mu.Unlock()
		}
	}
	if call != nil {
		if c.dispatchNotification(&call.disp, msg, call.co, false) && !m.makeRoom(call, msg) {
			m.overflow(call)
		}
	} else {
		c.dispatchNotification(&m.disp, msg, nil, false)
	}
}

// makeRoom frees the client's notification budget, spent when a streamed message of call
// arrives, by failing the call whose messages hold the most of it, when that is another's (a
// stream its caller does not read), and queues the message again. It reports whether the
// message is queued. It waits for the other call's callbacks to give up its bytes for at most
// the close timeout, as the failed call's end cancels them.
func (m *msgConn) makeRoom(call *connCall, msg *wireMessage) bool {
	m.mu.Lock()
	hog, most := call, call.disp.holding()
	for _, other := range m.progress {
		if held := other.disp.holding(); held > most {
			hog, most = other, held
		}
	}
	// The calls failed for holding the budget give it back as their callbacks give up.
	kept := m.overflowed[:0]
	for _, other := range m.overflowed {
		held := other.disp.holding()
		if held == 0 {
			continue
		}
		kept = append(kept, other)
		if held > most {
			hog, most = other, held
		}
	}
	clear(m.overflowed[len(kept):])
	m.overflowed = kept
	m.mu.Unlock()
	if hog == call {
		return false
	}
	m.overflow(hog) // nothing more when it has been failed already
	ctx, cancel := context.WithTimeout(m.c.baseCtx, m.c.cfg.closeTimeout)
	defer cancel()
	if hog.disp.wait(ctx) != nil {
		return false
	}
	return !m.c.dispatchProgress(&call.disp, msg.Params, call.co, false)
}

// overflow fails a call whose streamed messages are not read while more arrive, past the
// client's notification budget: a stream loses none, so the call ends, and the server is told.
func (m *msgConn) overflow(call *connCall) {
	err := fmt.Errorf("the client's notification budget of %d bytes is spent by streamed messages waiting to be read, %d of them this call's (see WithNotificationBudget)", m.c.cfg.notificationBudget, call.disp.holding())
	if m.failCall(call, err) {
		m.mu.Lock()
		m.overflowed = append(m.overflowed, call)
		m.mu.Unlock()
		id := ID{raw: call.id}
		m.c.cancelRemote(call.st, methodToolsCall, &id, context.Background())
	}
}

// hold counts the reader's handling of a message in the client's background work, unless the
// client is closing: Close waits for that work, and none may start once it has begun to.
func (m *msgConn) hold() bool {
	c := m.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.bg.Add(1)
	return true
}

// tooLong handles a line longer than the client's limit from what head (its first bytes)
// says it is. A server request is answered with an error, so that the server's handler does
// not wait for an answer that never comes (spec 2025-11-25, Basic, Requests: a request gets a
// response); a response fails the call it answers, and the server is told that the call is
// over (spec 2025-11-25, Cancellation). Anything else is skipped.
func (m *msgConn) tooLong(head []byte) {
	id, kind := headKind(head)
	switch {
	case kind == headRequest && id != nil:
		m.refuseTooLong(id)
		return
	case kind == headResponse && id != nil:
		m.mu.Lock()
		call := m.calls[id.raw]
		m.mu.Unlock()
		if call != nil && m.failCall(call, fmt.Errorf("a message from the server is larger than the client's limit of %d bytes (see WithMaxEventSize)", m.maxLine)) {
			m.c.cancelRemote(call.st, call.method, id, context.Background())
			return
		}
	}
	m.disp.logs.log(m.c.baseCtx, m.c.cfg.logger, slog.LevelWarn, "mcp: the server wrote a message over the size limit; skipped", "server", m.peer.name, "limit", m.maxLine)
}

// refuseTooLong answers the server's request id, which was too long to read, with an error.
// The answer is posted off the reader, which goes on reading, and counts in the client's
// background work.
func (m *msgConn) refuseTooLong(id *ID) {
	m.disp.logs.log(m.c.baseCtx, m.c.cfg.logger, slog.LevelWarn, "mcp: the server sent a request over the size limit; refused", "server", m.peer.name, "limit", m.maxLine)
	if !m.hold() {
		return // the client is closing: the server's input closes with it
	}
	body := encodeResponse(id, nil, Errorf(CodeInvalidRequest, "request larger than the client's limit of %d bytes (see WithMaxEventSize)", m.maxLine))
	go func() {
		defer m.c.bg.Done()
		ctx, cancel := context.WithTimeout(m.c.baseCtx, m.c.cfg.closeTimeout)
		defer cancel()
		if err := m.post(ctx, nil, body); err != nil {
			m.disp.logs.log(ctx, m.c.cfg.logger, slog.LevelDebug, "mcp: could not refuse a request over the size limit", "error", err)
		}
	}()
}

// end fails the calls still waiting once the server's output has ended, with why it did.
func (m *msgConn) end(readErr error) {
	m.disp.logs.flush(context.Background(), m.c.cfg.logger)
	why := m.why(readErr)
	m.mu.Lock()
	m.err = why
	calls := make([]*connCall, 0, len(m.calls))
	for id, call := range m.calls {
		calls = append(calls, call)
		delete(m.calls, id)
	}
	clear(m.progress)
	m.mu.Unlock()
	for _, call := range calls {
		call.err = why
		close(call.done)
	}
}

// why says why the server's output ended: for a process, how it exited and the end of its
// stderr, which usually says what went wrong.
func (m *msgConn) why(readErr error) error {
	if readErr == nil || errors.Is(readErr, io.EOF) || errors.Is(readErr, io.ErrClosedPipe) {
		readErr = nil
	}
	if m.peer.exited != nil {
		return m.whyExited(readErr)
	}
	switch {
	case readErr != nil:
		return &connClosedError{msg: "reading from the server: " + readErr.Error(), err: readErr}
	case m.peer.name != "":
		return &connClosedError{msg: m.peer.name + " closed its output"}
	}
	return &connClosedError{msg: "the server closed its output"}
}

// whyExited says how the server's process exited, or that it closed its output and lives on.
func (m *msgConn) whyExited(readErr error) error {
	exited, exitErr := m.peer.exited(exitWait)
	tail := m.stderrTail()
	if tail != "" {
		tail = ": " + tail
	}
	if !exited {
		return &connClosedError{msg: m.peer.name + " closed its stdout" + tail, err: readErr}
	}
	status := "exit status 0"
	if exitErr != nil {
		status = exitErr.Error()
	}
	return &connClosedError{msg: fmt.Sprintf("%s exited (%s)%s", m.peer.name, status, tail), err: exitErr}
}

// connClosedError says why a message connection ended; it matches errConnClosed, and the
// process's exit error (an *exec.ExitError) when there is one.
type connClosedError struct {
	msg string
	err error
}

func (e *connClosedError) Error() string { return e.msg }

func (e *connClosedError) Unwrap() []error {
	if e.err == nil {
		return []error{errConnClosed}
	}
	return []error{errConnClosed, e.err}
}

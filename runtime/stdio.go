package runtime

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// ServeStdio serves s over the stdio transport (spec 2025-11-25, Transports, stdio): it reads
// newline-delimited JSON-RPC messages from in and writes the server's messages to out, one per
// line, and nothing else. A host that launches the server as a child process (Claude Desktop,
// VS Code, the MCP Inspector) talks to it this way; everything registered on s (tools,
// prompts, resources, interceptors, requests back to the client) works as over HTTP.
//
// One connection is one session, of the session era (the 2026-07-28 stdio binding is not
// implemented: server/discover gets an error, on which dual-era clients initialize). Each
// message is decoded once and served by the same message core as HTTP's, with the same
// limits: a message over WithMaxBodyBytes gets an error naming its id when its first bytes do,
// invalid JSON gets a JSON-RPC parse error, at most WithMaxInflight requests run at once (more
// get an error), and requests run concurrently: a request's handler runs on the goroutine that
// read it, which hands the reading to a new goroutine as soon as the handler sends anything
// before its answer or has run for 2 ms, so that no request waits longer behind another's
// handler. A handler's messages are written by its own goroutine when nothing else is being
// written, and queued otherwise, within the session's budget
// (WithSessionBudget) and WithMaxQueuedEvents: a client that stops reading out blocks neither
// the reading of in nor the handlers. Caller.CloseSSEStream does nothing here; what HTTP sends
// on the session's GET stream (list_changed, resources/updated) is written to out as well.
// Authorization (WithTokenVerifier) does not apply: a stdio server takes its credentials from its
// environment (spec 2025-11-25, Authorization). Log with a logger that writes to stderr, never
// to out.
//
// ServeStdio returns nil when in ends (EOF) and ctx.Err() when ctx is cancelled; either way it
// first ends the session, which cancels the handlers still running, and waits for them (up to
// 5 seconds). A read of in that is blocked when ctx is cancelled cannot be interrupted unless
// in is closed: close it (an *os.File at exit, an io.PipeReader in tests) to end that read too.
//
// ServeStdio works on any pair of streams, so it also serves in-process clients: connect it
// to NewStdioClient with two io.Pipe pairs.
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c := &lineConn{
		srv:     s,
		ctx:     ctx,
		in:      bufio.NewReaderSize(in, 64<<10),
		limit:   int(min(s.cfg.maxBodyBytes, 1<<40)),
		readErr: make(chan error, 1),
	}
	c.w = newLineWriter(out, s.log, s.cfg.writeTimeout)
	c.w.handOff = c.handOff
	c.timer = time.AfterFunc(time.Hour, c.fire)
	c.timer.Stop()
	go c.readLoop()
	var err error
	select {
	case err = <-c.readErr:
	case <-ctx.Done():
		err = ctx.Err()
	}
	cancel()
	c.close()
	s.logs.flush(context.Background(), s.log) // the counts of the lines the client's messages made
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

// lineConn is one connection of a message-stream transport: its session, once initialize
// started one, the writer of its output, and the goroutines serving its requests.
type lineConn struct {
	srv *Server
	ctx context.Context // cancelled when the connection ends
	w   *lineWriter

	in      *bufio.Reader // read by one goroutine at a time: the reader
	limit   int           // WithMaxBodyBytes
	readErr chan error    // what ended the reading

	mu     sync.Mutex // held while a message is dispatched, and by close
	closed bool
	sess   *session

	wg sync.WaitGroup // the handlers

	// The reader runs each request's handler itself (runInline), unless the handler runs on
	// past handoffDelay or sends something before its answer: then a new goroutine takes
	// over the reading, and the old one ends with the handler. Guarded by rmu.
	rmu        sync.Mutex
	inline     *requestState // the request whose handler runs on the reader, or nil
	inlineFrom time.Duration // when it started, since primerEpoch
	readers    uint64        // how many times the reading was handed over
	timer      *time.Timer   // hands off from handlers that run past handoffDelay
	armed      bool          // the timer will fire
	stopped    bool          // the connection ended: no new reader
}

// replyLimit is how many bytes of queued output the reader's own answers (to malformed
// input, to initialize) wait behind: past it, the reader stops reading until the client reads.
const replyLimit = 1 << 20

// handoffDelay is how long a handler runs on the reader's goroutine before another goroutine
// takes the reading over: the longest a request waits behind another's handler to be read.
const handoffDelay = 2 * time.Millisecond

// readLoop reads messages and serves each, until the input ends, the connection closes, or
// another goroutine takes the reading over while this one runs a handler. A request's
// handler runs on this goroutine, which then writes its answer: a call that only answers costs
// no hand-off between goroutines (each a thread wake-up on an idle machine).
func (c *lineConn) readLoop() {
	for {
		line, tooLong, err := readMessage(c.in, c.limit)
		rs := c.serveRead(line, tooLong)
		if err != nil {
			if rs != nil {
				go c.run(rs)
			}
			c.readErr <- err
			return
		}
		if rs != nil && !c.runInline(rs) {
			return // another goroutine reads now
		}
		if err := c.ctx.Err(); err != nil {
			c.readErr <- err
			return
		}
	}
}

// serveRead serves what readMessage read: the head of a message too long, which is refused, or
// a message, whose request it returns, admitted, for the caller to run.
func (c *lineConn) serveRead(line, tooLong []byte) *requestState {
	var rs *requestState
	if tooLong != nil {
		c.locked(func() { c.tooLong(tooLong) })
	} else if len(line) > 0 {
		c.locked(func() { rs = c.dispatch(line) })
	}
	return rs
}

// runInline runs rs's handler on the reader's goroutine, and reports whether this goroutine
// is still the reader afterwards.
func (c *lineConn) runInline(rs *requestState) bool {
	c.rmu.Lock()
	c.inline, c.inlineFrom = rs, time.Since(primerEpoch)
	gen := c.readers
	if !c.armed && !c.stopped {
		// One timer for the connection, armed while handlers run: not one per call.
		c.armed = true
		c.timer.Reset(handoffDelay)
	}
	c.rmu.Unlock()
	c.run(rs)
	c.rmu.Lock()
	reader := c.readers == gen
	if c.inline == rs {
		c.inline = nil
	}
	c.rmu.Unlock()
	return reader
}

// handOffLocked gives the reading to a new goroutine: the one running c.inline's handler
// stops reading when the handler returns. c.rmu is held.
func (c *lineConn) handOffLocked() {
	c.readers++
	c.inline = nil
	go c.readLoop()
}

// handOff starts a new reader when the handler running on the reader's goroutine sends a
// message on st before its answer: it may wait for the client's answer (an elicitation), which
// only a reader can read.
func (c *lineConn) handOff(st *stream) {
	c.rmu.Lock()
	if c.inline != nil && c.inline.st == st && !c.stopped {
		c.handOffLocked()
	}
	c.rmu.Unlock()
}

// fire starts a new reader when the handler on the reader's goroutine has run for
// handoffDelay, and re-arms the timer while one runs that is not yet due.
func (c *lineConn) fire() {
	now := time.Since(primerEpoch)
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if c.inline != nil && !c.stopped {
		if due := c.inlineFrom + handoffDelay; due > now {
			c.timer.Reset(due - now)
			return
		}
		c.handOffLocked()
	}
	c.armed = false
}

// locked runs f while the connection is open, under its lock: close waits for a message
// being dispatched, and none is dispatched after it.
func (c *lineConn) locked(f func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		f()
	}
}

// readMessage reads one line, trimmed, into a slice of its own (handlers keep views of it),
// skipping blank lines. A line over limit bytes is skipped; its first bytes are returned as
// head, for its id.
func readMessage(r *bufio.Reader, limit int) (line, head []byte, err error) {
	for {
		chunk, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			return readLong(r, chunk, limit)
		}
		if len(chunk) > limit+2 {
			return nil, bytes.Clone(chunk[:min(len(chunk), 512)]), err
		}
		chunk = bytes.TrimSpace(chunk)
		if len(chunk) == 0 && err == nil {
			continue
		}
		return bytes.Clone(chunk), nil, err // ReadSlice's is r's buffer
	}
}

// readLong reads the rest of a line longer than r's buffer, whose first part is first; past
// limit, it keeps only the line's first bytes, as head.
func readLong(r *bufio.Reader, first []byte, limit int) (line, head []byte, err error) {
	long := append([]byte(nil), first...)
	for {
		chunk, err := r.ReadSlice('\n')
		if head == nil {
			long = append(long, chunk...)
			if len(long) > limit+2 {
				head, long = bytes.Clone(long[:512]), nil
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if head != nil {
			return nil, head, err
		}
		return bytes.TrimSpace(long), nil, err
	}
}

// reply writes an answer of the reader's, behind what is being written.
func (c *lineConn) reply(data []byte) {
	c.w.sendWait(c.ctx, data, replyLimit)
}

// tooLong answers a message over the size limit, with its id when its first bytes name it;
// c.mu is held. The client's response to a request of the server's (an elicitation's answer, say) is not
// answered, since a response gets no response (JSON-RPC 2.0, Response object): the request
// waiting for it fails at once with the error, rather than at its timeout.
func (c *lineConn) tooLong(head []byte) {
	id, kind := headKind(head)
	response := kind == headResponse
	err := Errorf(CodeInvalidRequest, "message exceeds the limit of %d bytes", c.srv.cfg.maxBodyBytes)
	if response {
		sess := c.sess // c.mu is held (serveRead)
		if id == nil || sess == nil || !sess.deliverResponse(&wireMessage{ID: id, Error: Errorf(CodeInvalidRequest, "the client's response exceeds the server's limit of %d bytes (WithMaxBodyBytes)", c.srv.cfg.maxBodyBytes)}) {
			c.srv.peerWarn("mcp: a response from the client over the size limit, to no request awaiting one", "limit", c.srv.cfg.maxBodyBytes)
		}
		return
	}
	c.reply(encodeResponse(id, nil, err))
}

// dispatch serves one message. initialize, notifications and responses are served in order,
// before the next message is read, so that what they change (the session, a cancellation,
// an answer a handler waits for) is in place for the messages after them; each request runs
// on a goroutine of its own.
func (c *lineConn) dispatch(line []byte) *requestState {
	if line[0] == '[' {
		c.batch(line)
		return nil
	}
	msg, rpcErr := decodeMessage(line)
	if rpcErr != nil {
		c.reply(encodeResponse(msg.idOrNil(), nil, rpcErr))
		return nil
	}
	return c.serveMessage(msg)
}

// serveMessage serves one decoded message; a request is admitted and returned, for the
// caller to run.
func (c *lineConn) serveMessage(msg *wireMessage) *requestState {
	if msg.Method == methodInitialize {
		c.initialize(msg)
		return nil
	}
	sess := c.sess
	if sess == nil {
		c.beforeInitialize(msg)
		return nil
	}
	sess.touch()
	sess.establish()
	return c.serveSessionMessage(sess, msg)
}

// serveSessionMessage serves a message of the connection's session by its kind: a
// notification is acted on, a response delivered, a request admitted and returned.
func (c *lineConn) serveSessionMessage(sess *session, msg *wireMessage) *requestState {
	switch {
	case msg.isNotification():
		c.srv.handleNotification(sess, msg)
	case msg.isResponse():
		if !sess.deliverResponse(msg) {
			// A response gets no answer (JSON-RPC 2.0, Response object): logged only.
			c.srv.peerWarn("mcp: response to an unknown request", "session", sess.id, "id", msg.ID.short())
		}
	default:
		return c.serveRequest(sess, msg)
	}
	return nil
}

// initialize starts the connection's session.
func (c *lineConn) initialize(msg *wireMessage) {
	if !msg.isRequest() {
		c.reply(encodeResponse(nil, nil, NewError(CodeInvalidRequest, "initialize must be a request with an id")))
		return
	}
	if c.sess != nil && !c.sess.isEnded() {
		c.reply(encodeResponse(msg.ID, nil, NewError(CodeInvalidRequest, "this connection's session is already initialized: initialize is sent once per connection")))
		return
	}
	// A session the server ended (it made room in a full session table, say) is replaced:
	// the client's next initialize starts another on the same connection.
	select {
	case <-c.srv.closing:
		c.reply(encodeResponse(msg.ID, nil, NewError(CodeInternalError, "server is shutting down")))
		return
	default:
	}
	sess, body, _ := c.srv.initialize(c.ctx, msg, nil, nil, "", c.w)
	c.sess = sess
	c.reply(body)
}

// beforeInitialize answers a message that came before initialize: a ping is answered (spec
// 2025-11-25, Lifecycle, Initialization), other requests get an error, and notifications and
// responses are dropped.
func (c *lineConn) beforeInitialize(msg *wireMessage) {
	switch {
	case !msg.isRequest():
		c.srv.peerDebug("mcp: ignoring a message before initialize", "method", msg.Method)
	case msg.Method == methodPing:
		c.reply(encodeResponse(msg.ID, []byte("{}"), nil))
	default:
		c.reply(encodeResponse(msg.ID, nil, NewError(CodeInvalidRequest, "session not initialized: send initialize first")))
	}
}

// serveRequest admits one request, for the caller to run its handler (run); its messages and
// its response go to the connection's writer (conn.go).
func (c *lineConn) serveRequest(sess *session, msg *wireMessage) *requestState {
	if msg.Method == methodToolsCall {
		if rpcErr := c.srv.scopeRefusal(msg); rpcErr != nil {
			c.reply(encodeResponse(msg.ID, nil, rpcErr))
			return nil
		}
	}
	rs, rpcErr, _ := c.srv.openRequest(sess, msg, nil, nil, nil)
	if rpcErr != nil {
		c.reply(encodeResponse(msg.ID, nil, rpcErr))
		return nil
	}
	c.wg.Add(1) // under c.mu, before close waits
	return rs
}

// run runs a request's handler, which writes its response.
func (c *lineConn) run(rs *requestState) {
	defer c.wg.Done()
	rs.Run()
}

// scopeRefusal refuses a tools/call of a tool that needs OAuth scopes: a message-stream
// transport carries no access token.
func (s *Server) scopeRefusal(msg *wireMessage) *Error {
	if t := s.scopedTool(msg.Params); t != nil && t.listing.shows(s.baseCtx, nil) { // a hidden one is unknown (WithVisibility)
		return Errorf(CodeInvalidRequest, "forbidden: tool %q needs an access token with the scopes %s, and stdio carries none", truncate(t.tool.Name, 64), strings.Join(t.scopes, " "))
	}
	return nil
}

// batch serves a JSON-RPC batch, on a session that negotiated 2025-03-26 only (batch.go): its
// members are served as if each came on its own line, and answered each on its own line.
func (c *lineConn) batch(line []byte) {
	if c.sess == nil || c.sess.version() != ProtocolVersion20250326 {
		c.reply(encodeResponse(nil, nil, NewError(CodeInvalidRequest, "JSON-RPC batches are accepted only on sessions that negotiated protocol version 2025-03-26 (batching was removed from MCP in 2025-06-18); send one message per line")))
		return
	}
	elems, rpcErr := splitBatch(line, c.srv.cfg.maxBatch)
	if rpcErr != nil {
		c.reply(encodeResponse(nil, nil, rpcErr))
		return
	}
	for _, raw := range elems {
		if rs := c.batchMember(raw); rs != nil {
			go c.run(rs) // each of a batch's requests at once
		}
	}
}

// batchMember serves one member of a batch as a message of its own line, but initialize,
// which must not be part of a batch; a request is admitted and returned, for the caller to
// run.
func (c *lineConn) batchMember(raw []byte) *requestState {
	msg, rpcErr := decodeMessage(raw)
	if rpcErr != nil {
		c.reply(encodeResponse(msg.idOrNil(), nil, rpcErr))
		return nil
	}
	if msg.Method == methodInitialize {
		c.reply(encodeResponse(msg.ID, nil, NewError(CodeInvalidRequest, "initialize must not be part of a batch")))
		return nil
	}
	return c.serveMessage(msg)
}

// close ends the session, which cancels its handlers and closes its streams, and waits, within
// a bound, for the handlers and then for what they queued to be written.
func (c *lineConn) close() {
	c.mu.Lock()
	c.closed = true
	sess := c.sess
	c.mu.Unlock()
	c.rmu.Lock()
	c.stopped = true
	c.timer.Stop()
	c.rmu.Unlock()
	if sess != nil {
		c.srv.endSession(sess)
	}
	bound := time.NewTimer(5 * time.Second)
	defer bound.Stop()
	done := make(chan struct{})
	go func() {
		c.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-bound.C:
		if c.w.writing() {
			c.srv.log.Error("mcp: stdio output blocked 5 s after the connection ended: the client does not read it (a write gives up after WithWriteTimeout where the output takes a deadline)")
		} else {
			c.srv.log.Error("mcp: stdio handlers still running 5 s after the connection ended; they ignore their context")
		}
		return
	}
	if !c.w.waitIdle(bound.C) {
		c.srv.log.Error("mcp: stdio output not written 5 s after the connection ended: the client does not read")
	}
}

// errStdioClosed is returned when the connection's process or pipes are gone.
var errStdioClosed = fmt.Errorf("mcp: the stdio connection is closed")

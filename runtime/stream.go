package runtime

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// errStreamFull is returned to a handler whose stream holds more undelivered events than the
// limit allows (the client stopped reading).
var errStreamFull = errors.New("mcp: stream is full: the client is not reading its events")

// errStreamDone is returned when a handler sends on a stream after its response.
var errStreamDone = errors.New("mcp: the request has already been answered")

// streamEvent is one message queued on a stream.
type streamEvent struct {
	seq    uint64
	data   []byte
	final  bool     // the response that ends a request stream
	pooled *wireBuf // data's buffer, reusable once data was written (nil: something may keep data)
	status int      // the HTTP status of a response sent as plain JSON, when not 200
}

// stream is an ordered sequence of messages bound for the client: the messages of one POSTed
// request (its notifications and requests, then its response), or the session's standalone
// GET stream. Sends never block: they append to a bounded queue and wake the writer, which is
// whichever HTTP response is attached to the stream at the time (the POST's own response, or a
// GET that resumed it). A stream outlives a dropped connection, so that the client can resume
// it; nothing is removed from the queue except by a writer.
type stream struct {
	id         string
	sess       *session
	standalone bool
	// The request's handler runs on its POST's goroutine (inline.go): inline while it runs,
	// inlineReturned once it has; inlineProto is the POST's HTTP/1 minor version, or -1.
	inline         bool
	inlineReturned bool
	inlineProto    int8
	maxQueue       int32

	mu       sync.Mutex
	queue    []streamEvent
	seq      uint64
	queued   int64  // bytes of queue's data, charged to the session's budget
	owner    uint64 // the generation of the writer that holds it; a resume takes over
	done     bool   // the final event has been queued
	attached bool   // a writer holds the stream
	stored   bool   // events went to the event store
	closed   bool   // the session ended
	kicked   bool   // a handler asked to close the connection (SSE polling)
	// In a replica set (cluster.go): whether the shared event store has been told of the
	// stream, and whether a kick gave the client an event ID (the priming event's) to resume
	// from; and below, the JSON of the id of the request the stream answers.
	opened    bool
	wasKicked bool
	inlineSSE bool // an inline handler's stream answers with SSE: its writer starts with the priming event
	// kickSeq is the sequence number of the newest event queued before the kick: the kicked
	// writer writes up to it, and what the handler sent after the kick waits for the
	// connection the client resumes with.
	kickSeq   uint64
	requestID []byte
	// abortOwner closes the connection of the writer that holds the stream; a takeover calls
	// it, so that the writer it replaces stops at once even when it is blocked writing to a
	// client that does not read.
	abortOwner *sseWriter
	first      sseWriter // the writer of the stream's first attach, a request's POST (serveStream)
	// inlineDone is closed when the writer started while an inline handler ran returns.
	inlineDone chan struct{}

	wake chan struct{} // capacity 1: new events, or kicked

	// On the server's primer's wait list while an inline SSE answer's handler runs
	// (inline.go), guarded by the primer's lock.
	primePrev, primeNext *stream
	primeDue             time.Duration
	primeWaiting         bool
	// lineQueued counts the stream's messages queued on its session's lineWriter (conn.go),
	// guarded by that writer's lock. It sits here, in what was padding, so that the stream of
	// an HTTP request stays in its size class.
	lineQueued int32
}

func newStream(sess *session, id string, standalone bool, maxQueue int) *stream {
	return &stream{id: id, sess: sess, standalone: standalone, maxQueue: int32(min(maxQueue, math.MaxInt32)), wake: make(chan struct{}, 1)}
}

func (st *stream) signal() {
	select {
	case st.wake <- struct{}{}:
	default:
	}
}

// send queues a message. It never blocks.
func (st *stream) send(data []byte, final bool) error {
	return st.sendEvent(streamEvent{data: data, final: final})
}

// sendEvent queues ev (its seq is set here). It never blocks.
func (st *stream) sendEvent(ev streamEvent) error {
	if st.sess.line != nil {
		return st.sendLine(ev) // a message-stream transport's session (conn.go)
	}
	st.mu.Lock()
	if err := st.admitLocked(&ev); err != nil {
		st.mu.Unlock()
		if err == errResponseDropped {
			st.sess.removeStream(st.id)
		}
		return err
	}
	start := st.enqueueLocked(ev)
	st.mu.Unlock()
	st.signal()
	if start {
		st.startWriter()
	}
	return nil
}

// enqueueLocked appends ev, admitted, to the queue with the stream's next sequence number,
// and reports whether the stream's writer must start: an inline handler's stream gets one
// when it sends more than its response (inline.go). st.mu is held.
func (st *stream) enqueueLocked(ev streamEvent) (start bool) {
	st.queued += int64(len(ev.data))
	st.seq++
	ev.seq = st.seq
	st.queue = append(st.queue, ev)
	if ev.final {
		st.done = true
	}
	return st.inline && !ev.final && st.inlineDone == nil
}

// admitLocked checks that ev may be queued, charges its bytes to the session's budget and, in
// a replica set, stores it. st.mu is held.
func (st *stream) admitLocked(ev *streamEvent) error {
	switch {
	case st.closed:
		return ErrClosed
	case st.done:
		return errStreamDone
	case len(st.queue) >= int(st.maxQueue) && !ev.final:
		// The response itself always fits (one past the limit at most, since it is the
		// last event): dropping it would leave the client waiting for it forever.
		return errStreamFull
	}
	n := int64(len(ev.data))
	if !st.sess.reserve(n, false) {
		if err := st.overBudgetLocked(ev.final, n); err != nil {
			return err
		}
	}
	return st.storeSharedLocked(ev, n)
}

// overBudgetLocked decides the fate of an event of n bytes that the budget has no room for: a
// notification or request fails; a response goes out to a connected client all the same, and
// is dropped, with its stream, when its client went away. st.mu is held.
func (st *stream) overBudgetLocked(final bool, n int64) error {
	if !final {
		return errBudget
	}
	if !st.attached && !st.standalone {
		// The client went away and there is no room to keep its response until it
		// resumes: drop the stream; a resumption gets 404 and the client learns the
		// request's fate is unknown, rather than the server holding unbounded responses.
		st.releaseQueueLocked()
		st.queue = nil
		st.done, st.closed = true, true
		return errResponseDropped
	}
	st.sess.reserve(n, true) // a connected client is reading: its response goes out
	return nil
}

// storeSharedLocked stores ev (n bytes, charged) in a replica set's shared event store before
// any client can see it, so that a client resuming on another replica finds it. A response
// that is the stream's only event goes out as plain JSON, which cannot be resumed, and is not
// stored (unless the client holds an event ID of the stream: SSE responses, or a kicked
// connection). st.mu is held.
func (st *stream) storeSharedLocked(ev *streamEvent, n int64) error {
	c := st.sess.server.cluster
	if c == nil || !st.sharesLocked(ev) {
		return nil
	}
	ev.pooled = nil // the shared store may keep data: the buffer is not reused
	if err := c.storeEvent(st, st.seq+1, ev.data); err != nil {
		st.sess.server.peerWarn("mcp: the shared event store refused an event", "session", st.sess.id, "stream", st.id, "error", err)
		if !ev.final {
			st.sess.release(n)
			return fmt.Errorf("mcp: the shared event store is unavailable: %w", err)
		}
		// The response still goes to a client that is connected.
	}
	return nil
}

// sharesLocked reports whether ev goes to a replica set's shared event store: an event of a
// request stream of the 2025-11-25 era, but not a response that goes out alone as plain
// JSON. st.mu is held.
func (st *stream) sharesLocked(ev *streamEvent) bool {
	if st.standalone || st.sess.stateless || ev.data == nil {
		return false
	}
	return !ev.final || st.seq != 0 || st.wasKicked || st.sess.server.cfg.alwaysSSE
}

// kick asks the attached writer to close its connection without ending the stream, after
// telling the client (retry:) when to reconnect.
func (st *stream) kick() {
	if st.sess.line != nil {
		return // one stream carries the whole session: there is no connection to close
	}
	st.mu.Lock()
	st.kicked, st.wasKicked = true, true
	st.kickSeq = st.seq
	start := st.inline && st.inlineDone == nil
	st.mu.Unlock()
	st.signal()
	if start {
		st.startWriter()
	}
}

// close marks the stream dead (its session ended) and wakes the writer.
//
// Its queue stays for a writer to deliver (a shutdown's error responses), but no longer counts
// against the budgets: the session is gone.
func (st *stream) close() {
	st.mu.Lock()
	st.releaseQueueLocked()
	st.closed = true
	st.mu.Unlock()
	st.signal()
}

// releaseQueueLocked returns the bytes of the queue to the budgets. st.mu is held.
func (st *stream) releaseQueueLocked() {
	st.sess.release(st.queued)
	st.queued = 0
}

// take removes and returns the queued events for the writer of generation my, and reports
// whether a kick was requested, whether the session ended, and whether another writer took the
// stream over (lost: the caller must stop). Unless they will go out as a plain JSON answer
// (asJSON and the response is the only event), the events are recorded in store under the same
// lock, so that a writer taking over replays exactly what earlier writers took.
//
// It takes about sseChunk bytes of events at a time (at least one event), so that the writer
// holds no more than that outside the queue, where the rest stays charged to the session's
// budget; more reports that events are left, and then kicked and closed wait for a later take.
func (st *stream) take(my uint64, store EventStore, asJSON bool) (evs []streamEvent, kicked, closed, lost, more bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.owner != my {
		return nil, false, st.closed, true, false
	}
	limit := st.takeLimitLocked()
	n, size := st.chunkLocked(limit)
	switch n {
	case len(st.queue):
		evs, st.queue = st.queue, nil // the common case: everything, without a copy
		st.releaseQueueLocked()
		kicked, st.kicked = st.kicked, false
		closed = st.closed
	case limit:
		// Everything queued before the kick, the rest left for the resumed connection.
		evs = st.takeFrontLocked(n, size)
		kicked, st.kicked = true, false
		closed = st.closed
	default:
		evs = st.takeFrontLocked(n, size)
		more = true
	}
	if store != nil && len(evs) > 0 && st.storesTaken(asJSON, evs) {
		st.storeLocked(store, evs)
	}
	return evs, kicked, closed, false, more
}

// takeLimitLocked returns how many queued events a writer may take: all of them, but for a
// kicked writer only what was queued before the kick (CloseSSEStream): what the handler sent
// after it goes out on the connection the client resumes with, even when it is already
// queued by the time this writer looks. st.mu is held.
func (st *stream) takeLimitLocked() int {
	limit := len(st.queue)
	if st.kicked {
		for limit > 0 && st.queue[limit-1].seq > st.kickSeq {
			limit--
		}
	}
	return limit
}

// chunkLocked returns how many of the first limit queued events make about sseChunk bytes
// (at least one, when there is one), and their size. st.mu is held.
func (st *stream) chunkLocked(limit int) (n, size int) {
	for n < limit && (n == 0 || size < sseChunk) {
		size += len(st.queue[n].data)
		n++
	}
	return n, size
}

// takeFrontLocked removes the first n queued events, of size bytes, returning a copy of them
// and clearing their slots: the queue's array must not keep them alive. st.mu is held.
func (st *stream) takeFrontLocked(n, size int) []streamEvent {
	if n == 0 {
		return nil
	}
	evs := append([]streamEvent(nil), st.queue[:n]...)
	clear(st.queue[:n])
	st.queue = st.queue[n:]
	st.sess.release(int64(size))
	st.queued -= int64(size)
	return evs
}

// storesTaken reports whether the events a writer took go to the event store: not in the
// modern era (no resumption), not a request stream's in a replica set (stored when queued,
// sendEvent), and not a response that goes out alone as a plain JSON answer (asJSON).
func (st *stream) storesTaken(asJSON bool, evs []streamEvent) bool {
	if st.sess.stateless || (!st.standalone && st.sess.server.cluster != nil) {
		return false
	}
	return !asJSON || !isLoneResponse(evs)
}

// storeLocked appends the events evs to store, for a resumption to replay. st.mu is held.
func (st *stream) storeLocked(store EventStore, evs []streamEvent) {
	for _, ev := range evs {
		if ev.data == nil {
			continue
		}
		data := ev.data
		if ev.pooled.reusable() {
			// The store may keep data (EventStore.Append does not say): it gets a
			// right-sized copy, and the result buffer goes back to its pool once written.
			data = append([]byte(nil), data...)
		}
		if err := store.Append(context.Background(), st.sess.id, st.id, ev.seq, data); err != nil {
			st.sess.server.peerWarn("mcp: event store append failed; the event cannot be replayed", "session", st.sess.id, "stream", st.id, "error", err)
			continue
		}
		st.stored = true
	}
}

// attach claims the stream for a new writer. It fails if another writer holds it.
func (st *stream) attach() (uint64, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.attached {
		return 0, false
	}
	st.owner++
	st.attached = true
	return st.owner, true
}

// takeover claims the stream for a resuming writer, even from a writer that still holds it
// (its connection may be dead without the server having noticed yet): that writer stops at its
// next take.
//
// The writer it replaces has its connection closed (abort): the Streamable HTTP transport
// allows one connection per stream, and a replaced writer blocked on a client that does not
// read would otherwise hold its goroutine, its buffer and its connection until the write
// timeout.
func (st *stream) takeover(sw *sseWriter) uint64 {
	st.mu.Lock()
	st.owner++
	st.attached = true
	my := st.owner
	prev := st.abortOwner
	st.abortOwner = sw
	st.mu.Unlock()
	if prev != nil {
		prev.abort()
	}
	st.signal()
	return my
}

// setAbort records the writer of generation my, for a takeover to abort.
func (st *stream) setAbort(my uint64, sw *sseWriter) {
	st.mu.Lock()
	if st.owner == my {
		st.abortOwner = sw
	}
	st.mu.Unlock()
}

// lastSeq returns the sequence number of the newest event queued on the stream.
func (st *stream) lastSeq() uint64 {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.seq
}

// detach releases the stream, if the writer of generation my still holds it.
func (st *stream) detach(my uint64) {
	st.mu.Lock()
	if st.owner == my {
		st.attached = false
		st.abortOwner = nil
	}
	st.mu.Unlock()
}

// eventID formats the SSE id of an event: the stream's ID and the event's sequence number, so
// that a Last-Event-ID names the stream it came from.
func eventID(streamID string, seq uint64) string {
	return streamID + "_" + strconv.FormatUint(seq, 10)
}

// parseEventID splits an SSE id made by eventID.
func parseEventID(id string) (streamID string, seq uint64, ok bool) {
	i := strings.LastIndexByte(id, '_')
	if i <= 0 {
		return "", 0, false
	}
	n, err := strconv.ParseUint(id[i+1:], 10, 64)
	if err != nil {
		return "", 0, false
	}
	return id[:i], n, true
}

// sseChunk is how many bytes of SSE events a writer buffers before it writes them out: a
// replay or a long queue goes out in pieces of about this size, never as one buffer holding
// everything (a client that does not read would pin that buffer until the write timeout).
const sseChunk = 32 << 10

// errWriterAborted is returned by sseWriter.flush once another writer took the stream over.
var errWriterAborted = errors.New("mcp: the stream was taken over by a newer connection")

// sseWriter frames SSE events onto an HTTP response.
type sseWriter struct {
	w    http.ResponseWriter
	buf  []byte
	pbuf *sseBuf // buf's pool handle, when it came from the pool (putBuf)
	// replayedThrough is the newest event a resumption replayed from the store: in a replica
	// set, events are stored when queued (cluster.go), so the queue may hold some of them too.
	replayedThrough uint64
	timeout         time.Duration

	ctx    context.Context    // the request's context
	cancel context.CancelFunc // set by cancellable: cancels ctx, for abort to stop a replay

	// started and sent sit next to mu, whose alignment is 4, to share a word with it: the
	// writer lives in the stream, whose size class this keeps (256 bytes).
	started bool // the response is SSE (headers set)
	sent    bool // bytes have gone out: the headers are on the wire

	mu       sync.Mutex
	aborted  bool // abort was called: writes fail
	finished bool // the handler is returning: abort must not touch the response any more
}

// newSSEWriter returns a writer for w.
func newSSEWriter(ctx context.Context, w http.ResponseWriter, timeout time.Duration) *sseWriter {
	return &sseWriter{w: w, timeout: timeout, ctx: ctx}
}

// cancellable makes the writer's context end on abort as well (for a replay, which watches
// it). The writer loop of serveStream needs no such context: a takeover wakes it, and it finds
// the stream lost.
func (sw *sseWriter) cancellable() {
	sw.ctx, sw.cancel = context.WithCancel(sw.ctx)
}

// abort makes the writer stop: a write in progress fails at once (its deadline is moved to
// now), so do later ones, and a cancellable context ends. It may be called from any
// goroutine, any number of times.
func (sw *sseWriter) abort() {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if sw.finished || sw.aborted {
		return
	}
	sw.aborted = true
	if sw.cancel != nil {
		sw.cancel()
	}
	setWriteDeadline(sw.w, time.Now())
	// A writer waiting for events (not writing) is woken by the takeover's signal, unless the
	// new writer takes that signal first; the read deadline makes net/http's background read
	// of the connection fail, which cancels the request's context, so it stops either way
	// (and closes an inline handler's connection: awaitEvents).
	setReadDeadline(sw.w, time.Now())
}

// finish marks the writer done; abort does nothing afterwards, since the connection may
// already serve another request. Its buffer goes back to the pool. Only the writer's own
// goroutine calls it.
func (sw *sseWriter) finish() {
	sw.mu.Lock()
	sw.finished = true
	sw.mu.Unlock()
	if sw.cancel != nil {
		sw.cancel()
	}
	sw.putBuf()
}

// sseBufs holds the buffers of finished SSE writers (*sseBuf), up to 4*sseChunk bytes each.
var sseBufs sync.Pool

// sseBuf is a pooled SSE writer buffer; the pointer is kept with the writer, so that putting the
// buffer back allocates nothing.
type sseBuf struct{ b []byte }

// getBuf gives the writer a buffer, from the pool when it holds one: room for the priming
// event and a small message after it at least, which go out in one write.
func (sw *sseWriter) getBuf() {
	if pb, _ := sseBufs.Get().(*sseBuf); pb != nil {
		sw.pbuf, sw.buf = pb, pb.b[:0]
		return
	}
	sw.buf = make([]byte, 0, 512)
}

// putBuf returns the writer's buffer to the pool, unless a large event made it large. sw.buf
// is nil afterwards (an append makes a new one).
func (sw *sseWriter) putBuf() {
	if sw.buf == nil || cap(sw.buf) > 4*sseChunk {
		sw.buf, sw.pbuf = nil, nil
		return
	}
	pb := sw.pbuf
	if pb == nil {
		pb = new(sseBuf)
	}
	pb.b = sw.buf[:0]
	sw.buf, sw.pbuf = nil, nil
	sseBufs.Put(pb)
}

func (sw *sseWriter) header() {
	h := sw.w.Header()
	h["Content-Type"] = contentTypeSSE
	h["Cache-Control"] = cacheControlSSE
	h["X-Accel-Buffering"] = accelBufferingNo
	sw.started = true
}

// priming appends the priming event: an ID and an empty data field (so that the client has a
// Last-Event-ID before any message), and the retry interval. It is written raw because it
// must carry an empty data line.
func (sw *sseWriter) priming(id string, retry time.Duration) {
	if sw.buf == nil {
		sw.getBuf()
	}
	sw.buf = append(sw.buf, "id: "...)
	sw.buf = append(sw.buf, id...)
	if retry > 0 {
		sw.buf = append(sw.buf, "\nretry: "...)
		sw.buf = strconv.AppendInt(sw.buf, retry.Milliseconds(), 10)
	}
	sw.buf = append(sw.buf, "\ndata: \n\n"...)
}

// retry appends a retry-only field block, sent before a server-initiated close.
func (sw *sseWriter) retry(retry time.Duration) {
	sw.buf = append(sw.buf, "retry: "...)
	sw.buf = strconv.AppendInt(sw.buf, retry.Milliseconds(), 10)
	sw.buf = append(sw.buf, "\n\n"...)
}

// event appends one message event. JSON-RPC messages are single-line JSON, so one data line.
func (sw *sseWriter) event(streamID string, seq uint64, data []byte) {
	if sw.buf == nil {
		sw.getBuf()
	}
	sw.buf = append(sw.buf, "event: message\nid: "...)
	sw.buf = append(sw.buf, streamID...)
	sw.buf = append(sw.buf, '_')
	sw.buf = strconv.AppendUint(sw.buf, seq, 10)
	sw.buf = append(sw.buf, "\ndata: "...)
	sw.buf = append(sw.buf, data...)
	sw.buf = append(sw.buf, "\n\n"...)
}

// eventChunked writes one message event whose data is over sseChunk bytes straight from data,
// sseChunk bytes at a time, after what is buffered: a large event (a replayed one shared with
// the event store, or a queued response) is never copied whole into the writer's buffer. Its
// closing blank line stays buffered, for the next write.
func (sw *sseWriter) eventChunked(streamID string, seq uint64, data []byte) error {
	sw.event(streamID, seq, nil) // the event's head, "data: " last
	sw.buf = sw.buf[:len(sw.buf)-2]
	if err := sw.armWrite(); err != nil {
		return err
	}
	sw.sent = true
	_, err := sw.w.Write(sw.buf)
	sw.buf = recycle(sw.buf)
	for off := 0; err == nil && off < len(data); off += sseChunk {
		if err = sw.armWrite(); err == nil {
			_, err = sw.w.Write(data[off:min(off+sseChunk, len(data))])
		}
	}
	if sw.buf == nil {
		sw.getBuf()
	}
	sw.buf = append(sw.buf, "\n\n"...)
	return err
}

// flush writes the buffered bytes and, unless last, flushes them to the network. The last
// write of a stream is not flushed: net/http then sends it together with the end of the
// chunked body, so that a client that stops reading at the response event still finds the
// body at EOF and keeps its connection.
func (sw *sseWriter) flush(last bool) error {
	if err := sw.armWrite(); err != nil {
		return err
	}
	if len(sw.buf) > 0 {
		sw.sent = true
		_, err := sw.w.Write(sw.buf)
		sw.buf = recycle(sw.buf)
		if err != nil {
			return err
		}
	}
	if last {
		return nil
	}
	sw.sent = true
	return flushResponse(sw.w)
}

// armWrite lets a write begin unless the writer was aborted, setting its deadline: it bounds
// the write, and net/http's flush of the last one (it clears the deadline once the response
// is finished). Under the lock: an abort after it moves the deadline back to now.
func (sw *sseWriter) armWrite() error {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if sw.aborted {
		return errWriterAborted
	}
	if sw.timeout > 0 {
		setWriteDeadline(sw.w, time.Now().Add(sw.timeout))
	}
	return nil
}

// recycle empties a write buffer that was written out, for the next events; a large event's
// buffer is not kept.
func recycle(buf []byte) []byte {
	if cap(buf) > 4*sseChunk {
		return nil
	}
	return buf[:0]
}

// streamMode says how serveStream starts a response.
type streamMode int

const (
	// modeAuto answers plain JSON when the response is the stream's first event, else SSE.
	modeAuto streamMode = iota
	// modeSSE starts an SSE response at once, with a priming event.
	modeSSE
	// modeResume starts an SSE response at once without a priming event (a resumed stream),
	// after the caller has written replayed events into sw.
	modeResume
)

// serveStream attaches an HTTP response to st and writes its events until the stream ends, the
// client goes away, or a handler kicks the connection.
func (s *Server) serveStream(ctx context.Context, w http.ResponseWriter, st *stream, my uint64, mode streamMode, sw *sseWriter) {
	defer st.detach(my)
	if sw == nil {
		sw = s.streamWriter(ctx, w, st, my)
	}
	defer sw.finish()
	ctx = sw.ctx
	st.setAbort(my, sw)
	if !s.startResponse(st, sw, mode) {
		return
	}
	var keepAlive <-chan time.Time
	if t := s.keepAliveTicker(st); t != nil {
		defer t.Stop()
		keepAlive = t.C
	}
	yielded := false
	for {
		done, more := s.writeTaken(w, st, my, sw)
		if done {
			return
		}
		if more {
			continue
		}
		if !yielded && !st.standalone {
			// The handler runs on another goroutine (a batch's worker, or an inline
			// handler that just started this writer), which the scheduler may run next on
			// this P: let it run before this goroutine parks, so that a quick handler's
			// next message is here at the next take. Parking first would make the response's
			// signal wake this goroutine up again (a futex wake of another thread on an idle
			// machine, then a park and a wake-up here); this costs one trip through the
			// scheduler, which parking would cost anyway.
			yielded = true
			goruntime.Gosched()
			continue
		}
		if !s.awaitEvents(ctx, w, st, my, sw, keepAlive) {
			return
		}
	}
}

// writeTaken takes st's events for the writer of generation my and writes them. It reports
// whether the writer is done (the response went out, the client went away, the session
// ended, the connection was kicked, or a resumed connection took the stream over), and
// whether more events are queued already.
func (s *Server) writeTaken(w http.ResponseWriter, st *stream, my uint64, sw *sseWriter) (done, more bool) {
	evs, kicked, closed, lost, more := st.take(my, s.cfg.eventStore, !sw.started)
	switch {
	case lost:
		// The wake-up that brought this writer here may have been meant for the new one
		// (they share the channel): pass it on, or the new writer could sleep through the
		// stream's last event.
		st.signal()
		st.endInlineResponse(w, my, false)
		return true, false
	case len(evs) > 0 && s.writeEvents(w, st, my, sw, evs):
		return true, false
	case more:
		return false, true
	case kicked && !closed:
		s.endKicked(w, st, my, sw)
		return true, false
	}
	return closed, false
}

// keepAliveTicker returns the ticker of a standalone stream's keep-alive comments, or nil: a
// request stream ends with its response, and needs none.
func (s *Server) keepAliveTicker(st *stream) *time.Ticker {
	if !st.standalone || s.cfg.keepAlive <= 0 {
		return nil
	}
	return time.NewTicker(s.cfg.keepAlive)
}

// streamWriter returns the SSE writer of w for the writer of generation my of st.
func (s *Server) streamWriter(ctx context.Context, w http.ResponseWriter, st *stream, my uint64) *sseWriter {
	if !st.standalone && my == 1 {
		// The request's own POST, the stream's first writer: its writer lives in the
		// stream, which is allocated per request anyway.
		st.first = sseWriter{w: w, timeout: s.cfg.writeTimeout, ctx: ctx}
		return &st.first
	}
	return newSSEWriter(ctx, w, s.cfg.writeTimeout)
}

// startResponse starts the writer's response as mode says: SSE with a priming event (which
// goes out with the first events when they are already there, in one write, or on its own
// before the writer waits for them), or a resumed SSE response, its replayed events written
// now. It reports false when that write failed.
func (s *Server) startResponse(st *stream, sw *sseWriter, mode streamMode) bool {
	switch mode {
	case modeSSE:
		sw.header()
		sw.priming(eventID(st.id, 0), s.cfg.retryInterval)
	case modeResume:
		if !sw.started {
			sw.header()
		}
		return sw.flush(false) == nil
	}
	return true
}

// awaitEvents waits for st's next events, writing what is buffered first (the priming event:
// the client has an event ID to resume from however long the handler takes) and a comment on
// each keepAlive tick. It reports false when the writer must stop: a write failed, or ctx
// ended.
func (s *Server) awaitEvents(ctx context.Context, w http.ResponseWriter, st *stream, my uint64, sw *sseWriter, keepAlive <-chan time.Time) bool {
	if len(sw.buf) > 0 {
		if err := sw.flush(false); err != nil {
			s.clientGone(w, st, my, err)
			return false
		}
	}
	if st.standalone {
		// A standalone stream may wait for hours: its buffer goes back to the pool
		// meanwhile, and the next event takes one from it again.
		sw.putBuf()
	}
	select {
	case <-st.wake:
	case <-keepAlive:
		return sw.keepAlive() == nil
	case <-ctx.Done():
		// The client went away, or a resumption took the stream over: abort ends ctx
		// through the connection's read deadline, and the takeover's wake-up may have gone
		// to the new writer, or lost the select to ctx, so this writer never sees the stream
		// lost at a take. Either way the connection of an inline handler's response is
		// closed here, as in those other exits: the Streamable HTTP transport carries a
		// stream on one connection at a time (MCP spec 2025-11-25, Basic, Transports,
		// Streamable HTTP, Resumability and Redelivery), and that handler's goroutine,
		// which would otherwise end the response, runs on. What is queued goes to the
		// event store (spill), unless the stream was taken over.
		s.spill(st, my)
		st.endInlineResponse(w, my, false)
		return false
	}
	return true
}

// keepAlive writes an SSE comment, which keeps a quiet stream's connection from being closed
// as idle, on a response that has started.
func (sw *sseWriter) keepAlive() error {
	if !sw.started {
		return nil
	}
	sw.buf = append(sw.buf, ": keep-alive\n\n"...)
	return sw.flush(false)
}

// writeEvents writes the events a writer took from st, and reports whether it is done: the
// stream's response went out (as a JSON body when it is the only event and nothing was
// written yet, else as SSE), or the client went away.
func (s *Server) writeEvents(w http.ResponseWriter, st *stream, my uint64, sw *sseWriter, evs []streamEvent) bool {
	if !sw.started && isLoneResponse(evs) {
		s.answerJSON(w, st, sw, &evs[0])
		return true
	}
	if !sw.started {
		sw.header()
		sw.priming(eventID(st.id, 0), s.cfg.retryInterval)
	}
	final, err := appendEvents(st, sw, evs)
	if err != nil {
		s.clientGone(w, st, my, err)
		return true
	}
	if final && !sw.sent && len(sw.buf) >= 2<<10 {
		// Everything the request produced is known: one body with a length. (Under a few
		// KB written without a flush, net/http adds the length itself.)
		w.Header().Set("Content-Length", strconv.Itoa(len(sw.buf)))
	}
	if err := sw.flush(final); err != nil {
		s.clientGone(w, st, my, err)
		return true
	}
	if final {
		s.streamDelivered(st)
	}
	return final
}

// answerJSON writes a stream's response, its only event, as a plain JSON body.
func (s *Server) answerJSON(w http.ResponseWriter, st *stream, sw *sseWriter, ev *streamEvent) {
	sw.finish() // writeJSON sets its own deadline; a takeover must not touch it
	s.writeJSON(w, cmp.Or(ev.status, http.StatusOK), ev.data)
	ev.pooled.release() // written: the buffer can serve another call
	s.streamDelivered(st)
}

// isLoneResponse reports whether evs is a response alone, which a writer that has written
// nothing yet sends as a plain JSON body.
func isLoneResponse(evs []streamEvent) bool {
	return len(evs) == 1 && evs[0].final && evs[0].data != nil
}

// appendEvents appends evs to sw's buffer as SSE events, writing it out every sseChunk bytes
// (the events are in the store already, so a write that fails loses nothing the client cannot
// resume), and reports whether the stream's response is among them.
func appendEvents(st *stream, sw *sseWriter, evs []streamEvent) (final bool, err error) {
	for i, ev := range evs {
		switch {
		case ev.data == nil || ev.seq <= sw.replayedThrough:
		case len(ev.data) > sseChunk:
			if err := sw.eventChunked(st.id, ev.seq, ev.data); err != nil {
				ev.pooled.release()
				return final, err
			}
		default:
			sw.event(st.id, ev.seq, ev.data)
		}
		// Written, or in sw.buf now; the store, if any, holds a copy (take).
		ev.pooled.release()
		final = final || ev.final
		if len(sw.buf) >= sseChunk && i < len(evs)-1 {
			if err := sw.flush(false); err != nil {
				return final, err
			}
		}
	}
	return final, nil
}

// clientGone ends the writer of generation my, whose client went away: the events stay for
// it to resume, in the event store (spill).
func (s *Server) clientGone(w http.ResponseWriter, st *stream, my uint64, err error) {
	s.peerDebug("mcp: client went away mid-stream; events kept for resumption", "session", st.sess.id, "stream", st.id, "error", err)
	s.spill(st, my)
	st.endInlineResponse(w, my, false)
}

// spill moves the queue of a request stream whose connection (the writer of generation my)
// died into the event store: the session's budget, which the queue is charged to, is released
// at once, and what is kept for a resumption is bounded by the store's own limits (its oldest
// events are forgotten first, and a resumption from before them gets 404, never a stream with
// a gap). What the handler sends afterwards is queued as before, within the budget, for the
// client to resume. Without a store, in a replica set (whose request streams are stored as
// they are queued) and in the stateless era (no resumption), the queue stays as it is.
func (s *Server) spill(st *stream, my uint64) {
	store := s.cfg.eventStore
	if store == nil || st.standalone || st.sess.stateless || s.cluster != nil || st.sess.line != nil {
		return
	}
	st.mu.Lock()
	if st.owner != my || st.closed {
		st.mu.Unlock()
		return // taken over: the queue is the new writer's
	}
	evs := st.queue
	st.queue = nil
	st.releaseQueueLocked()
	st.storeLocked(store, evs)
	final := false
	for _, ev := range evs {
		ev.pooled.release() // stored as a copy
		final = final || ev.final
	}
	st.mu.Unlock()
	if final {
		s.streamDelivered(st) // all there is, in the store: the stream is over
	}
}

// endKicked ends a kicked writer's response (CloseSSEStream): the priming event or a retry
// field first, so that the client knows where and when to resume.
func (s *Server) endKicked(w http.ResponseWriter, st *stream, my uint64, sw *sseWriter) {
	if !sw.started {
		sw.header()
		sw.priming(eventID(st.id, 0), s.cfg.retryInterval)
	} else {
		sw.retry(s.cfg.retryInterval)
	}
	_ = sw.flush(false)
	st.endInlineResponse(w, my, true) // the handler runs on the goroutine that would end it
}

// streamDelivered forgets a request stream whose response was written. Its stored events are
// kept for the retention period: the last write is not flushed, so a connection that died just
// then goes unnoticed, and the client may still resume from the store.
func (s *Server) streamDelivered(st *stream) {
	if st.standalone {
		return
	}
	st.sess.removeStream(st.id)
	st.mu.Lock()
	stored := st.stored
	st.mu.Unlock()
	store := s.cfg.eventStore
	if store == nil || !stored {
		return
	}
	if s.cfg.eventRetention <= 0 {
		_ = store.DeleteStream(context.Background(), st.sess.id, st.id)
		return
	}
	s.retain(st.sess.id, st.id)
}

// contentTypeJSON is the Content-Type header value of a JSON answer, shared (net/http only
// reads it), as the SSE ones are.
var (
	contentTypeJSON  = []string{"application/json"}
	contentTypeSSE   = []string{"text/event-stream"}
	cacheControlSSE  = []string{"no-cache, no-transform"}
	accelBufferingNo = []string{"no"}
)

// writeJSON writes a complete JSON body with its length.
func (s *Server) writeJSON(w http.ResponseWriter, status int, body []byte) {
	if s.cfg.writeTimeout > 0 {
		setWriteDeadline(w, time.Now().Add(s.cfg.writeTimeout))
	}
	h := w.Header()
	h["Content-Type"] = contentTypeJSON
	if len(body) >= 2<<10 {
		// Below net/http's buffer (2 KB), a body written at once and not flushed gets its
		// Content-Length from net/http: setting it here would cost two allocations a call.
		h.Set("Content-Length", strconv.Itoa(len(body)))
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

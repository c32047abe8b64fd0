package runtime

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"time"
)

// A message-stream transport (stdio; spec 2025-11-25, Transports, stdio) carries every message
// of a session, in both directions, on one ordered stream of newline-delimited JSON-RPC
// messages. Its streams (the requests' and the session's standalone one) have no queue of
// their own and no HTTP response to attach: what a handler sends goes to the connection's
// lineWriter, which writes it as a line at once, from the sender's goroutine, when no other
// write is in progress, and queues it behind that write otherwise. So an answer costs no
// hand-off between goroutines, and a client that stops reading blocks one goroutine (the one
// writing), never the handlers, which find their messages queued within the session's budget.

// lineWriter writes whole messages, one per line, to a connection's output. One goroutine
// writes at a time (busy); the others queue their messages for it.
type lineWriter struct {
	out io.Writer
	log *slog.Logger
	// timeout bounds each write when out can take a deadline (an *os.File on a pipe can): a
	// client that stops reading fails the write after it (WithWriteTimeout), rather than
	// holding the writing goroutine, and a handler's, for as long as it lasts.
	timeout time.Duration

	mu      sync.Mutex
	busy    bool          // a goroutine is writing; it writes the queue before it stops
	queue   []queuedMsg   // what waits for the writer, in order
	spare   []queuedMsg   // the queue's other array, swapped in by the writer
	waiting chan struct{} // closed when the writer takes the queue (sendWait)
	idle    chan struct{} // closed when the writer stops (waitIdle)
	err     error         // the first write error: the reader is gone, and nothing more is written
	buf     []byte
	// handOff, when set, is told of every message a request's handler sends before its
	// response (a stdio connection's reader then hands its reading over: stdio.go).
	handOff func(st *stream)
}

// queuedMsg is one message waiting for the writer, with the bytes it holds of its session's
// budget and the stream whose queue count it adds to.
type queuedMsg struct {
	data    []byte
	pooled  *wireBuf
	charged int64
	sess    *session
	st      *stream
}

// newLineWriter returns a writer of out whose writes take at most timeout, where out can
// be given a deadline (0: no bound).
func newLineWriter(out io.Writer, log *slog.Logger, timeout time.Duration) *lineWriter {
	return &lineWriter{out: out, log: log, timeout: timeout}
}

// deadliner is an output whose writes can be bounded, as an *os.File's (on a pipe) are.
type deadliner interface {
	SetWriteDeadline(time.Time) error
}

// errWriterGone is returned for messages sent after a write to the connection failed.
var errWriterGone = errors.New("mcp: the connection's output is closed: the client is gone")

// send writes msg, or queues it when another goroutine is writing. inline says whether the
// calling goroutine may write it itself (a handler's response: the handler is done, and the
// writing costs no hand-off); otherwise, with no write in progress, a writer goroutine starts,
// so that the caller never blocks on a client that does not read.
//
// A queued message is charged to sess's budget (when sess is not nil) and counts against its
// stream's limit of queued events (WithMaxQueuedEvents): over either, a message that is not a
// response (final) fails with errBudget or errStreamFull; a response always goes out, since
// it is one per request in flight and its client waits for it.
func (lw *lineWriter) send(sess *session, st *stream, data []byte, pooled *wireBuf, final, inline bool) error {
	if !final && st != nil && !st.standalone && lw.handOff != nil {
		lw.handOff(st)
	}
	lw.mu.Lock()
	if lw.err != nil {
		lw.mu.Unlock()
		pooled.release()
		return errWriterGone
	}
	if !lw.busy {
		lw.busy = true
		lw.startWriting(st, data, pooled, inline)
		return nil
	}
	err := lw.queueBehindLocked(sess, st, data, pooled, final)
	lw.mu.Unlock()
	return err
}

// startWriting writes data as the writer that just set busy (lw.mu is held, and released
// here): itself when inline, else from a writer goroutine that takes it at once, with
// nothing to wait behind and no charge.
func (lw *lineWriter) startWriting(st *stream, data []byte, pooled *wireBuf, inline bool) {
	if !inline {
		lw.queueLocked(queuedMsg{data: data, pooled: pooled, st: st})
		lw.mu.Unlock()
		go lw.drain()
		return
	}
	lw.mu.Unlock()
	lw.write(data)
	pooled.release()
	lw.drain()
}

// queueBehindLocked queues data behind the write in progress (lw.mu is held), charged to
// sess's budget and counted against st's limit, unless it is a response, which always fits.
func (lw *lineWriter) queueBehindLocked(sess *session, st *stream, data []byte, pooled *wireBuf, final bool) error {
	q := queuedMsg{data: data, pooled: pooled, sess: sess, st: st}
	if st != nil && !final && st.lineQueued >= st.maxQueue {
		return errStreamFull
	}
	if sess != nil {
		n := int64(len(data))
		if !sess.reserve(n, final) {
			return errBudget
		}
		q.charged = n
	}
	lw.queueLocked(q)
	return nil
}

// queueLocked appends q to the queue; lw.mu is held.
func (lw *lineWriter) queueLocked(q queuedMsg) {
	if q.st != nil {
		q.st.lineQueued++
	}
	lw.queue = append(lw.queue, q)
}

// sendWait queues msg, which is charged to no session, behind the writes in progress, waiting
// while more than limit bytes are queued: the reader of the connection answers malformed input
// with it, and waiting is what bounds those answers (the reader reads no further until the
// client reads). It returns early when ctx is done.
func (lw *lineWriter) sendWait(ctx context.Context, data []byte, limit int) {
	for {
		lw.mu.Lock()
		if lw.err != nil {
			lw.mu.Unlock()
			return
		}
		if !lw.busy || lw.queuedBytesLocked() < limit {
			lw.mu.Unlock()
			_ = lw.send(nil, nil, data, nil, true, false)
			return
		}
		ch := lazyChan(&lw.waiting)
		lw.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return
		}
	}
}

// waitIdle waits until no write is in progress and nothing is queued, or until stop fires; it
// reports whether the writer went idle.
func (lw *lineWriter) waitIdle(stop <-chan time.Time) bool {
	lw.mu.Lock()
	if !lw.busy {
		lw.mu.Unlock()
		return true
	}
	ch := lazyChan(&lw.idle)
	lw.mu.Unlock()
	select {
	case <-ch:
		return true
	case <-stop:
		return false
	}
}

// lazyChan returns the channel *p, made on first use (lw.mu is held): the writer closes it
// to wake the goroutines waiting on it, and sets *p to nil then.
func lazyChan(p *chan struct{}) chan struct{} {
	if *p == nil {
		*p = make(chan struct{})
	}
	return *p
}

// queuedBytesLocked returns the bytes of the queue; lw.mu is held.
func (lw *lineWriter) queuedBytesLocked() int {
	n := 0
	for _, q := range lw.queue {
		n += len(q.data)
	}
	return n
}

// drain writes the queue until it is empty, then gives up being the writer. Only the goroutine
// that set busy calls it.
func (lw *lineWriter) drain() {
	for {
		lw.mu.Lock()
		if len(lw.queue) == 0 || lw.err != nil {
			lw.stopLocked()
			lw.mu.Unlock()
			return
		}
		batch := lw.takeQueueLocked()
		lw.mu.Unlock()
		lw.writeBatch(batch)
		for _, q := range batch {
			q.sess.release(q.charged)
			q.pooled.release()
		}
		clear(batch)
		lw.mu.Lock()
		if lw.spare == nil {
			lw.spare = batch[:0]
		}
		lw.mu.Unlock()
	}
}

// stopLocked gives up being the writer (lw.mu is held): what is still queued is not written
// (the output failed), and the waiters wake.
func (lw *lineWriter) stopLocked() {
	lw.busy = false
	lw.releaseLocked(lw.queue)
	lw.queue = lw.queue[:0]
	lw.wakeWaitingLocked()
	if lw.idle != nil {
		close(lw.idle)
		lw.idle = nil
	}
}

// takeQueueLocked takes the queue for the writer (lw.mu is held), swapping the spare array
// in: the queue is empty again, and a reader waiting in sendWait may queue.
func (lw *lineWriter) takeQueueLocked() []queuedMsg {
	batch := lw.queue
	lw.queue, lw.spare = lw.spare[:0], nil
	for _, q := range batch {
		if q.st != nil {
			q.st.lineQueued--
		}
	}
	lw.wakeWaitingLocked()
	return batch
}

// wakeWaitingLocked wakes the goroutines waiting in sendWait for the queue to shrink; lw.mu
// is held.
func (lw *lineWriter) wakeWaitingLocked() {
	if lw.waiting != nil {
		close(lw.waiting)
		lw.waiting = nil
	}
}

// releaseLocked gives back what the messages of a queue that will not be written hold.
func (lw *lineWriter) releaseLocked(queue []queuedMsg) {
	for _, q := range queue {
		if q.st != nil {
			q.st.lineQueued--
		}
		q.sess.release(q.charged)
		q.pooled.release()
	}
	clear(queue)
}

// writeBatch writes the messages of batch, several to a write while they are small.
func (lw *lineWriter) writeBatch(batch []queuedMsg) {
	lw.buf = lw.buf[:0]
	for _, q := range batch {
		lw.buf = append(lw.buf, q.data...)
		lw.buf = append(lw.buf, '\n')
		if len(lw.buf) >= sseChunk {
			lw.flush()
		}
	}
	lw.flush()
}

// write writes one message and its newline in one write.
func (lw *lineWriter) write(data []byte) {
	lw.buf = append(lw.buf[:0], data...)
	lw.buf = append(lw.buf, '\n')
	lw.flush()
}

// flush writes buf out. A large message's buffer is not kept.
func (lw *lineWriter) flush() {
	if len(lw.buf) == 0 {
		return
	}
	if d, ok := lw.out.(deadliner); ok && lw.timeout > 0 {
		// An output that takes no deadline (a regular file, say) says so: it is not waited on.
		_ = d.SetWriteDeadline(time.Now().Add(lw.timeout))
	}
	_, err := lw.out.Write(lw.buf)
	lw.buf = recycle(lw.buf)
	if err != nil {
		lw.mu.Lock()
		if lw.err == nil {
			lw.err = err
			lw.log.Debug("mcp: writing to the connection failed; nothing more is written", "error", err)
		}
		lw.mu.Unlock()
	}
}

// sendLine delivers an event of a stream served by a message-stream transport (its session's line): at
// once, or behind the write in progress. A response (final) is written by the goroutine that
// sends it, when no other write is in progress: the handler's own.
func (st *stream) sendLine(ev streamEvent) error {
	st.mu.Lock()
	switch {
	case st.closed:
		st.mu.Unlock()
		ev.pooled.release()
		return ErrClosed
	case st.done:
		st.mu.Unlock()
		ev.pooled.release()
		return errStreamDone
	}
	if ev.final {
		st.done = true
	}
	st.mu.Unlock()
	if ev.final {
		st.sess.removeStream(st.id)
	}
	if ev.data == nil {
		return nil // a cancelled request: its stream ends without a message
	}
	return st.sess.line.send(st.sess, st, ev.data, ev.pooled, ev.final, ev.final)
}

// writing reports whether a write to the output is in progress (or queued behind one).
func (lw *lineWriter) writing() bool {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return lw.busy
}

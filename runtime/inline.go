package runtime

import (
	"net/http"
	"sync"
	"time"
)

// A request's handler runs on the goroutine of the HTTP request that carried it, and that
// goroutine writes the answer once the handler returns: a handler that only answers, the
// common case, costs no hand-off between goroutines (two scheduler wake-ups per call, which
// on a small machine cost as much as the rest of the server's work).
//
// The writer is never missing when the handler needs one. The first message a handler sends
// before its response (a notification, a request to the client), or a CloseSSEStream, starts
// a writer goroutine for the stream, which writes from then on while the handler runs on;
// when the handler returns, the request's goroutine waits for that writer to finish the
// response. Sends never wait for the writer: they queue on the stream, as before. An SSE
// answer (WithSSEResponses) also starts its writer when the handler has run for primingDelay
// without sending anything (primer), so that the client holds the priming event's ID, to resume
// from, within that time however long the handler takes.
//
// The requests of a batch run on workers: they run at once. So do the session era's requests
// whose response cannot be ended while the handler runs on (takeable): over HTTP/2 and stdio,
// a CloseSSEStream ends the response only by ServeHTTP returning.

// primingDelay is how long an inline handler of an SSE answer runs before its writer starts
// and sends the priming event on its own. A handler that answers sooner sends the priming event
// and its answer in one write.
const primingDelay = 5 * time.Millisecond

// runInline runs rs's handler on this goroutine, then writes its stream to w, unless a writer
// started while the handler ran has done so. The stream is new: this is its first writer.
func (s *Server) runInline(r *http.Request, w http.ResponseWriter, rs *requestState, mode streamMode) {
	st := rs.st
	proto := int8(-1)
	if r.ProtoMajor == 1 {
		proto = int8(min(r.ProtoMinor, 1))
	}
	st.mu.Lock()
	// What a writer started while the handler runs needs (startWriter); serveStream sets
	// the same for the first writer.
	st.first = sseWriter{w: w, timeout: s.cfg.writeTimeout, ctx: r.Context()}
	st.inline, st.inlineProto, st.inlineSSE = true, proto, mode == modeSSE
	st.mu.Unlock()
	if mode == modeSSE {
		s.primer.add(st)
	}
	rs.Run()
	if mode == modeSSE {
		s.primer.remove(st)
	}
	if st.handlerReturned() {
		return // the writer started for the handler's messages wrote the stream
	}
	s.serveStream(r.Context(), w, st, 1, mode, nil)
}

// takeable reports whether r's response can end before its handler returns, by taking its
// connection (endInlineResponse): an HTTP/1.x request whose ResponseWriter, or one it wraps
// (Unwrap, as http.ResponseController looks), can be hijacked.
func takeable(r *http.Request, w http.ResponseWriter) bool {
	if r.ProtoMajor != 1 {
		return false
	}
	for {
		switch t := w.(type) {
		case http.Hijacker:
			return true
		case interface{ Unwrap() http.ResponseWriter }:
			w = t.Unwrap()
		default:
			return false
		}
	}
}

// startWriter starts the writer of an inline handler's stream, once, unless the handler has
// returned.
func (st *stream) startWriter() {
	st.mu.Lock()
	if st.inlineDone != nil || st.inlineReturned {
		st.mu.Unlock()
		return
	}
	done := make(chan struct{})
	st.inlineDone = done
	ctx, w := st.first.ctx, st.first.w
	mode := modeAuto
	if st.inlineSSE {
		mode = modeSSE
	}
	st.mu.Unlock()
	go func() {
		defer close(done)
		st.sess.server.serveStream(ctx, w, st, 1, mode, nil)
	}()
}

// primer starts the writers of the inline SSE answers whose handlers have run for
// primingDelay without sending anything. One timer serves the whole server, armed while
// answers wait: a timer armed for every call, due before any other timer of the process, made
// the runtime wake its network poller on every call (an eventfd write and read and an extra
// epoll wait: about a sixth of a sequential SSE call's CPU).
type primer struct {
	mu         sync.Mutex
	head, tail *stream // the waiting streams, in the order they were added: by due time
	timer      *time.Timer
	armed      bool // the timer will fire: it is armed or its function is running
}

// primerEpoch is the origin of the primer's due times, which are monotonic.
var primerEpoch = time.Now()

// add puts st, whose handler is about to run, on the wait list.
func (p *primer) add(st *stream) {
	due := time.Since(primerEpoch) + primingDelay
	p.mu.Lock()
	st.primeDue, st.primePrev, st.primeNext, st.primeWaiting = due, p.tail, nil, true
	if p.tail != nil {
		p.tail.primeNext = st
	} else {
		p.head = st
	}
	p.tail = st
	if !p.armed {
		p.armed = true
		if p.timer == nil {
			p.timer = time.AfterFunc(primingDelay, p.fire)
		} else {
			p.timer.Reset(primingDelay)
		}
	}
	p.mu.Unlock()
}

// remove takes st, whose handler has returned, off the wait list, if it is still there.
func (p *primer) remove(st *stream) {
	p.mu.Lock()
	if st.primeWaiting {
		p.unlink(st)
	}
	p.mu.Unlock()
}

// unlink takes st off the list; p.mu is held.
func (p *primer) unlink(st *stream) {
	if st.primePrev != nil {
		st.primePrev.primeNext = st.primeNext
	} else {
		p.head = st.primeNext
	}
	if st.primeNext != nil {
		st.primeNext.primePrev = st.primePrev
	} else {
		p.tail = st.primePrev
	}
	st.primePrev, st.primeNext, st.primeWaiting = nil, nil, false
}

// fire starts the writers of the streams that are due, and arms the timer for the next one.
func (p *primer) fire() {
	now := time.Since(primerEpoch)
	var due []*stream
	p.mu.Lock()
	for p.head != nil && p.head.primeDue <= now {
		st := p.head
		p.unlink(st)
		due = append(due, st)
	}
	if p.head != nil {
		p.timer.Reset(p.head.primeDue - now)
	} else {
		p.armed = false
	}
	p.mu.Unlock()
	for _, st := range due {
		st.startWriter()
	}
}

// handlerReturned records that the inline handler returned and waits for the writer started
// while it ran, if any; it reports whether there was one. The wait is bounded: the writer
// returns once it has written the response (within the write timeout), or when the client has
// gone, the stream was kicked or taken over, or the session ended.
func (st *stream) handlerReturned() bool {
	st.mu.Lock()
	st.inlineReturned = true
	done := st.inlineDone
	st.mu.Unlock()
	if done == nil {
		return false
	}
	<-done
	return true
}

// runningInline reports whether the stream's inline handler is still running, on an HTTP/1
// connection that can be taken from net/http, and the POST's HTTP/1 minor version.
func (st *stream) runningInline() (proto int8, running bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.inlineProto, st.inline && !st.inlineReturned && st.inlineProto >= 0
}

// endInlineResponse ends the HTTP response w of the stream's first writer (my) when that
// writer stops while the stream's inline handler runs on: the response cannot end by its
// goroutine returning, which runs the handler. A kicked stream (CloseSSEStream, clean) ends
// its chunked body, as the client must see its stream end and resume; a stream taken over
// by a resumption, or whose writes failed or whose client went away, has its connection
// closed, as the Streamable HTTP transport allows one connection per stream. On HTTP/1.x the
// connection is taken from net/http for that. Session-era handlers whose connection cannot be
// taken do not run inline (takeable); where taking it fails all the same (a Hijacker that
// refuses), or in the modern era over HTTP/2 (no CloseSSEStream, no resumption), the response
// ends when the handler returns.
func (st *stream) endInlineResponse(w http.ResponseWriter, my uint64, clean bool) {
	if my != 1 || st.standalone {
		return
	}
	proto, running := st.runningInline()
	if !running {
		return
	}
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		st.sess.server.peerDebug("mcp: a stream's connection cannot be taken from its running handler; the response ends when the handler returns", "session", st.sess.id, "error", err)
		return
	}
	if clean && proto == 1 {
		// HTTP/1.1: the headers went out without a length (flushed), so the body is chunked.
		_, _ = conn.Write([]byte("0\r\n\r\n"))
	}
	_ = conn.Close()
}

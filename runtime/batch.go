package runtime

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"unicode/utf8"
)

// JSON-RPC batches. MCP 2025-03-26 lets a POST body be a JSON array of requests,
// notifications and responses, and has servers accept it (Base Protocol, Batching; Streamable
// HTTP transport, Sending Messages to the Server); 2025-06-18 removed batching. So the server
// accepts a batch only on a session that negotiated 2025-03-26, and refuses it on any other
// (and without a session: initialize must not be part of a batch, Lifecycle, Initialization).
//
// Each request of a batch runs as a request of its own POST would: its own handler, context,
// stream and place in the session's in-flight set, all at once, so that no request waits for
// another. One writer, the POST's response, carries every response: a JSON array once all are
// done when the requests send nothing but their responses, else an SSE stream that carries
// each message as it is queued, responses as their requests finish. The streams exist, and the
// writer holds them, before any handler starts, as for a single request.
//
// Each request keeps its own stream and its events their stream's IDs, unique in the session
// (Streamable HTTP transport, Resumability and Redelivery): after a broken connection, a GET
// with Last-Event-ID resumes the stream of the request that event came from, one request at a
// time; the answer of a member that never ran has no ID.

// DefaultMaxBatchSize is how many messages a batch may hold unless WithMaxBatchSize says
// otherwise.
const DefaultMaxBatchSize = 100

// batchStream is the stream of one request of a batch, held by the batch's writer.
type batchStream struct {
	st        *stream
	my        uint64
	done      bool // its last event was taken (or it was lost or closed)
	delivered bool // its response went out through this writer
}

// serveBatch serves a POST whose body is a JSON array.
func (s *Server) serveBatch(w http.ResponseWriter, r *http.Request, body []byte) {
	sess, ok := s.batchSession(w, r)
	if !ok {
		return
	}
	sess.touch()
	elems, rpcErr := splitBatch(body, s.cfg.maxBatch)
	if rpcErr != nil {
		s.writeJSON(w, http.StatusBadRequest, encodeResponse(nil, nil, rpcErr))
		return
	}
	msgs, answers := decodeMembers(elems)
	if !s.authorizeBatch(w, r, msgs) {
		return
	}
	streams, answers := s.startBatch(r, sess, elems, msgs, answers)
	s.writeBatch(r.Context(), w, streams, answers)
}

// batchSession finds the session a batch belongs to, answering 400 itself when there is none
// or it did not negotiate 2025-03-26, the one version with batches.
func (s *Server) batchSession(w http.ResponseWriter, r *http.Request) (*session, bool) {
	if r.Header.Get(headerSessionID) == "" {
		s.httpError(w, http.StatusBadRequest, CodeInvalidRequest, "JSON-RPC batches are not supported without a session: send initialize alone, one message per POST (only sessions that negotiated protocol version 2025-03-26 accept batches; batching was removed from MCP in 2025-06-18)")
		return nil, false
	}
	sess, ok := s.sessionFor(w, r)
	if !ok {
		return nil, false
	}
	if v := sess.version(); v != ProtocolVersion20250326 {
		s.httpError(w, http.StatusBadRequest, CodeInvalidRequest, "JSON-RPC batches are not supported on this session: it negotiated protocol version "+quoteOrNone(v)+", and batching was removed from MCP in 2025-06-18; send one message per POST")
		return nil, false
	}
	return sess, true
}

// authorizeBatch decides whether the caller's token may make every tool call of a batch: one
// it may not make refuses the whole batch with the HTTP challenge, before anything runs, and
// the client steps up its token and sends it again.
func (s *Server) authorizeBatch(w http.ResponseWriter, r *http.Request, msgs []*wireMessage) bool {
	for _, msg := range msgs {
		if msg != nil && msg.isRequest() && msg.Method == methodToolsCall && !s.authorizeCall(w, r, msg) {
			return false
		}
	}
	return true
}

// decodeMembers decodes the members of a batch; a malformed one is nil in msgs, and its error
// response is in answers, known before anything runs.
func decodeMembers(elems []json.RawMessage) (msgs []*wireMessage, answers []batchAnswer) {
	msgs = make([]*wireMessage, len(elems))
	for i, raw := range elems {
		msg, rpcErr := decodeMessage(raw)
		if rpcErr != nil {
			answers = append(answers, batchAnswer{data: encodeResponse(msg.idOrNil(), nil, rpcErr)})
			continue
		}
		msgs[i] = msg
	}
	return msgs, answers
}

// startBatch serves the notifications and responses of a batch and starts its requests: it
// returns their streams, and answers with the responses of those that could not start.
func (s *Server) startBatch(r *http.Request, sess *session, elems []json.RawMessage, msgs []*wireMessage, answers []batchAnswer) ([]batchStream, []batchAnswer) {
	var streams []batchStream
	for i, msg := range msgs {
		switch {
		case msg == nil:
		case msg.isNotification():
			s.handleNotification(sess, msg)
		case msg.isResponse():
			if !s.deliverResponse(sess, msg, elems[i]) {
				// A response has no response: the batch goes on without it.
				s.peerWarn("mcp: response to an unknown request in a batch", "session", sess.id, "id", msg.ID.short())
			}
		default:
			b, answer := s.startBatchRequest(r, sess, msg)
			if answer != nil {
				answers = append(answers, batchAnswer{data: answer})
				continue
			}
			streams = append(streams, b)
		}
	}
	return streams, answers
}

// splitBatch splits a batch into its members, refusing an empty batch, one that is not JSON,
// and one of more than limit members.
func splitBatch(body []byte, limit int) ([]json.RawMessage, *Error) {
	if !utf8.Valid(body) {
		return nil, NewError(CodeParseError, "parse error: the batch is not valid UTF-8")
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(body, &elems); err != nil {
		return nil, Errorf(CodeParseError, "parse error: %v", err)
	}
	switch {
	case len(elems) == 0:
		return nil, NewError(CodeInvalidRequest, "invalid request: an empty JSON-RPC batch")
	case limit > 0 && len(elems) > limit:
		return nil, Errorf(CodeInvalidRequest, "the JSON-RPC batch holds %d messages; the limit is %d: send the rest in other POSTs", len(elems), limit)
	}
	return elems, nil
}

// startBatchRequest starts one request of a batch as serveRequest starts a request of its own
// POST (openRequest), except that the stream's writer is the batch's: it returns the request's
// stream, attached, or the error response of a request that could not start.
func (s *Server) startBatchRequest(r *http.Request, sess *session, msg *wireMessage) (batchStream, []byte) {
	if msg.Method == methodInitialize {
		return batchStream{}, encodeResponse(msg.ID, nil, NewError(CodeInvalidRequest, "initialize must not be part of a JSON-RPC batch: this session is already initialized"))
	}
	rs, rpcErr, _ := s.openRequest(sess, msg, r.Header, TokenInfoFrom(r.Context()), r.Context())
	if rpcErr != nil {
		return batchStream{}, encodeResponse(msg.ID, nil, rpcErr)
	}
	rs.remote = r.RemoteAddr
	s.workers.RunJob(rs)
	return batchStream{st: rs.st, my: 1}, nil // openRequest attached the new stream: generation 1
}

// batchAnswer is a response held by a batch's writer until it knows how to answer: the SSE
// event ID of a request's response (streamID empty for a member that never ran), and the
// message.
type batchAnswer struct {
	streamID string
	seq      uint64
	data     []byte
}

// writeBatch writes the answer to a batch: answers (responses known up front) and every
// event of the streams, until each stream has delivered its response, the session ends or the
// client goes away. It answers 202 when there is no response to send.
func (s *Server) writeBatch(ctx context.Context, w http.ResponseWriter, streams []batchStream, answers []batchAnswer) {
	bw := &batchWriter{s: s, sw: newSSEWriter(ctx, w, s.cfg.writeTimeout), streams: streams, answers: answers, left: len(streams)}
	defer bw.sw.finish()
	bw.holdStreams()
	defer bw.releaseStreams()
	if s.cfg.alwaysSSE && len(streams) > 0 {
		bw.startSSE()
	}
	if !bw.pump(ctx) {
		return // the client went away: the streams stay for resumption
	}
	if !bw.sse && !bw.answerHeld(w) {
		return
	}
	bw.forgetDelivered()
}

// forgetDelivered forgets the streams whose responses this writer wrote (streamDelivered).
func (bw *batchWriter) forgetDelivered() {
	for i := range bw.streams {
		if bw.streams[i].delivered {
			bw.s.streamDelivered(bw.streams[i].st)
		}
	}
}

// answerHeld answers with the responses held, as one JSON array; with 202 when there are none
// (the batch held notifications and responses only), and then it reports false: no response
// was delivered.
func (bw *batchWriter) answerHeld(w http.ResponseWriter) bool {
	if len(bw.answers) == 0 {
		w.WriteHeader(http.StatusAccepted)
		return false
	}
	bw.sw.finish() // writeJSON sets its own deadline; a takeover must not touch it
	bw.s.writeJSON(w, http.StatusOK, joinBatch(bw.answers))
	return true
}

// holdStreams makes this writer's connection the one a resumption of any of the streams
// closes.
func (bw *batchWriter) holdStreams() {
	for i := range bw.streams {
		b := &bw.streams[i]
		b.st.setAbort(b.my, bw.sw)
	}
}

// releaseStreams lets go of the streams: a resumption finds them without a writer.
func (bw *batchWriter) releaseStreams() {
	for i := range bw.streams {
		b := &bw.streams[i]
		b.st.detach(b.my)
	}
}

// pump takes the streams' events until every stream is done, writing them as they come once
// the answer is an SSE stream; it reports false when the client went away first.
func (bw *batchWriter) pump(ctx context.Context) bool {
	for {
		more := bw.takeAll()
		if bw.sse && len(bw.sw.buf) > 0 {
			if err := bw.sw.flush(bw.left == 0); err != nil {
				bw.s.peerDebug("mcp: client went away mid-batch; events kept for resumption", "error", err)
				return false
			}
		}
		if bw.left == 0 {
			return true
		}
		if !more && !waitBatch(ctx, bw.streams) {
			return false
		}
	}
}

// batchWriter is the state of writeBatch: the answers it holds while it may still answer with
// one JSON array, and how many streams have yet to deliver their response.
type batchWriter struct {
	s       *Server
	sw      *sseWriter
	streams []batchStream
	answers []batchAnswer
	sse     bool // the answer is an SSE stream
	left    int  // streams not done
}

// startSSE turns the answer into an SSE stream, starting with the answers held so far.
func (bw *batchWriter) startSSE() {
	bw.sse = true
	bw.sw.header()
	for _, a := range bw.answers {
		if a.streamID == "" {
			appendBatchEvent(bw.sw, a.data)
		} else {
			bw.sw.event(a.streamID, a.seq, a.data)
		}
	}
	bw.answers = nil
}

// takeAll takes the events of every stream not done, and reports whether some are left.
func (bw *batchWriter) takeAll() (more bool) {
	for i := range bw.streams {
		if b := &bw.streams[i]; !b.done && bw.takeFrom(b) {
			more = true
		}
	}
	return more
}

// takeFrom takes the events of stream b, and reports whether some are left. A kick
// (CloseSSEStream) is not honoured: this connection carries the other requests of the batch
// too, so the stream goes on here.
func (bw *batchWriter) takeFrom(b *batchStream) (rest bool) {
	evs, _, closed, lost, rest := b.st.take(b.my, bw.s.cfg.eventStore, false)
	if lost {
		b.st.signal() // the wake-up may have been meant for the resumed writer
		bw.streamDone(b)
		return false
	}
	for _, ev := range evs {
		bw.add(b, ev)
	}
	if closed && !rest && !b.done {
		bw.streamDone(b) // the session ended: no response will come
	}
	return rest
}

// add writes, or holds, one event of stream b.
func (bw *batchWriter) add(b *batchStream, ev streamEvent) {
	if !ev.final && !bw.sse {
		bw.startSSE() // a request sends more than its response: stream from now on
	}
	switch {
	case ev.data == nil: // a cancelled request: no response
	case bw.sse:
		bw.sw.event(b.st.id, ev.seq, ev.data)
		ev.pooled.release() // in sw.buf; the store holds a copy (stream.take)
	default:
		bw.answers = append(bw.answers, batchAnswer{streamID: b.st.id, seq: ev.seq, data: ev.data})
	}
	if ev.final {
		b.delivered = true
		bw.streamDone(b)
	}
}

// streamDone counts b out.
func (bw *batchWriter) streamDone(b *batchStream) {
	b.done = true
	bw.left--
}

// waitBatch waits until one of the streams not done has news, or ctx ends (false).
func waitBatch(ctx context.Context, streams []batchStream) bool {
	cases := make([]reflect.SelectCase, 0, len(streams)+1)
	cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())})
	for i := range streams {
		if !streams[i].done {
			cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(streams[i].st.wake)})
		}
	}
	chosen, _, _ := reflect.Select(cases)
	return chosen != 0
}

// appendBatchEvent appends a message that belongs to no stream (the error response of a
// member that never ran) as an SSE event without an ID: there is nothing to resume it from.
func appendBatchEvent(sw *sseWriter, data []byte) {
	sw.buf = append(sw.buf, "event: message\ndata: "...)
	sw.buf = append(sw.buf, data...)
	sw.buf = append(sw.buf, "\n\n"...)
}

// joinBatch writes responses as one JSON array.
func joinBatch(msgs []batchAnswer) []byte {
	n := 1
	for _, m := range msgs {
		n += len(m.data) + 1
	}
	out := make([]byte, 0, n)
	out = append(out, '[')
	for i, m := range msgs {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, m.data...)
	}
	return append(out, ']')
}

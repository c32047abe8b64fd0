package runtime

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// session is the server's state for one client between initialize and DELETE (or expiry).
type session struct {
	id     string
	server *Server
	ctx    context.Context // cancelled when the session ends
	cancel context.CancelFunc

	lastUsed atomic.Int64 // unix nanos
	created  int64        // unix nanos
	// established is set by the first message after initialize's answer (sessions.go).
	established atomic.Bool
	held        atomic.Int64 // bytes charged to the session's budget (budget.go)
	logLevel    atomic.Pointer[LoggingLevel]
	// nextStreamID numbers the session's request streams.
	nextStreamID atomic.Uint64
	deadlines    deadlines // its handlers' (deadline.go)

	mu              sync.Mutex
	protocolVersion string
	clientInfo      Implementation
	clientCaps      ClientCapabilities
	initialized     bool
	inflight        map[string]context.CancelFunc // request ID -> cancel
	pending         map[string]chan *wireMessage  // our request ID -> its response
	nextRequestID   int64
	streams         map[string]*stream // nil in a stateless session (newRequestStream)
	standalone      *stream
	subscriptions   map[string]bool
	state           int64 // bytes of clientInfo and subscriptions, charged to held
	ended           bool
	forget          bool // in a replica set, end deletes the shared events (DELETE)
	// replays holds the writer replaying each stream that ended, from the event store: a
	// newer resumption of the stream takes over from it (claimReplay).
	replays map[string]*replayClaim
	owner   identity // who started the session (TokenInfo.identity)
	holder  holder   // whom the session table charges it to (sessions.go); set once
	// stateless marks the transient session of one modern-era request (era_server.go): it is
	// in no session table, and it stores no events.
	stateless bool
	// line, for a session served by a message-stream transport (stdio), writes every message
	// of its streams (conn.go); set before the session is used, never changed.
	line *lineWriter
}

func newSessionID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("mcp: crypto/rand failed: %v", err))
	}
	return hex.EncodeToString(b[:])
}

func (s *Server) newSession(p *InitializeParams, version string) *session {
	ctx, cancel := context.WithCancel(s.baseCtx)
	sess := &session{
		id:              newSessionID(),
		server:          s,
		ctx:             ctx,
		cancel:          cancel,
		protocolVersion: version,
		clientInfo:      p.ClientInfo,
		clientCaps:      p.Capabilities,
		inflight:        make(map[string]context.CancelFunc),
		pending:         make(map[string]chan *wireMessage),
		streams:         make(map[string]*stream),
		subscriptions:   make(map[string]bool),
	}
	sess.created = time.Now().UnixNano()
	sess.state = stateSize(&sess.clientInfo)
	sess.reserve(sess.state, true)
	standaloneID := "0"
	if s.cluster != nil {
		standaloneID = s.cluster.streamID(0)
	}
	sess.standalone = newStream(sess, standaloneID, true, min(s.cfg.maxQueuedEvents, 1000))
	sess.touch()
	return sess
}

func (sess *session) touch() { sess.lastUsed.Store(time.Now().UnixNano()) }

// newRequestStream creates and registers the stream of one POSTed request.
func (sess *session) newRequestStream() *stream {
	// The stream is made outside the session's lock, which every request of the session takes:
	// only the map insertion needs it.
	n := sess.nextStreamID.Add(1)
	var id string
	if c := sess.server.cluster; c != nil {
		id = c.streamID(n)
	} else {
		id = strconv.FormatUint(n, 10)
	}
	st := newStream(sess, id, false, sess.server.cfg.maxQueuedEvents)
	if sess.stateless {
		// The transient session of one modern request has this one stream, which nothing
		// looks up by its ID (no resumption, no session table), and never ends.
		return st
	}
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if sess.ended {
		st.closed = true
		return st
	}
	sess.streams[st.id] = st
	return st
}

// replayClaim is the replay of a stream that ended, on one connection.
type replayClaim struct {
	sw   *sseWriter
	done chan struct{} // closed once the replay let go of what it held
}

// claimReplay makes sw the writer of the replay of the ended stream id, aborting the one it
// replaces, which it returns (nil when none): as for a live stream, the newest resumption wins
// (spec 2025-11-25, Basic, Transports, Streamable HTTP, Resumability and Redelivery), so that
// resumptions of one stream that are not read hold one replay's memory, not one each.
func (sess *session) claimReplay(id string, sw *sseWriter) (mine, prev *replayClaim) {
	mine = &replayClaim{sw: sw, done: make(chan struct{})}
	sess.mu.Lock()
	if sess.replays == nil {
		sess.replays = make(map[string]*replayClaim)
	}
	prev = sess.replays[id]
	sess.replays[id] = mine
	sess.mu.Unlock()
	if prev != nil {
		prev.sw.abort()
	}
	return mine, prev
}

// releaseReplay ends the replay c of id, and forgets it unless another took over.
func (sess *session) releaseReplay(id string, c *replayClaim) {
	sess.mu.Lock()
	if sess.replays[id] == c {
		delete(sess.replays, id)
	}
	sess.mu.Unlock()
	close(c.done)
}

func (sess *session) removeStream(id string) {
	sess.mu.Lock()
	delete(sess.streams, id)
	sess.mu.Unlock()
}

func (sess *session) lookupStream(id string) *stream {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if id == sess.standalone.id {
		return sess.standalone
	}
	return sess.streams[id]
}

// startRequest registers an in-flight request. It fails for a duplicate ID (Base Protocol, Requests: IDs are unique in a session) or when the
// session has too many requests in flight; status is the HTTP status of the refusal: 429 for
// the limit, which a client may retry later, and 400 otherwise.
func (sess *session) startRequest(id *ID, cancel context.CancelFunc) (rpcErr *Error, status int) {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if sess.ended {
		return NewError(CodeInvalidRequest, "session has ended"), http.StatusBadRequest
	}
	if _, dup := sess.inflight[id.raw]; dup {
		return Errorf(CodeInvalidRequest, "request id %s is already in use by a request in flight on this session", id.short()), http.StatusBadRequest
	}
	if len(sess.inflight) >= sess.server.cfg.maxInflight {
		return Errorf(CodeInvalidRequest, "too many requests in flight on this session (limit %d); wait for some to finish", sess.server.cfg.maxInflight), http.StatusTooManyRequests
	}
	sess.inflight[id.raw] = cancel
	return nil, 0
}

func (sess *session) endRequest(id *ID) {
	sess.mu.Lock()
	delete(sess.inflight, id.raw)
	sess.mu.Unlock()
}

// cancelRequest cancels an in-flight request's context (notifications/cancelled).
func (sess *session) cancelRequest(id *ID) bool {
	sess.mu.Lock()
	cancel, ok := sess.inflight[id.raw]
	sess.mu.Unlock()
	if ok {
		cancel()
	}
	return ok
}

// version returns the negotiated protocol version.
func (sess *session) version() string {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	return sess.protocolVersion
}

// caps returns the capabilities the session's client declared.
func (sess *session) caps() ClientCapabilities {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	return sess.clientCaps
}

// request sends a request to the client on st and waits for its response.
func (sess *session) request(ctx context.Context, st *stream, method string, params any) (json.RawMessage, error) {
	id, ch, err := sess.pendingRequest()
	if err != nil {
		return nil, err
	}
	defer func() {
		sess.mu.Lock()
		delete(sess.pending, id.raw)
		sess.mu.Unlock()
	}()

	data, err := encodeRequest(&id, method, params)
	if err != nil {
		return nil, err
	}
	ctx, cancel := sess.server.callerTimeout(ctx)
	defer cancel()
	if err := st.send(data, false); err != nil {
		return nil, fmt.Errorf("send %s to client: %w", method, err)
	}
	return sess.awaitResponse(ctx, st, &id, method, ch)
}

// callerTimeout bounds a request to the client without a deadline of its own by the
// server's WithCallerRequestTimeout, when it has one.
func (s *Server) callerTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok || s.cfg.callerRequestTimeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, s.cfg.callerRequestTimeout)
}

// pendingRequest numbers a new request to the client and registers the channel its response
// is delivered to (deliverResponse); in a replica set the ID names this replica, which the
// response may not reach directly. It fails with ErrClosed once the session ended.
func (sess *session) pendingRequest() (ID, chan *wireMessage, error) {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if sess.ended {
		return ID{}, nil, ErrClosed
	}
	sess.nextRequestID++
	id := IntID(sess.nextRequestID)
	if c := sess.server.cluster; c != nil && !sess.stateless {
		id = c.sharedRequestID(sess.nextRequestID)
	}
	ch := make(chan *wireMessage, 1)
	sess.pending[id.raw] = ch
	return id, ch, nil
}

// awaitResponse waits for the client's response to the request id sent on st: its result or
// its error; when ctx ends first the client is told to stop working on it (spec 2025-11-25,
// Utilities, Cancellation).
func (sess *session) awaitResponse(ctx context.Context, st *stream, id *ID, method string, ch chan *wireMessage) (json.RawMessage, error) {
	select {
	case resp := <-ch:
		if resp.Error != nil {
			return nil, resp.Error
		}
		return resp.Result, nil
	case <-ctx.Done():
		sendCancelled(st, id, ctx.Err())
		return nil, fmt.Errorf("%s: %w", method, ctx.Err())
	case <-sess.ctx.Done():
		return nil, fmt.Errorf("%s: %w", method, ErrClosed)
	}
}

// sendCancelled tells the client to stop working on the request id, sent on st, which the
// server no longer waits for (spec 2025-11-25, Utilities, Cancellation); best effort: the
// stream may be gone.
func sendCancelled(st *stream, id *ID, reason error) {
	if n, err := encodeRequest(nil, notifCancelled, &CancelledParams{RequestID: id, Reason: reason.Error()}); err == nil {
		_ = st.send(n, false)
	}
}

// deliverResponse routes a client's response to the request waiting for it.
func (sess *session) deliverResponse(m *wireMessage) bool {
	sess.mu.Lock()
	ch, ok := sess.pending[m.ID.raw]
	sess.mu.Unlock()
	if !ok {
		return false
	}
	select {
	case ch <- m:
	default: // a duplicate response; the first one won
	}
	return true
}

// establish records that the session's client uses the session ID initialize returned: the
// handshake timeout no longer applies to it (sessions.go). It writes only the first time,
// so that the flag's cache line is not dirtied by every request.
func (sess *session) establish() {
	if !sess.established.Load() {
		sess.established.Store(true)
	}
}

// isEnded reports whether the session has ended.
func (sess *session) isEnded() bool {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	return sess.ended
}

// end terminates the session: in-flight handlers are cancelled, streams closed.
func (sess *session) end() {
	sess.mu.Lock()
	if sess.ended {
		sess.mu.Unlock()
		return
	}
	sess.ended = true
	forget := sess.server.cluster == nil || sess.forget
	streams := sess.allStreamsLocked()
	sess.release(sess.state)
	sess.state = 0
	clear(sess.subscriptions)
	sess.mu.Unlock()
	sess.cancel()
	for _, st := range streams {
		st.close()
	}
	if forget {
		sess.deleteEvents()
	}
}

// deleteEvents deletes the session's stored events, when there is an event store.
func (sess *session) deleteEvents() {
	if store := sess.server.cfg.eventStore; store != nil {
		_ = store.DeleteSession(context.Background(), sess.id)
	}
}

// allStreamsLocked returns the session's request streams and its standalone stream. sess.mu
// is held.
func (sess *session) allStreamsLocked() []*stream {
	streams := make([]*stream, 0, len(sess.streams)+1)
	for _, st := range sess.streams {
		streams = append(streams, st)
	}
	return append(streams, sess.standalone)
}

// notify sends a notification on the standalone stream (messages unrelated to a request).
func (sess *session) notify(method string, params any) error {
	data, err := encodeRequest(nil, method, params)
	if err != nil {
		return err
	}
	return sess.standalone.send(data, false)
}

package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// cluster is a Server's link to the other replicas of its service (cluster.go). It is nil for
// a server on its own.
type cluster struct {
	sessions SessionStore
	events   SharedEventStore
	bus      Bus
	replica  string

	cancel context.CancelFunc
	done   chan struct{}
}

// Kinds of bus messages.
const (
	busBroadcast = "b" // a server-wide notification: Method and Data (its params)
	busResource  = "r" // resources/updated for URI
	busResponse  = "p" // a client's response (Data) for a request of Session's, to its replica
	busCancel    = "c" // notifications/cancelled (Data) for a request of Session's
	busEnded     = "e" // Session was deleted: every replica forgets its copy
)

// busMessage is what replicas send each other.
type busMessage struct {
	Kind    string          `json:"k"`
	Session string          `json:"s,omitempty"`
	Method  string          `json:"m,omitempty"`
	URI     string          `json:"u,omitempty"`
	Data    json.RawMessage `json:"d,omitempty"`
}

// startCluster connects the server to its replica set, when it was given one.
func (s *Server) startCluster() {
	cfg := &s.cfg
	if cfg.sessionStore == nil && cfg.bus == nil {
		return
	}
	events, ok := cfg.eventStore.(SharedEventStore)
	if cfg.sessionStore == nil || cfg.bus == nil || !ok {
		panic("mcp: a replica set needs WithSessionStore, WithBus and WithEventStore with a SharedEventStore, all three")
	}
	id := replicaID(cfg.replicaID)
	ctx, cancel := context.WithCancel(context.Background())
	c := &cluster{sessions: cfg.sessionStore, events: events, bus: cfg.bus, replica: id, cancel: cancel, done: make(chan struct{})}
	s.cluster = c
	go s.listenBus(ctx, c)
	s.log.Info("mcp: replica joined its replica set", "replica", id)
}

// replicaID decides the server's ID in its replica set: the configured one, which must not
// contain the characters that separate it from a number in stream and request IDs, or a
// random one.
func replicaID(configured string) string {
	if configured == "" {
		return newSessionID()[:12]
	}
	if strings.ContainsAny(configured, "._-\" \n") {
		panic("mcp: WithReplicaID: the ID must not contain '.', '_', '-', quotes or spaces: " + strconv.Quote(configured))
	}
	return configured
}

// listenBus listens on the bus until ctx ends, restarting the listener a second after it
// stops (the bus was unreachable), and closes c.done when it returns.
func (s *Server) listenBus(ctx context.Context, c *cluster) {
	defer close(c.done)
	for ctx.Err() == nil {
		err := c.bus.Listen(ctx, c.replica, s.onBusMessage)
		if ctx.Err() != nil {
			return
		}
		s.log.Warn("mcp: replica bus listener stopped; restarting", "replica", c.replica, "error", err)
		t := time.NewTimer(time.Second)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
}

// stopCluster stops listening on the bus (Shutdown).
func (s *Server) stopCluster() {
	if c := s.cluster; c != nil {
		c.cancel()
		<-c.done
	}
}

// ReplicaID returns the server's ID in its replica set, or "" for a server on its own.
func (s *Server) ReplicaID() string {
	if s.cluster == nil {
		return ""
	}
	return s.cluster.replica
}

// publish sends a bus message, reporting whether it went out.
func (s *Server) publish(to string, m *busMessage) bool {
	b, err := json.Marshal(m)
	if err == nil {
		ctx, cancel := context.WithTimeout(s.baseCtx, storeTimeout)
		err = s.cluster.bus.Publish(ctx, to, b)
		cancel()
	}
	if err != nil {
		s.log.Warn("mcp: could not publish to the other replicas", "kind", m.Kind, "error", err)
		return false
	}
	return true
}

// onBusMessage handles a message from a replica (this one included: server-wide messages are
// delivered by the same path everywhere).
func (s *Server) onBusMessage(b []byte) {
	var m busMessage
	if err := json.Unmarshal(b, &m); err != nil {
		s.peerWarn("mcp: malformed message on the replica bus", "error", err)
		return
	}
	if handle := busHandlers[m.Kind]; handle != nil {
		handle(s, &m)
	}
}

// busHandlers handles each kind of bus message; a kind not listed (from a newer replica) is
// ignored.
var busHandlers = map[string]func(*Server, *busMessage){
	busBroadcast:  (*Server).onBusBroadcast,
	busResource:   func(s *Server, m *busMessage) { s.resourceUpdatedLocal(m.URI, true) },
	busResponse:   (*Server).onBusResponse,
	busEnded:      (*Server).onBusEnded,
	busCancel:     (*Server).onBusCancel,
	busTaskCancel: (*Server).onBusTaskCancel,
	busTaskInput:  (*Server).onBusTaskInput,
}

// onBusBroadcast sends a server-wide notification to the sessions whose GET stream this
// replica holds.
func (s *Server) onBusBroadcast(m *busMessage) {
	var params any
	if len(m.Data) > 0 {
		params = m.Data
	}
	s.broadcastLocal(m.Method, params, true)
}

// onBusResponse delivers a client's response that reached another replica to the request of
// this one waiting for it.
func (s *Server) onBusResponse(m *busMessage) {
	sess := s.localSession(m.Session)
	msg, rpcErr := decodeMessage(m.Data)
	if sess == nil || rpcErr != nil || !msg.isResponse() || !sess.deliverResponse(msg) {
		s.peerDebug("mcp: a forwarded response found no request waiting for it", "session", m.Session)
	}
}

// onBusEnded forgets this replica's copy of a session deleted through another replica.
func (s *Server) onBusEnded(m *busMessage) {
	if sess := s.localSession(m.Session); sess != nil {
		s.dropSession(sess) // its handlers are cancelled, its GET stream ends
	}
}

// onBusCancel cancels a request of this replica that the client cancelled through another.
func (s *Server) onBusCancel(m *busMessage) {
	if sess := s.localSession(m.Session); sess != nil {
		var p CancelledParams
		if json.Unmarshal(m.Data, &p) == nil && p.RequestID != nil {
			sess.cancelRequest(p.RequestID)
		}
	}
}

// localSession returns this replica's copy of the session id, or nil.
func (s *Server) localSession(id string) *session {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.sessions[id]
}

// attachedSessions returns the sessions whose GET stream this replica holds.
func (s *Server) attachedSessions() []*session {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []*session
	for _, sess := range s.sessions {
		if sess.standalone.isAttached() {
			out = append(out, sess)
		}
	}
	return out
}

// isAttached reports whether a GET holds the stream.
func (st *stream) isAttached() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.attached
}

// identityString encodes who started a session, for SessionState.Owner.
func (id identity) String() string {
	if !id.authenticated {
		return ""
	}
	return id.issuer + "\x00" + id.subject + "\x00" + id.clientID
}

// parseIdentity decodes what identity.String encoded.
func parseIdentity(s string) identity {
	if s == "" {
		return identity{}
	}
	parts := strings.SplitN(s, "\x00", 3)
	for len(parts) < 3 {
		parts = append(parts, "")
	}
	return identity{authenticated: true, issuer: parts[0], subject: parts[1], clientID: parts[2]}
}

// sharedState is what the store keeps of sess.
func (sess *session) sharedState() *SessionState {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	st := &SessionState{
		ProtocolVersion: sess.protocolVersion,
		ClientInfo:      sess.clientInfo,
		Capabilities:    sess.clientCaps,
		Owner:           sess.owner.String(),
	}
	if l := sess.logLevel.Load(); l != nil {
		st.LogLevel = *l
	}
	for uri := range sess.subscriptions {
		st.Subscriptions = append(st.Subscriptions, uri)
	}
	return st
}

// applyState makes a replica's copy of a session what the store says. The bytes of its client
// info and subscriptions are charged to this replica's budgets, as for a session it started.
func (sess *session) applyState(st *SessionState) {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if sess.ended {
		return
	}
	sess.protocolVersion = st.ProtocolVersion
	sess.clientInfo = st.ClientInfo
	sess.clientCaps = st.Capabilities
	if owner := parseIdentity(st.Owner); owner != sess.owner {
		// Only for a copy not yet in the table: a session's owner never changes, and
		// ownedBy reads it without the lock.
		sess.owner = owner
	}
	sess.applyLogLevel(st.LogLevel)
	size := stateSize(&sess.clientInfo) + sess.applySubscriptionsLocked(st.Subscriptions)
	if size > sess.state {
		sess.reserve(size-sess.state, true)
	} else {
		sess.release(sess.state - size)
	}
	sess.state = size
}

// applyLogLevel sets the session's log level to the stored one, when one is stored and it
// differs (a store of the same level would allocate for nothing).
func (sess *session) applyLogLevel(stored LoggingLevel) {
	if stored == "" {
		return
	}
	if l := sess.logLevel.Load(); l == nil || *l != stored {
		sess.logLevel.Store(&stored)
	}
}

// applySubscriptionsLocked makes the session's subscriptions the stored ones (sess.mu is
// held), returning the bytes they are charged for.
func (sess *session) applySubscriptionsLocked(uris []string) int64 {
	clear(sess.subscriptions)
	var size int64
	for _, uri := range uris {
		sess.subscriptions[uri] = true
		size += int64(len(uri)) + subscriptionOverhead
	}
	return size
}

// storeUnavailable answers a request that needed the session store and could not reach it.
func (s *Server) storeUnavailable(w http.ResponseWriter, err error) {
	s.log.Warn("mcp: session store unavailable", "error", err)
	w.Header().Set("Retry-After", "1")
	s.httpError(w, http.StatusServiceUnavailable, CodeInternalError, "the session store is unavailable (the replicas of this server share sessions through it); try again shortly: "+err.Error())
}

// loadShared finds a session in the shared store: it refreshes this replica's copy, or makes
// one for a session another replica started. It answers the error itself when it cannot.
func (s *Server) loadShared(w http.ResponseWriter, r *http.Request, id string, sess *session) (*session, bool) {
	ctx, cancel := context.WithTimeout(r.Context(), storeTimeout)
	state, err := s.cluster.sessions.Load(ctx, id)
	cancel()
	if errors.Is(err, ErrSessionNotFound) {
		if sess != nil {
			s.dropSession(sess) // deleted through another replica, or expired
		}
		s.httpError(w, http.StatusNotFound, CodeInvalidRequest, "session not found: it expired or was deleted; send initialize to start a new one")
		return nil, false
	}
	if err != nil {
		s.storeUnavailable(w, err)
		return nil, false
	}
	if sess != nil {
		sess.applyState(state)
		return sess, true
	}
	return s.adoptShared(w, id, state, holderOf(TokenInfoFrom(r.Context()), r.RemoteAddr))
}

// adoptShared makes this replica's copy of a stored session that another replica started (or
// this one, before it forgot it), evicting a session of its own when the table is full; it
// answers the error itself when there is no room. h is the holder of the request that brought
// it (sessions.go).
func (s *Server) adoptShared(w http.ResponseWriter, id string, state *SessionState, h holder) (*session, bool) {
	s.mu.Lock()
	if sess := s.sessions[id]; sess != nil {
		s.mu.Unlock()
		sess.applyState(state)
		return sess, true
	}
	var evicted *session
	if len(s.sessions) >= s.cfg.maxSessions {
		evicted = s.evictLocked(h)
	}
	if len(s.sessions) >= s.cfg.maxSessions {
		s.mu.Unlock()
		s.httpError(w, http.StatusServiceUnavailable, CodeInternalError, "too many sessions on this replica; try again later")
		return nil, false
	}
	sess := s.newSession(&InitializeParams{}, state.ProtocolVersion)
	sess.id = id
	sess.holder = h
	sess.established.Store(true)
	sess.applyState(state)
	s.sessions[id] = sess
	s.startReapingLocked()
	s.mu.Unlock()
	if evicted != nil {
		evicted.end()
	}
	return sess, true
}

// dropSession forgets this replica's copy of a session, leaving the shared state alone.
func (s *Server) dropSession(sess *session) {
	s.mu.Lock()
	if s.sessions[sess.id] == sess {
		delete(s.sessions, sess.id)
	}
	s.mu.Unlock()
	sess.end()
}

// updateShared records a change to a session in the shared store, when there is one.
func (s *Server) updateShared(ctx context.Context, sess *session, change SessionChange) error {
	if s.cluster == nil || sess.stateless {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	if err := s.cluster.sessions.Update(ctx, sess.id, change); err != nil {
		return Errorf(CodeInternalError, "the session store is unavailable; the change was not recorded, try again: %v", err)
	}
	return nil
}

// touchShared extends the stored lifetime of the sessions this replica is working for (the
// reaper calls it): a client whose GET stream stays open sends no request to do it.
func (s *Server) touchShared(sessions []*session) {
	for _, sess := range sessions {
		ctx, cancel := context.WithTimeout(s.baseCtx, storeTimeout)
		err := s.cluster.sessions.Touch(ctx, sess.id)
		cancel()
		switch {
		case errors.Is(err, ErrSessionNotFound):
			s.dropSession(sess) // deleted or expired in the store: it ended everywhere
		case err != nil:
			s.log.Warn("mcp: could not extend a shared session's lifetime", "session", sess.id, "error", err)
		}
	}
}

// broadcastLocal sends a server-wide notification to the listen streams of this replica, and
// to its sessions: all of them on a server on its own (their standalone streams keep it until
// a GET takes it), only those whose GET stream it holds in a replica set (the bus brought the
// notification to every replica, and a session's stream is held by one).
func (s *Server) broadcastLocal(method string, params any, attachedOnly bool) {
	s.notifyListeners(method, "")
	for _, sess := range s.localSessions(attachedOnly) {
		if err := sess.notify(method, params); err != nil && !errors.Is(err, ErrClosed) {
			s.peerWarn("mcp: notification not queued", "session", sess.id, "method", method, "error", err)
		}
	}
}

// resourceUpdatedLocal sends resources/updated for uri to the listen streams of this replica
// and its subscribed sessions (in a replica set: those whose GET stream it holds, whose
// subscriptions it reads from the store, since they may have changed through another replica).
func (s *Server) resourceUpdatedLocal(uri string, attachedOnly bool) {
	s.notifyListeners(notifResourceUpdated, uri)
	for _, sess := range s.localSessions(attachedOnly) {
		if attachedOnly && !s.refreshShared(sess) {
			continue
		}
		s.resourceUpdated(sess, uri)
	}
}

// resourceUpdated sends resources/updated for uri to sess, when it subscribed to it.
func (s *Server) resourceUpdated(sess *session, uri string) {
	if !sess.subscribed(uri) {
		return
	}
	if err := sess.notify(notifResourceUpdated, map[string]string{"uri": uri}); err != nil {
		s.peerWarn("mcp: resource update not queued", "session", sess.id, "error", err)
	}
}

// subscribed reports whether the session subscribed to uri.
func (sess *session) subscribed(uri string) bool {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	return sess.subscriptions[uri]
}

// localSessions returns the sessions a notification of this replica goes to: those whose GET
// stream it holds when attachedOnly (in a replica set), else all of them.
func (s *Server) localSessions(attachedOnly bool) []*session {
	if attachedOnly {
		return s.attachedSessions()
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	all := make([]*session, 0, len(s.sessions))
	for _, sess := range s.sessions {
		all = append(all, sess)
	}
	return all
}

// refreshShared makes this replica's copy of sess what the store says (its subscriptions may
// have changed through another replica), reporting whether it could read the store.
func (s *Server) refreshShared(sess *session) bool {
	ctx, cancel := context.WithTimeout(s.baseCtx, storeTimeout)
	state, err := s.cluster.sessions.Load(ctx, sess.id)
	cancel()
	if err != nil {
		s.peerWarn("mcp: could not read a session's subscriptions; resource update not sent", "session", sess.id, "error", err)
		return false
	}
	sess.applyState(state)
	return true
}

// forwardResponse sends a client's response that no request of this replica awaits to the
// replica that sent the request, named by the request's ID (sharedRequestID). It reports
// false when the ID names no replica, or the bus is unreachable.
func (s *Server) forwardResponse(sess *session, msg *wireMessage, body []byte) bool {
	replica, ok := replicaOfRequest(msg.ID)
	if !ok || replica == s.cluster.replica {
		return false
	}
	return s.publish(replica, &busMessage{Kind: busResponse, Session: sess.id, Data: body})
}

// sharedRequestID is the ID of a server-to-client request in a replica set: it names the
// replica waiting for the response, wherever the client POSTs it.
func (c *cluster) sharedRequestID(n int64) ID {
	return StringID(c.replica + "-" + strconv.FormatInt(n, 10))
}

// replicaOfRequest returns the replica that sharedRequestID named in id, if it names one.
func replicaOfRequest(id *ID) (string, bool) {
	raw := id.raw
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	replica, _, ok := strings.Cut(raw[1:], "-")
	return replica, ok && replica != ""
}

// streamID names a stream of this replica: its request streams' event IDs start with the
// replica's ID, so that any replica knows whose stream a Last-Event-ID names.
func (c *cluster) streamID(n uint64) string {
	return c.replica + "." + strconv.FormatUint(n, 10)
}

// isRemoteStandalone reports whether streamID is the standalone stream of another replica: a
// GET resuming it starts this replica's standalone stream afresh (notifications are not
// replayed across replicas).
func (c *cluster) isRemoteStandalone(streamID string) bool {
	replica, n, ok := strings.Cut(streamID, ".")
	return ok && n == "0" && replica != c.replica
}

// storeEvent records an event of a request stream in the shared store before it is queued
// (st.mu is held): whatever replica the client resumes on finds it there.
func (c *cluster) storeEvent(st *stream, seq uint64, data []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if !st.opened {
		if err := c.events.OpenStream(ctx, st.sess.id, st.id, st.requestID); err != nil {
			return err
		}
		st.opened = true
	}
	if err := c.events.Append(ctx, st.sess.id, st.id, seq, data); err != nil {
		return err
	}
	st.stored = true
	return nil
}

// followRemote serves a GET resuming a request stream that another replica produced (or
// produces): the stored events after seq, then the ones stored later, until the response. When
// the replica producing the stream has stopped (its lease on the bus lapsed) before the
// response, it ends the stream with a JSON-RPC error saying so, stored like a response, so
// that every replica gives the client the same single outcome.
func (s *Server) followRemote(w http.ResponseWriter, r *http.Request, sess *session, streamID string, seq uint64) {
	ctx := r.Context()
	info, ok := s.storedStream(ctx, w, sess, streamID, seq)
	if !ok {
		return
	}
	owner, _, _ := strings.Cut(streamID, ".")
	f := &remoteFollower{s: s, c: s.cluster, ctx: ctx, w: w, sess: sess, streamID: streamID, owner: owner, requestID: info.RequestID, after: seq}
	f.sw = newSSEWriter(ctx, w, s.cfg.writeTimeout)
	defer f.sw.finish()
	f.sw.header()
	for f.round() {
	}
}

// storedStream looks up what the shared store knows of the stream streamID, answering 404
// itself when the store has no such stream, or no event seq of it (an ID the server never
// sent), and 503 when the store is unreachable.
func (s *Server) storedStream(ctx context.Context, w http.ResponseWriter, sess *session, streamID string, seq uint64) (StreamInfo, bool) {
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	info, err := s.cluster.events.StreamInfo(ctx, sess.id, streamID)
	cancel()
	if errors.Is(err, ErrSessionNotFound) || (err == nil && seq > info.LastSeq) {
		s.httpError(w, http.StatusNotFound, CodeInvalidRequest, "Last-Event-ID names no stored stream of this session")
		return StreamInfo{}, false
	}
	if err != nil {
		s.storeUnavailable(w, err)
		return StreamInfo{}, false
	}
	return info, true
}

// remoteFollower is the state of followRemote: the stream it follows and the newest event it
// sent.
type remoteFollower struct {
	s         *Server
	c         *cluster
	ctx       context.Context
	w         http.ResponseWriter
	sw        *sseWriter
	sess      *session
	streamID  string
	owner     string // the replica producing the stream
	requestID json.RawMessage
	after     uint64 // the newest event sent
}

// round sends the events stored since the last round and waits for more, reporting whether
// the stream goes on: it ends at the response, when the client is gone, or when the store or
// the bus cannot be read (the client resumes again).
func (f *remoteFollower) round() bool {
	final, err := f.replay()
	if err != nil {
		f.replayFailed(err)
		return false
	}
	if final {
		_ = f.sw.flush(true)
		return false
	}
	if err := f.sw.flush(false); err != nil {
		return false
	}
	return f.awaitMore()
}

// awaitMore waits for the stream's next events while the replica producing it lives; when it
// stopped, ownerStopped ends the stream. It reports whether the stream goes on.
func (f *remoteFollower) awaitMore() bool {
	actx, cancel := context.WithTimeout(f.ctx, storeTimeout)
	alive, err := f.c.bus.Alive(actx, f.owner)
	cancel()
	if err != nil {
		f.s.log.Debug("mcp: could not learn whether a replica is alive", "replica", f.owner, "error", err)
		return false // the client resumes again
	}
	if !alive {
		return f.ownerStopped()
	}
	err = f.c.events.Wait(f.ctx, f.sess.id, f.streamID, f.after)
	return err == nil || f.ctx.Err() == nil
}

// replay sends the events stored after the newest one sent, reporting whether the response
// was among them.
func (f *remoteFollower) replay() (final bool, err error) {
	rctx, cancel := context.WithTimeout(f.ctx, storeTimeout)
	defer cancel()
	err = f.c.events.Replay(rctx, f.sess.id, f.streamID, f.after, func(n uint64, data []byte) error {
		if isResponse(data) {
			final = true
		}
		if len(data) > sseChunk { // in pieces, from the stored copy
			f.after = n
			return f.sw.eventChunked(f.streamID, n, data)
		}
		f.sw.event(f.streamID, n, data)
		f.after = n
		if len(f.sw.buf) >= sseChunk {
			return f.sw.flush(false)
		}
		return nil
	})
	return final, err
}

// replayFailed answers a replay that failed before anything was sent: not found when the
// events were evicted, unavailable when the store could not be read.
func (f *remoteFollower) replayFailed(err error) {
	f.s.log.Debug("mcp: following a stream of another replica stopped", "session", f.sess.id, "stream", f.streamID, "error", err)
	if f.sw.sent {
		return
	}
	if errors.Is(err, ErrEventsEvicted) {
		f.s.writeJSON(f.w, http.StatusNotFound, encodeResponse(nil, nil, NewError(CodeInvalidRequest, err.Error())))
	} else {
		f.s.storeUnavailable(f.w, err)
	}
}

// ownerStopped ends a stream whose replica stopped before the response: the events it stored
// before its lease ended come first, then the error stored as the outcome, unless another
// replica stored one first (then the stream goes on, to replay that one).
func (f *remoteFollower) ownerStopped() bool {
	if final, err := f.replay(); err != nil || final {
		if err == nil {
			_ = f.sw.flush(true)
		}
		return false
	}
	data := encodeResponse(&ID{raw: string(f.requestID)}, nil, Errorf(CodeInternalError, "the server replica that was serving this request (%s) stopped before answering; the request may or may not have taken effect", f.owner))
	actx, cancel := context.WithTimeout(f.ctx, storeTimeout)
	err := f.c.events.Append(actx, f.sess.id, f.streamID, f.after+1, data)
	cancel()
	if errors.Is(err, ErrEventConflict) {
		return true // another replica wrote the outcome first: replay it
	}
	if err != nil {
		return false
	}
	f.sw.event(f.streamID, f.after+1, data)
	_ = f.sw.flush(true)
	return false
}

// isResponse reports whether data, a stored event, is a JSON-RPC response: on a request
// stream, the last event.
func isResponse(data []byte) bool {
	var probe struct {
		Method string          `json:"method"`
		ID     json.RawMessage `json:"id"`
	}
	return json.Unmarshal(data, &probe) == nil && probe.Method == "" && len(probe.ID) > 0
}

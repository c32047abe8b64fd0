package runtime

import (
	"time"
)

// The session table under pressure. A client can start sessions as fast as it can send
// initialize; if every one of them were kept for the idle timeout, one client could fill the
// table and lock everyone else out. So:
//   - a session that never completes the handshake (no message after initialize's answer:
//     neither notifications/initialized nor anything else) ends after the handshake timeout;
//   - when the table is full, initialize makes room rather than failing: it ends the oldest
//     session that has not completed its handshake, or else the least recently used session
//     that is idle (nothing in flight, no GET stream open). Sessions at work are never evicted.
//     An evicted client gets 404 on its next request and, as the Streamable HTTP transport's
//     session management says, starts a new session;
//   - only when every session is at work does initialize get 503.

// defaultHandshakeTimeout is how long a session may wait for its first message after
// initialize.
const defaultHandshakeTimeout = 10 * time.Second

// evictLocked removes from the table the session that initialize may replace when the table
// is full, and returns it (the caller ends it once s.mu is released), or nil when every
// session is at work. s.mu is held.
func (s *Server) evictLocked() *session {
	victim := s.oldestFreshLocked()
	if victim == nil {
		victim = s.leastRecentIdleLocked()
	}
	if victim != nil {
		delete(s.sessions, victim.id)
	}
	return victim
}

// oldestFreshLocked returns the oldest session that has not completed its handshake, or nil.
// s.mu is held.
func (s *Server) oldestFreshLocked() *session {
	var fresh *session
	for _, sess := range s.sessions {
		if !sess.established.Load() && (fresh == nil || sess.created < fresh.created) {
			fresh = sess
		}
	}
	return fresh
}

// leastRecentIdleLocked returns the least recently used session that is idle (nothing in
// flight, no GET stream open), or nil when every session is at work. s.mu is held.
func (s *Server) leastRecentIdleLocked() *session {
	var (
		idle   *session
		idleAt int64
	)
	for _, sess := range s.sessions {
		if used := sess.lastUsed.Load(); (idle == nil || used < idleAt) && sess.idle() {
			idle, idleAt = sess, used
		}
	}
	return idle
}

// expiredHandshakesLocked returns the sessions that did not complete their handshake in time.
// s.mu is held.
func (s *Server) expiredHandshakesLocked(now int64) []*session {
	if s.cfg.handshakeTimeout <= 0 {
		return nil
	}
	cutoff := now - int64(s.cfg.handshakeTimeout)
	var out []*session
	for _, sess := range s.sessions {
		if !sess.established.Load() && sess.created < cutoff {
			out = append(out, sess)
		}
	}
	return out
}

// reapInterval is how often the reaper looks at the table.
func (s *Server) reapInterval() time.Duration {
	d := time.Minute
	if t := s.cfg.sessionIdleTimeout; t > 0 {
		d = min(d, t/2)
	}
	if t := s.cfg.handshakeTimeout; t > 0 {
		d = min(d, t/2)
	}
	return max(d, time.Millisecond)
}

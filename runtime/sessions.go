package runtime

import (
	"net"
	"time"
)

// The session table under pressure. A client can start sessions as fast as it can send
// initialize; if every one of them were kept for the idle timeout, one client could fill the
// table and lock everyone else out. So:
//   - a session that never completes the handshake (no message after initialize's answer:
//     neither notifications/initialized nor anything else) ends after the handshake timeout;
//   - when the table is full, initialize makes room rather than failing, by ending a session
//     that is not at work: one that has not completed its handshake, or one that is idle
//     (nothing in flight, no GET stream open). Sessions at work are never evicted. An
//     evicted client gets 404 on its next request and, as the Streamable HTTP transport's
//     session management says, starts a new session (spec 2025-11-25, Basic, Transports,
//     Session Management);
//   - the victim belongs to the holder (the authenticated identity, else the client's
//     address) that holds the most sessions, and never to a holder that holds as few
//     sessions as the newcomer's or fewer: a client that floods the table churns through
//     its own sessions, not other clients';
//   - a session is safe from its own holder's newcomers for a grace period after its
//     initialize is answered (evictionGrace), long enough to complete the handshake; a
//     newcomer of a holder with fewer sessions may still end it;
//   - only when no session may be evicted does initialize get 503.

// defaultHandshakeTimeout is how long a session may wait for its first message after
// initialize.
const defaultHandshakeTimeout = 10 * time.Second

// defaultEvictionGrace is how long after its initialize is answered a session is safe from
// eviction by newcomers of its own holder.
const defaultEvictionGrace = 2 * time.Second

// holder is who a session is charged to in the session table under pressure: its
// authenticated identity, else the address its initialize came from (without the port).
type holder struct {
	id   identity
	addr string
}

// holderOf returns the holder of a session started by token's identity from peer, the
// request's remote address (host:port; empty on stdio).
func holderOf(token *TokenInfo, peer string) holder {
	if id := token.identity(); id.authenticated {
		return holder{id: id}
	}
	if host, _, err := net.SplitHostPort(peer); err == nil {
		peer = host
	}
	return holder{addr: peer}
}

// evictLocked removes from the table the session that a newcomer of holder h may replace when
// the table is full, and returns it (the caller ends it once s.mu is released), or nil when no
// session may go. s.mu is held.
func (s *Server) evictLocked(h holder) *session {
	counts := make(map[holder]int, 4)
	for _, sess := range s.sessions {
		counts[sess.holder]++
	}
	mine := counts[h]
	graceEnd := time.Now().UnixNano() - int64(s.cfg.evictionGrace)
	var (
		victim *session
		best   evictRank
	)
	for _, sess := range s.sessions {
		n := counts[sess.holder]
		own := sess.holder == h
		if !own && n <= mine {
			continue // a holder with as few sessions as the newcomer's keeps them
		}
		young := sess.created > graceEnd
		if own && young {
			continue // its handshake may still be under way
		}
		fresh := !sess.established.Load()
		if !fresh && !sess.idle() {
			continue // at work
		}
		r := evictRank{count: n, old: !young, fresh: fresh, at: sess.created}
		if !fresh {
			r.at = sess.lastUsed.Load()
		}
		if victim == nil || r.before(best) {
			victim, best = sess, r
		}
	}
	if victim != nil {
		delete(s.sessions, victim.id)
	}
	return victim
}

// evictRank orders the sessions a newcomer may evict: the biggest holder's first, past their
// grace period before young ones, half-open before established, the oldest (half-open) or
// least recently used (established) first.
type evictRank struct {
	count int
	old   bool
	fresh bool
	at    int64
}

// before reports whether r goes before o.
func (r evictRank) before(o evictRank) bool {
	switch {
	case r.count != o.count:
		return r.count > o.count
	case r.old != o.old:
		return r.old
	case r.fresh != o.fresh:
		return r.fresh
	}
	return r.at < o.at
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

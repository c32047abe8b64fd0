package runtime

import (
	"context"
	"sync"
	"time"
)

// retentionSlack is how late past its retention period a delivered stream may be forgotten, so
// that one firing of the timer forgets every stream that fell due in that time: at a steady
// rate of SSE answers the timer fires at most ten times a second, not once per answer.
const retentionSlack = 100 * time.Millisecond

// retention forgets the stored events of delivered request streams once the retention period
// (WithEventRetention) has passed. The period is the same for every stream, so the streams are
// due in the order they were delivered: one queue and one timer, armed for the oldest, serve
// the whole server, where a time.AfterFunc per stream cost a timer and a closure per SSE
// answer.
type retention struct {
	mu    sync.Mutex
	epoch time.Time   // the origin of the due times (monotonic)
	ring  []dueStream // a ring buffer: n entries from head, oldest first
	head  int
	n     int
	timer *time.Timer // made at the first stream; reused
	armed bool        // the timer will fire
}

// dueStream is a delivered stream whose events are forgotten at due (since the epoch).
type dueStream struct {
	due             time.Duration
	session, stream string
}

// retain schedules the deletion of a delivered stream's events from the event store, after the
// retention period. It allocates nothing once the ring holds as many streams as a retention
// period delivers.
func (s *Server) retain(session, stream string) {
	r := &s.retention
	d := s.cfg.eventRetention
	r.mu.Lock()
	if r.epoch.IsZero() {
		r.epoch = time.Now()
	}
	if r.n == len(r.ring) {
		r.growLocked()
	}
	r.ring[(r.head+r.n)%len(r.ring)] = dueStream{due: time.Since(r.epoch) + d, session: session, stream: stream}
	r.n++
	switch {
	case r.armed:
	case r.timer == nil:
		r.armed = true
		r.timer = time.AfterFunc(d+retentionSlack, s.forgetDue)
	default:
		r.armed = true
		r.timer.Reset(d + retentionSlack)
	}
	r.mu.Unlock()
}

// growLocked doubles the full ring, the oldest first again. r.mu is held.
func (r *retention) growLocked() {
	grown := make([]dueStream, max(2*len(r.ring), 64))
	k := copy(grown, r.ring[r.head:])
	copy(grown[k:], r.ring[:r.head])
	r.ring, r.head = grown, 0
}

// forgetDue deletes the streams whose retention period has passed, and arms the timer for the
// next one. The deletions run outside the lock, a batch at a time: a store across the network
// must not hold up the writers that schedule more.
func (s *Server) forgetDue() {
	r := &s.retention
	var batch [64]dueStream
	for {
		now := time.Since(r.epoch)
		r.mu.Lock()
		k := r.takeDueLocked(batch[:], now)
		if k == 0 {
			r.rearmLocked(now)
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()
		for _, d := range batch[:k] {
			_ = s.cfg.eventStore.DeleteStream(context.Background(), d.session, d.stream)
		}
	}
}

// takeDueLocked moves into batch the oldest streams whose retention period has passed by now,
// as many as fit, and returns how many it moved. r.mu is held.
func (r *retention) takeDueLocked(batch []dueStream, now time.Duration) int {
	k := 0
	for k < len(batch) && r.n > 0 && r.ring[r.head].due <= now {
		batch[k] = r.ring[r.head]
		r.ring[r.head] = dueStream{}
		r.head = (r.head + 1) % len(r.ring)
		r.n--
		k++
	}
	return k
}

// rearmLocked arms the timer for the oldest stream's due time, or records that it is not
// armed when no stream is left. r.mu is held.
func (r *retention) rearmLocked(now time.Duration) {
	if r.n > 0 {
		r.timer.Reset(r.ring[r.head].due - now + retentionSlack)
	} else {
		r.armed = false
	}
}

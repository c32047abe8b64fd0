package runtime

import (
	"context"
	"errors"
	"math"
	"sort"
	"sync"
)

// EventStore keeps the SSE events a server has written, so that a client whose connection
// dropped can resume a stream with GET and Last-Event-ID and receive every event after the
// last one it saw, exactly once. Events are identified by session, stream and a sequence
// number that starts at 1 for each stream. Implementations must be safe for concurrent use.
type EventStore interface {
	// Append records event seq of a stream just before it is written to the client.
	Append(ctx context.Context, session, stream string, seq uint64, data []byte) error
	// Replay calls fn, in order, for every stored event of the stream with a sequence number
	// greater than after. It returns once ctx ends (the client left, a newer resumption took
	// the stream over, the server shuts down): Server.Shutdown waits for a replay that
	// does not only for a few seconds, then logs it and leaves it running.
	Replay(ctx context.Context, session, stream string, after uint64, fn func(seq uint64, data []byte) error) error
	// DeleteStream forgets a stream, once its response has been delivered.
	DeleteStream(ctx context.Context, session, stream string) error
	// DeleteSession forgets every stream of a session.
	DeleteSession(ctx context.Context, session string) error
}

// MemoryEventStore is the default EventStore: events kept in memory, bounded in bytes per
// session and in total. When a session's events exceed its bound, its oldest streams are
// forgotten first; when all sessions' events exceed the total, the oldest streams of any
// session are.
type MemoryEventStore struct {
	maxBytes int
	maxTotal int
	mu       sync.Mutex
	sessions map[string]*memSession
	total    int         // bytes of event data, all sessions
	order    []streamKey // every stream, oldest first (entries of forgotten streams are skipped)
	nstreams int         // streams stored, all sessions
}

// streamKey names a stream of a session.
type streamKey struct{ session, stream string }

// MemoryEventStoreOption configures a MemoryEventStore.
type MemoryEventStoreOption func(*MemoryEventStore)

// WithMaxTotalEventBytes bounds the event data a MemoryEventStore keeps for all sessions
// together (default 256 MiB; zero means the default, Unlimited no bound, as for every
// numeric option); the oldest streams of any session are forgotten first, and resuming them
// gets 404, as with the per-session bound.
func WithMaxTotalEventBytes(n int) MemoryEventStoreOption {
	return func(m *MemoryEventStore) { setLimit(&m.maxTotal, n, math.MaxInt>>2) }
}

type memSession struct {
	bytes   int
	order   []string // stream keys, oldest first
	streams map[string][]storedEvent
	evicted map[string]uint64 // stream -> the highest sequence number evicted from it
}

// ErrEventsEvicted is returned by MemoryEventStore.Replay when events after the requested one
// were evicted to keep within the store's bound: replaying the rest would skip them silently.
var ErrEventsEvicted = errors.New("mcp: the events after this Last-Event-ID are no longer stored (the event store's size limit); the stream cannot be resumed")

type storedEvent struct {
	seq  uint64
	data []byte
}

// NewMemoryEventStore returns an in-memory EventStore keeping at most maxBytesPerSession bytes
// of event data per session (0 means the default, 16 MiB; Unlimited no bound but the total),
// and at most 256 MiB for all sessions (see WithMaxTotalEventBytes).
func NewMemoryEventStore(maxBytesPerSession int, opts ...MemoryEventStoreOption) *MemoryEventStore {
	perSession := 16 << 20
	setLimit(&perSession, maxBytesPerSession, math.MaxInt>>2)
	m := &MemoryEventStore{maxBytes: perSession, maxTotal: 256 << 20, sessions: make(map[string]*memSession)}
	for _, o := range opts {
		o(m)
	}
	return m
}

// Append implements EventStore.
func (m *MemoryEventStore) Append(_ context.Context, session, stream string, seq uint64, data []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sessions[session]
	if s == nil {
		s = &memSession{streams: make(map[string][]storedEvent), evicted: make(map[string]uint64)}
		m.sessions[session] = s
	}
	before, streamsBefore := s.bytes, len(s.streams)
	defer func() {
		m.total += s.bytes - before
		m.nstreams += len(s.streams) - streamsBefore
		m.evictTotal(session, stream)
	}()
	evs, ok := s.streams[stream]
	if !ok {
		s.order = append(s.order, stream)
		m.order = append(m.order, streamKey{session, stream})
	}
	s.streams[stream] = append(evs, storedEvent{seq: seq, data: data})
	s.bytes += len(data)
	for s.bytes > m.maxBytes && len(s.order) > 1 {
		oldest := s.order[0]
		s.order = s.order[1:]
		s.dropStream(oldest, true)
	}
	if s.bytes > m.maxBytes {
		s.trimStream(stream, m.maxBytes)
	}
	return nil
}

// dropStream forgets the events of stream, returning their bytes; when evicted, the newest of
// them is recorded as evicted, so that a replay from before it fails rather than skip them.
// The caller removes the stream from the orders.
func (s *memSession) dropStream(stream string, evicted bool) int {
	evs := s.streams[stream]
	n := 0
	for _, e := range evs {
		n += len(e.data)
	}
	s.bytes -= n
	if evicted && len(evs) > 0 {
		s.evicted[stream] = max(s.evicted[stream], evs[len(evs)-1].seq)
	}
	delete(s.streams, stream)
	return n
}

// trimStream drops the oldest events of stream, over the session's bound of maxBytes on its
// own, until it fits or only its newest event is left.
func (s *memSession) trimStream(stream string, maxBytes int) {
	evs := s.streams[stream]
	i := 0
	for s.bytes > maxBytes && i < len(evs)-1 {
		s.bytes -= len(evs[i].data)
		s.evicted[stream] = max(s.evicted[stream], evs[i].seq)
		i++
	}
	s.streams[stream] = append([]storedEvent(nil), evs[i:]...)
}

// evictTotal forgets the oldest streams of any session until all events fit in maxTotal,
// sparing the stream just appended to. m.mu is held.
func (m *MemoryEventStore) evictTotal(session, stream string) {
	for i := 0; m.total > m.maxTotal && i < len(m.order); {
		k := m.order[0]
		s := m.holder(k)
		switch {
		case s == nil:
			m.order = m.order[1:] // forgotten already
		case k.session == session && k.stream == stream:
			m.order = append(m.order[1:], k) // spared: now the newest
			i++
		default:
			m.order = m.order[1:]
			m.total -= s.dropStream(k.stream, true)
			m.nstreams--
			s.forget(k.stream)
		}
	}
	if len(m.order) > 2*m.nstreams+1024 {
		m.compactOrder()
	}
}

// holder returns the session that holds the stream k, or nil when it was forgotten. m.mu is
// held.
func (m *MemoryEventStore) holder(k streamKey) *memSession {
	s := m.sessions[k.session]
	if s == nil {
		return nil
	}
	if _, ok := s.streams[k.stream]; !ok {
		return nil
	}
	return s
}

// compactOrder drops the entries of forgotten streams from the store's order. m.mu is held.
func (m *MemoryEventStore) compactOrder() {
	kept := m.order[:0]
	for _, k := range m.order {
		if m.holder(k) != nil {
			kept = append(kept, k)
		}
	}
	clear(m.order[len(kept):])
	m.order = kept
}

// Replay implements EventStore. It copies at most replayBatch events at a time under its
// lock, so that a replay costs a small constant however much the stream holds.
func (m *MemoryEventStore) Replay(ctx context.Context, session, stream string, after uint64, fn func(uint64, []byte) error) error {
	var batch [replayBatch]storedEvent
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, err := m.copyAfter(session, stream, after, &batch)
		if err != nil {
			return err
		}
		for _, e := range batch[:n] {
			if err := fn(e.seq, e.data); err != nil {
				return err
			}
			after = e.seq
		}
		if n < replayBatch {
			return nil
		}
	}
}

// copyAfter copies into batch the first events of stream after seq after, returning how many
// it copied, or ErrEventsEvicted when some of them were evicted: checked before every batch,
// since events evicted since the last one would be skipped.
func (m *MemoryEventStore) copyAfter(session, stream string, after uint64, batch *[replayBatch]storedEvent) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sessions[session]
	if s == nil {
		return 0, nil
	}
	if floor, ok := s.evicted[stream]; ok && after < floor {
		return 0, ErrEventsEvicted
	}
	evs := s.streams[stream]
	i := sort.Search(len(evs), func(i int) bool { return evs[i].seq > after })
	return copy(batch[:], evs[i:]), nil
}

// replayBatch is how many events MemoryEventStore.Replay copies under its lock at a time.
const replayBatch = 64

// DeleteStream implements EventStore.
func (m *MemoryEventStore) DeleteStream(_ context.Context, session, stream string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sessions[session]
	if s == nil {
		return nil
	}
	delete(s.evicted, stream)
	if _, ok := s.streams[stream]; !ok {
		return nil
	}
	m.total -= s.dropStream(stream, false)
	m.nstreams--
	s.forget(stream)
	return nil
}

// forget removes stream from the session's order. Streams are deleted mostly oldest first
// (their retention periods end in the order they were delivered), behind at most a few that
// live long (a standalone GET stream): the search is short, and the entries before it are the
// ones moved, so that a deletion costs little however many streams the session holds. (Closing
// the gap after it moved every newer entry: 18 µs per deletion with 40,000 streams held.)
func (s *memSession) forget(stream string) {
	for i, k := range s.order {
		if k != stream {
			continue
		}
		if i < len(s.order)/2 {
			copy(s.order[1:i+1], s.order[:i])
			s.order[0] = ""
			s.order = s.order[1:]
		} else {
			copy(s.order[i:], s.order[i+1:])
			s.order[len(s.order)-1] = ""
			s.order = s.order[:len(s.order)-1]
		}
		return
	}
}

// DeleteSession implements EventStore.
func (m *MemoryEventStore) DeleteSession(_ context.Context, session string) error {
	m.mu.Lock()
	if s := m.sessions[session]; s != nil {
		m.total -= s.bytes
		m.nstreams -= len(s.streams)
		delete(m.sessions, session)
	}
	m.mu.Unlock()
	return nil
}

package runtime

import (
	"context"
	"errors"
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
	// greater than after.
	Replay(ctx context.Context, session, stream string, after uint64, fn func(seq uint64, data []byte) error) error
	// DeleteStream forgets a stream, once its response has been delivered.
	DeleteStream(ctx context.Context, session, stream string) error
	// DeleteSession forgets every stream of a session.
	DeleteSession(ctx context.Context, session string) error
}

// MemoryEventStore is the default EventStore: events kept in memory, bounded in bytes per
// session. When a session's events exceed the bound, the oldest streams are forgotten first.
type MemoryEventStore struct {
	maxBytes int
	mu       sync.Mutex
	sessions map[string]*memSession
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
// of event data per session (0 means 16 MiB).
func NewMemoryEventStore(maxBytesPerSession int) *MemoryEventStore {
	if maxBytesPerSession <= 0 {
		maxBytesPerSession = 16 << 20
	}
	return &MemoryEventStore{maxBytes: maxBytesPerSession, sessions: make(map[string]*memSession)}
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
	evs, ok := s.streams[stream]
	if !ok {
		s.order = append(s.order, stream)
	}
	s.streams[stream] = append(evs, storedEvent{seq: seq, data: data})
	s.bytes += len(data)
	for s.bytes > m.maxBytes && len(s.order) > 1 {
		oldest := s.order[0]
		s.order = s.order[1:]
		evs := s.streams[oldest]
		for _, e := range evs {
			s.bytes -= len(e.data)
		}
		if len(evs) > 0 {
			s.evicted[oldest] = max(s.evicted[oldest], evs[len(evs)-1].seq)
		}
		delete(s.streams, oldest)
	}
	// One stream over the bound on its own: drop its oldest events, keeping the newest.
	if evs := s.streams[stream]; s.bytes > m.maxBytes {
		i := 0
		for s.bytes > m.maxBytes && i < len(evs)-1 {
			s.bytes -= len(evs[i].data)
			s.evicted[stream] = max(s.evicted[stream], evs[i].seq)
			i++
		}
		s.streams[stream] = append([]storedEvent(nil), evs[i:]...)
	}
	return nil
}

// Replay implements EventStore. It copies at most replayBatch events at a time under its
// lock, so that a replay costs a small constant however much the stream holds.
func (m *MemoryEventStore) Replay(ctx context.Context, session, stream string, after uint64, fn func(uint64, []byte) error) error {
	var batch [replayBatch]storedEvent
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		m.mu.Lock()
		n := 0
		if s := m.sessions[session]; s != nil {
			if floor, ok := s.evicted[stream]; ok && after < floor {
				// Also between batches: events evicted since the last one would be skipped.
				m.mu.Unlock()
				return ErrEventsEvicted
			}
			evs := s.streams[stream]
			i := sort.Search(len(evs), func(i int) bool { return evs[i].seq > after })
			n = copy(batch[:], evs[i:])
		}
		m.mu.Unlock()
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
	evs, ok := s.streams[stream]
	if !ok {
		return nil
	}
	for _, e := range evs {
		s.bytes -= len(e.data)
	}
	delete(s.streams, stream)
	for i, k := range s.order {
		if k == stream {
			s.order = append(s.order[:i], s.order[i+1:]...)
			break
		}
	}
	return nil
}

// DeleteSession implements EventStore.
func (m *MemoryEventStore) DeleteSession(_ context.Context, session string) error {
	m.mu.Lock()
	delete(m.sessions, session)
	m.mu.Unlock()
	return nil
}

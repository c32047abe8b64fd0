package runtime

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// MemoryTaskStore is the TaskStore a Server uses by default: tasks in its own memory, lost
// with the process, seen by this process only.
type MemoryTaskStore struct {
	mu       sync.Mutex
	tasks    map[string]*TaskRecord
	bytes    int64
	maxBytes int64 // the Bytes of the last Create's limits, which Update keeps to
	now      func() time.Time
}

// NewMemoryTaskStore returns an empty in-memory TaskStore.
func NewMemoryTaskStore() *MemoryTaskStore {
	return &MemoryTaskStore{tasks: make(map[string]*TaskRecord), now: time.Now}
}

// Create implements TaskStore.
func (m *MemoryTaskStore) Create(_ context.Context, rec *TaskRecord, limits TaskLimits) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweepLocked()
	if _, dup := m.tasks[rec.ID]; dup {
		return fmt.Errorf("mcp: task %q already exists", rec.ID)
	}
	if limits.Total > 0 && len(m.tasks) >= limits.Total {
		return fmt.Errorf("%w: the server holds %d tasks, its limit", ErrTaskLimit, limits.Total)
	}
	if limits.PerOwner > 0 {
		n := 0
		for _, r := range m.tasks {
			if r.Owner == rec.Owner {
				n++
			}
		}
		if n >= limits.PerOwner {
			return fmt.Errorf("%w: this caller holds %d tasks, the most one caller may hold", ErrTaskLimit, limits.PerOwner)
		}
	}
	m.maxBytes = limits.Bytes
	size := rec.Size()
	if limits.Bytes > 0 && m.bytes+size > limits.Bytes {
		return fmt.Errorf("%w: the task store's budget of %d bytes is used up", ErrTaskLimit, limits.Bytes)
	}
	c := *rec
	m.tasks[rec.ID] = &c
	m.bytes += size
	return nil
}

// Get implements TaskStore.
func (m *MemoryTaskStore) Get(_ context.Context, id string) (*TaskRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.liveLocked(id)
	if r == nil {
		return nil, ErrTaskNotFound
	}
	c := *r
	return &c, nil
}

// Update implements TaskStore.
func (m *MemoryTaskStore) Update(_ context.Context, id string, fn func(*TaskRecord) error) (*TaskRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.liveLocked(id)
	if r == nil {
		return nil, ErrTaskNotFound
	}
	c := *r
	if err := fn(&c); err != nil {
		return nil, err
	}
	grow := c.Size() - r.Size()
	if m.maxBytes > 0 && grow > 0 && m.bytes+grow > m.maxBytes {
		return nil, fmt.Errorf("%w: the task store's budget of %d bytes is used up", ErrTaskLimit, m.maxBytes)
	}
	m.bytes += grow
	*r = c
	out := c
	return &out, nil
}

// List implements TaskStore.
func (m *MemoryTaskStore) List(_ context.Context, owner, after string, limit int) ([]*TaskRecord, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweepLocked()
	var mine []*TaskRecord
	for _, r := range m.tasks {
		if r.Owner == owner {
			mine = append(mine, r)
		}
	}
	slices.SortFunc(mine, func(a, b *TaskRecord) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	start := 0
	if after != "" {
		start = len(mine)
		for i, r := range mine {
			if r.ID == after {
				start = i + 1
				break
			}
		}
	}
	mine = mine[start:]
	more := limit > 0 && len(mine) > limit
	if more {
		mine = mine[:limit]
	}
	out := make([]*TaskRecord, len(mine))
	for i, r := range mine {
		c := *r
		out[i] = &c
	}
	return out, more, nil
}

// Delete implements TaskStore.
func (m *MemoryTaskStore) Delete(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r := m.tasks[id]; r != nil {
		m.bytes -= r.Size()
		delete(m.tasks, id)
	}
	return nil
}

// liveLocked returns the record id if it is live, forgetting it if its TTL ran out.
func (m *MemoryTaskStore) liveLocked(id string) *TaskRecord {
	r := m.tasks[id]
	if r != nil && r.expired(m.now()) {
		m.bytes -= r.Size()
		delete(m.tasks, id)
		return nil
	}
	return r
}

// sweepLocked forgets every record whose TTL ran out.
func (m *MemoryTaskStore) sweepLocked() {
	now := m.now()
	for id, r := range m.tasks {
		if r.expired(now) {
			m.bytes -= r.Size()
			delete(m.tasks, id)
		}
	}
}

package runtime

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// BenchmarkMemoryEventStoreSteady is the event store's cost per SSE answer at a steady state:
// one session holding a retention period's worth of delivered streams (10 s at 4000 answers a
// second) behind a standalone GET stream that lives as long as the session, each new answer
// stored as a stream of one event while the oldest is deleted.
func BenchmarkMemoryEventStoreSteady(b *testing.B) {
	const held = 40000
	ctx := context.Background()
	m := NewMemoryEventStore(0)
	data := make([]byte, 200)
	ids := make([]string, held) // the streams held, a ring: ids[i%held] is the oldest
	_ = m.Append(ctx, "sess", "standalone", 1, data)
	for i := range held {
		ids[i] = "s" + strconv.Itoa(i)
		_ = m.Append(ctx, "sess", ids[i], 1, data)
	}
	next := held
	b.ReportAllocs()
	for b.Loop() {
		id := "s" + strconv.Itoa(next)
		oldest := ids[next%held]
		ids[next%held] = id
		_ = m.Append(ctx, "sess", id, 1, data)
		_ = m.DeleteStream(ctx, "sess", oldest)
		next++
	}
}

// TestMemoryEventStoreDeleteKeepsOrder: deleting streams from anywhere in a session (the
// front, behind a long-lived stream, the back) leaves the others in age order: the per-session
// bound then evicts the oldest of them first.
func TestMemoryEventStoreDeleteKeepsOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := NewMemoryEventStore(100) // ten 10-byte streams
	data := make([]byte, 10)
	name := func(i int) string { return "s" + strconv.Itoa(i) }
	for i := range 10 {
		require.NoError(t, m.Append(ctx, "sess", name(i), 1, data))
	}
	// Delete s1, s2 (the front half, behind s0), s8 (the back half) and s5.
	for _, i := range []int{1, 2, 8, 5} {
		require.NoError(t, m.DeleteStream(ctx, "sess", name(i)))
	}
	require.Equal(t, []string{"s0", "s3", "s4", "s6", "s7", "s9"}, m.sessions["sess"].order)
	// Six streams held (60 bytes): seven more evict the three oldest (s0, s3, s4).
	for i := 10; i < 17; i++ {
		require.NoError(t, m.Append(ctx, "sess", name(i), 1, data))
	}
	stored := func(i int) error {
		return m.Replay(ctx, "sess", name(i), 0, func(uint64, []byte) error { return nil })
	}
	for _, i := range []int{0, 3, 4} {
		assert.ErrorIs(t, stored(i), ErrEventsEvicted, "%s, among the oldest, is evicted", name(i))
	}
	for _, i := range []int{6, 7, 9, 10, 16} {
		assert.NoError(t, stored(i), "%s is kept", name(i))
	}
	assert.Equal(t, []string{"s6", "s7", "s9", "s10", "s11", "s12", "s13", "s14", "s15", "s16"}, m.sessions["sess"].order)
}

package runtime

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// TestHandlerDeadline: a handler's context carries the handler timeout as its deadline (to
// within the shared window), ends with context.DeadlineExceeded, and so do the contexts it
// derives; requests of one window share one deadline context, and a request's own context
// ends with it, not with its neighbours.
func TestHandlerDeadline(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	const timeout = 640 * time.Millisecond // a 10 ms window
	s := NewServer(Implementation{Name: "deadline", Version: "0"}, WithLogger(discardLogger()), WithHandlerTimeout(timeout))
	defer s.Shutdown(context.Background())
	var d deadlines
	parent, stop := context.WithCancel(context.Background())
	defer stop()

	start := time.Now()
	a, cancelA := s.handlerContext(parent, &d)
	b, cancelB := s.handlerContext(parent, &d)
	da, ok := a.Deadline()
	require.True(t, ok, "a handler's context has a deadline")
	assert.False(t, da.Before(start.Add(timeout)), "deadline %v is before start + timeout", da.Sub(start))
	assert.LessOrEqual(t, da.Sub(start), timeout+2*deadlineWindow(timeout)+50*time.Millisecond, "deadline beyond the window")
	db, _ := b.Deadline()
	assert.Equal(t, da, db, "two requests of one window share a deadline")

	cancelB() // a request that ends leaves its neighbour running
	assert.ErrorIs(t, b.Err(), context.Canceled)
	assert.NoError(t, a.Err(), "the other request of the window")

	derived, cancelDerived := context.WithCancel(a)
	defer cancelDerived()
	select {
	case <-a.Done():
	case <-time.After(10 * timeout):
		require.Fail(t, "the handler's context did not end at its deadline")
	}
	assert.True(t, errors.Is(a.Err(), context.DeadlineExceeded), "a.Err() = %v", a.Err())
	// A context derived from a's is cancelled by a goroutine of package context (a is no
	// context of that package), so a moment after a's own end.
	select {
	case <-derived.Done():
	case <-time.After(10 * time.Second):
		require.Fail(t, "a context derived from the handler's did not end with it")
	}
	assert.True(t, errors.Is(derived.Err(), context.DeadlineExceeded), "a derived context's Err() = %v", derived.Err())
	cancelA()

	// A later window gets a deadline of its own; the parent's end ends every window's.
	time.Sleep(2 * deadlineWindow(timeout))
	c, cancelC := s.handlerContext(parent, &d)
	defer cancelC()
	dc, _ := c.Deadline()
	assert.True(t, dc.After(da), "a later window's deadline")
	stop()
	<-c.Done()
	assert.ErrorIs(t, c.Err(), context.Canceled, "the parent's end")
}

// TestHandlerDeadlineConcurrent: requests starting at once from many goroutines each get a
// context that ends with its parent, and no more deadline contexts than windows are kept.
func TestHandlerDeadlineConcurrent(t *testing.T) {
	t.Parallel()
	s := NewServer(Implementation{Name: "deadline", Version: "0"}, WithLogger(discardLogger()))
	defer s.Shutdown(context.Background())
	var d deadlines
	parent, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	ctxs := make([]context.Context, 64)
	cancels := make([]context.CancelFunc, len(ctxs))
	for i := range ctxs {
		wg.Go(func() { ctxs[i], cancels[i] = s.handlerContext(parent, &d) })
	}
	wg.Wait()
	defer func() {
		for _, cancel := range cancels {
			cancel()
		}
	}()
	groups := map[time.Time]bool{}
	for _, ctx := range ctxs {
		dl, ok := ctx.Deadline()
		require.True(t, ok)
		groups[dl] = true
	}
	assert.LessOrEqual(t, len(groups), 2, "deadline contexts for 64 requests of one moment")
	stop()
	for _, ctx := range ctxs {
		<-ctx.Done()
		assert.ErrorIs(t, ctx.Err(), context.Canceled)
	}
}

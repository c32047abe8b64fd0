package runtime

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDeliveredStreamsForgottenAfterRetention: the events of a delivered SSE answer stay in the
// event store for the retention period (a client whose connection died at the very end can
// still resume), and are deleted after it, by the server's one retention timer: for more
// streams than its ring starts with and than one batch of deletions holds, and again after the
// timer went idle.
func TestDeliveredStreamsForgottenAfterRetention(t *testing.T) {
	t.Parallel()
	const retain = 300 * time.Millisecond
	store := NewMemoryEventStore(0)
	ts := newTestServer(t, WithSSEResponses(), WithEventStore(store), WithEventRetention(retain))
	ctx := testCtx(t)
	sid := ts.initSession(ctx, t)

	stored := func(stream string) bool {
		n := 0
		err := store.Replay(ctx, sid, stream, 0, func(uint64, []byte) error { n++; return nil })
		require.NoError(t, err)
		return n > 0
	}
	storedStreams := func() int {
		store.mu.Lock()
		defer store.mu.Unlock()
		return store.nstreams
	}
	idle := func() bool {
		r := &ts.srv.retention
		r.mu.Lock()
		defer r.mu.Unlock()
		return !r.armed && r.n == 0
	}
	id := 0
	call := func() string {
		id++
		sent := time.Now()
		resp := ts.do(ctx, t, rawReq{session: sid, body: wireToolCall(strconv.Itoa(id), "echo", `{"n":`+strconv.Itoa(id)+`}`)})
		body := string(readBody(t, resp))
		require.Equal(t, http.StatusOK, resp.StatusCode, body)
		require.Contains(t, body, `"id":`+strconv.Itoa(id)+`,"result"`)
		first, _, _ := strings.Cut(body, "\n")
		stream, seq, ok := parseEventID(strings.TrimPrefix(first, "id: "))
		require.True(t, ok && seq == 0, "priming event %q", first)
		if time.Since(sent) < retain {
			// Delivered after sent: its retention period has not passed yet.
			assert.True(t, stored(stream), "the events of stream %s were forgotten within the retention period", stream)
		}
		return stream
	}

	const n = 150 // more than the ring's first size (64) and a batch of deletions (64)
	streams := make([]string, 0, n)
	for range n {
		streams = append(streams, call())
	}
	waitUntil(ctx, t, "the delivered streams to be forgotten", func() bool { return storedStreams() == 0 && idle() })
	for _, st := range streams {
		assert.False(t, stored(st), "stream %s still stored", st)
	}

	// The timer went idle; a new delivery arms it again.
	last := call()
	waitUntil(ctx, t, "the last stream to be forgotten", func() bool { return !stored(last) && idle() })
}

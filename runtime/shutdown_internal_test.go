package runtime

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stuckStore is an event store whose Replay ignores its context: it returns only when the
// test lets it.
type stuckStore struct {
	*MemoryEventStore
	entered     chan struct{}
	enteredOnce sync.Once
	release     chan struct{}
}

func (s *stuckStore) Replay(_ context.Context, _, _ string, _ uint64, _ func(uint64, []byte) error) error {
	s.enteredOnce.Do(func() { close(s.entered) })
	<-s.release
	return nil
}

// Shutdown returns within its bound even when a GET stream's replay is stuck in an event
// store that ignores its context: it logs what it left running instead of waiting for it.
func TestShutdownBoundedByStuckReplay(t *testing.T) {
	store := &stuckStore{MemoryEventStore: NewMemoryEventStore(0), entered: make(chan struct{}), release: make(chan struct{})}
	var logs syncBuffer
	srv := NewServer(Implementation{Name: "stuck", Version: "0"}, WithEventStore(store), WithEra(EraLegacy),
		WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	srv.stopGrace = 200 * time.Millisecond
	hs := httptest.NewServer(srv)
	defer hs.Close()
	defer close(store.release)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	post := func(sid, body string) *http.Response {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, hs.URL, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	resp := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	sid := resp.Header.Get("Mcp-Session-Id")
	require.NotEmpty(t, sid)
	post(sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, hs.URL, nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	req.Header.Set("Last-Event-ID", "0_0")
	go func() {
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	select {
	case <-store.entered:
	case <-ctx.Done():
		require.FailNow(t, "the GET stream's replay never started")
	}

	sctx, scancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer scancel()
	returned := make(chan struct{})
	go func() {
		_ = srv.Shutdown(sctx)
		close(returned)
	}()
	select {
	case <-returned:
	case <-time.After(5 * time.Second):
		require.FailNow(t, "Shutdown waited for a replay stuck in the event store")
	}
	assert.Error(t, sctx.Err(), "Shutdown returned before its context ended, with the replay still stuck")
	assert.Contains(t, logs.String(), "GET streams still running after shutdown", "what Shutdown left running is logged")
}

// syncBuffer is a bytes.Buffer safe for a logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/protomcp/protomcp/runtime"
)

// toolNames lists c's tools through ListTools (one page).
func toolNames(t *testing.T, c *runtime.Client) []string {
	t.Helper()
	page, err := c.ListTools(testCtx(t), "")
	require.NoError(t, err, "ListTools")
	var names []string
	for _, tool := range page.Tools {
		names = append(names, tool.Name)
	}
	return names
}

func noopTool(context.Context, *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
	return &runtime.CallToolResult{}, nil
}

// TestClientListCacheTTL: the client answers ListTools (and the iterator) from its cache
// while the page's ttlMs says it is fresh, and asks again once it has expired (spec
// 2026-07-28, Caching, Freshness Calculation); a page with ttlMs 0 is never reused, and
// WithoutListCache asks every time. In 2025-11-25 the server's hint reaches the client too.
func TestClientListCacheTTL(t *testing.T) {
	t.Parallel()
	for _, era := range listEras {
		t.Run(era.name, func(t *testing.T) {
			t.Parallel()
			long := newClientEnv(t, runtime.WithListCacheHint(runtime.CacheHint{TTL: time.Hour, Scope: runtime.CachePublic}))
			long.srv.AddTool(runtime.ToolSpec{Name: "a"}, noopTool)
			c := long.client(t, runtime.WithEra(era.era))
			for range 3 {
				assert.Equal(t, []string{"a"}, toolNames(t, c))
			}
			for tool, err := range c.Tools(testCtx(t)) {
				require.NoError(t, err)
				assert.Equal(t, "a", tool.Name)
			}
			assert.Len(t, long.rec.postsOf("tools/list"), 1, "tools/list requests within the TTL")
			uncached := long.client(t, runtime.WithEra(era.era), runtime.WithoutListCache())
			toolNames(t, uncached)
			toolNames(t, uncached)
			assert.Len(t, long.rec.postsOf("tools/list"), 3, "tools/list requests of a client WithoutListCache")

			// A short TTL expires: the client asks again (polled, with a bound).
			short := newClientEnv(t, runtime.WithListCacheHint(runtime.CacheHint{TTL: 20 * time.Millisecond}))
			short.srv.AddTool(runtime.ToolSpec{Name: "a"}, noopTool)
			sc := short.client(t, runtime.WithEra(era.era))
			toolNames(t, sc)
			require.Len(t, short.rec.postsOf("tools/list"), 1)
			require.True(t, waitFor(10*time.Second, func() bool {
				toolNames(t, sc)
				return len(short.rec.postsOf("tools/list")) >= 2
			}), "the client never asked again after the TTL")

			// The default hint, ttlMs 0: every ListTools asks.
			stale := newClientEnv(t)
			stale.srv.AddTool(runtime.ToolSpec{Name: "a"}, noopTool)
			zc := stale.client(t, runtime.WithEra(era.era))
			for range 3 {
				toolNames(t, zc)
			}
			assert.Len(t, stale.rec.postsOf("tools/list"), 3, "tools/list requests with ttlMs 0")
		})
	}
}

// TestClientListCacheListChanged: notifications/tools/list_changed drops the cached tools
// pages at once, however fresh (spec 2026-07-28, Caching, Interaction with Notifications),
// and leaves the other lists' pages; in 2026-07-28 it comes on subscriptions/listen, in
// 2025-11-25 on the session's GET stream (Connect waits until it is open).
func TestClientListCacheListChanged(t *testing.T) {
	t.Parallel()
	for _, era := range listEras {
		t.Run(era.name, func(t *testing.T) {
			t.Parallel()
			e := newClientEnv(t, runtime.WithListCacheHint(runtime.CacheHint{TTL: time.Hour, Scope: runtime.CachePublic}))
			e.srv.AddTool(runtime.ToolSpec{Name: "a"}, noopTool)
			got := make(chan string, 16)
			c := e.client(t, runtime.WithEra(era.era), runtime.WithStandaloneStream(), runtime.WithNotificationHandler(func(_ context.Context, method string, _ json.RawMessage) {
				got <- method
			}))
			ctx := testCtx(t)
			require.NoError(t, c.Connect(ctx))
			wait := func(want string) {
				t.Helper()
				select {
				case m := <-got:
					require.Equal(t, want, m)
				case <-ctx.Done():
					require.FailNow(t, "no "+want)
				}
			}
			if era.era == runtime.EraModern {
				wait("notifications/subscriptions/acknowledged")
			} else {
				// Connect waits a bounded while for the GET stream: make sure it is open,
				// with a change that leaves the tools and prompts pages alone.
				ready := false
				for i := 0; !ready && i < 50; i++ {
					e.srv.AddResource(runtime.Resource{URI: fmt.Sprintf("mem://warm/%d", i), Name: "warm"}, func(context.Context, string) (*runtime.ReadResourceResult, error) {
						return &runtime.ReadResourceResult{}, nil
					})
					select {
					case m := <-got:
						require.Equal(t, "notifications/resources/list_changed", m)
						ready = true
					case <-time.After(200 * time.Millisecond):
					}
				}
				require.True(t, ready, "the GET stream never delivered a notification")
			}
			assert.Equal(t, []string{"a"}, toolNames(t, c))
			assert.Equal(t, []string{"a"}, toolNames(t, c))
			_, err := c.ListPrompts(ctx, "")
			require.NoError(t, err)
			require.Len(t, e.rec.postsOf("tools/list"), 1, "tools/list requests before the change")

			e.srv.AddTool(runtime.ToolSpec{Name: "b"}, noopTool)
			for changed := false; !changed; { // late warm-up notifications may come first
				select {
				case m := <-got:
					changed = m == "notifications/tools/list_changed"
					require.Contains(t, []string{"notifications/tools/list_changed", "notifications/resources/list_changed"}, m)
				case <-ctx.Done():
					require.FailNow(t, "no notifications/tools/list_changed")
				}
			}
			assert.Equal(t, []string{"a", "b"}, toolNames(t, c), "the list after list_changed")
			assert.Len(t, e.rec.postsOf("tools/list"), 2, "tools/list requests after the change")
			_, err = c.ListPrompts(ctx, "")
			require.NoError(t, err)
			assert.Len(t, e.rec.postsOf("prompts/list"), 1, "prompts/list stays cached on a tools change")
		})
	}
}

// switchingTransport is an HTTP transport whose authorization context the test sets, as
// runtime/oauth's changes on a step-up.
type switchingTransport struct {
	mu   sync.Mutex
	auth string
}

func (s *switchingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return http.DefaultTransport.RoundTrip(r)
}

func (s *switchingTransport) AuthorizationContext() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.auth
}

func (s *switchingTransport) set(auth string) {
	s.mu.Lock()
	s.auth = auth
	s.mu.Unlock()
}

// TestClientListCacheScope: a private page is reused only in the authorization context that
// fetched it (spec 2026-07-28, Caching, Cache Scope Field: caches MUST NOT be shared across
// authorization contexts); a public one in any.
func TestClientListCacheScope(t *testing.T) {
	t.Parallel()
	for _, scope := range []runtime.CacheScope{runtime.CachePrivate, runtime.CachePublic} {
		t.Run(string(scope), func(t *testing.T) {
			t.Parallel()
			e := newClientEnv(t, runtime.WithListCacheHint(runtime.CacheHint{TTL: time.Hour, Scope: scope}))
			e.srv.AddTool(runtime.ToolSpec{Name: "a"}, noopTool)
			tr := &switchingTransport{auth: "token-1"}
			c := e.client(t, runtime.WithEra(runtime.EraModern), runtime.WithHTTPClient(&http.Client{Transport: tr}))
			toolNames(t, c)
			toolNames(t, c)
			require.Len(t, e.rec.postsOf("tools/list"), 1, "within one context")
			tr.set("token-2")
			toolNames(t, c)
			want := 1
			if scope == runtime.CachePrivate {
				want = 2
			}
			assert.Len(t, e.rec.postsOf("tools/list"), want, fmt.Sprintf("after the context changed, %s", scope))
		})
	}
}

// TestClientListCacheUnknownTool: a client that does not listen for list_changed (2026-07-28
// without WithStandaloneStream) keeps its fresh tools page after the server removed a tool;
// calling that tool fails with -32602, which drops the page, and the next list is fetched
// (spec 2026-07-28, Caching: a client MAY re-fetch before the TTL on such an error).
func TestClientListCacheUnknownTool(t *testing.T) {
	t.Parallel()
	e := newClientEnv(t, runtime.WithListCacheHint(runtime.CacheHint{TTL: time.Hour, Scope: runtime.CachePublic}))
	e.srv.AddTool(runtime.ToolSpec{Name: "a"}, noopTool)
	e.srv.AddTool(runtime.ToolSpec{Name: "gone"}, noopTool)
	c := e.client(t, runtime.WithEra(runtime.EraModern))
	assert.Equal(t, []string{"a", "gone"}, toolNames(t, c))
	require.True(t, e.srv.RemoveTool("gone"))
	assert.Equal(t, []string{"a", "gone"}, toolNames(t, c), "still fresh: the client heard no list_changed")
	require.Len(t, e.rec.postsOf("tools/list"), 1)
	_, err := c.CallTool(testCtx(t), "gone", nil)
	require.Equal(t, runtime.CodeInvalidParams, runtime.CodeOf(err), "calling a removed tool: %v", err)
	assert.Equal(t, []string{"a"}, toolNames(t, c), "the list after the failed call")
	assert.Len(t, e.rec.postsOf("tools/list"), 2, "tools/list requests")
}

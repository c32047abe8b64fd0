package runtime_test

// Tests of rate limits on a real server and client over loopback, in both eras: a bucket per
// caller, per tool and per service, from ToolSpec (what proto options generate) and from
// code; the caller named by the token's subject, else the session, else the address; the
// answers over the limit (a tool error with a retry hint, a JSON-RPC error with the hint in
// its data), given at once; and what a failing Limiter leads to.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/protomcp/protomcp/runtime"
)

// limitEras runs f once per era of the client, the server serving both.
func limitEras(t *testing.T, f func(t *testing.T, era runtime.Era)) {
	t.Run("2025-11-25", func(t *testing.T) { t.Parallel(); f(t, runtime.EraLegacy) })
	t.Run("2026-07-28", func(t *testing.T) { t.Parallel(); f(t, runtime.EraModern) })
}

// limitEnv is a server on loopback whose HTTP requests carry the TokenInfo of their
// X-Test-Subject header (none without it), as an authenticating middleware would set it.
type limitEnv struct {
	srv   *runtime.Server
	hs    *httptest.Server
	calls atomic.Int64
}

func newLimitEnv(t *testing.T, opts ...runtime.ServerOption) *limitEnv {
	t.Helper()
	opts = append([]runtime.ServerOption{runtime.WithLogger(discardLogger())}, opts...)
	e := &limitEnv{srv: runtime.NewServer(runtime.Implementation{Name: "ratelimit-test"}, opts...)}
	e.hs = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if sub := r.Header.Get("X-Test-Subject"); sub != "" {
			r = r.WithContext(runtime.ContextWithTokenInfo(r.Context(), &runtime.TokenInfo{Subject: sub, Issuer: "https://issuer.test"}))
		}
		e.srv.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		_ = e.srv.Shutdown(ctx)
		e.hs.Close()
	})
	return e
}

// addTool adds a raw tool answering "ok" that counts its calls, with the given limits and
// the rpc behind it in its _meta (as generated code names it), when rpc is not "".
func (e *limitEnv) addTool(name, rpc string, limits ...runtime.RateLimit) {
	spec := runtime.ToolSpec{Name: name, RateLimits: limits}
	if rpc != "" {
		spec.Meta = map[string]any{runtime.RPCMetaKey: rpc}
	}
	e.srv.AddTool(spec, func(context.Context, *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		e.calls.Add(1)
		return textResult("ok"), nil
	})
}

// client connects a client of era, calling as subject (anonymous when "").
func (e *limitEnv) client(t *testing.T, era runtime.Era, subject string) *runtime.Client {
	t.Helper()
	opts := []runtime.ClientOption{runtime.WithEra(era), runtime.WithLogger(discardLogger())}
	if subject != "" {
		opts = append(opts, runtime.WithHeader("X-Test-Subject", subject))
	}
	c := runtime.NewClient(e.hs.URL, opts...)
	require.NoError(t, c.Connect(testCtx(t)))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		_ = c.Close(ctx)
	})
	return c
}

// allowed calls tool n times and returns how many calls were answered "ok"; every other
// answer must be a rate limit's tool error with its retry hint.
func allowed(t *testing.T, c *runtime.Client, tool string, n int) int {
	t.Helper()
	ok := 0
	for range n {
		res, err := c.CallTool(testCtx(t), tool, nil)
		require.NoError(t, err, "a refused tools/call is a tool error, not a JSON-RPC error")
		if !res.IsError {
			ok++
			continue
		}
		assertToolRefusal(t, res)
	}
	return ok
}

// assertToolRefusal checks the tool error of a call over a limit: text a model can read that
// says when to retry, and the same seconds in _meta.
func assertToolRefusal(t *testing.T, res *runtime.CallToolResult) {
	t.Helper()
	assert.True(t, res.IsError, "refusal is a tool error")
	assert.Regexp(t, "^(rate limit exceeded|the rate limiter is unavailable)", res.Text(), "refusal text")
	wait, ok := runtime.RetryAfter(res, nil)
	if assert.True(t, ok, "refusal carries %s in _meta: %+v", runtime.RetryAfterMetaKey, res.Meta) {
		assert.GreaterOrEqual(t, wait, time.Second, "retry hint")
		secs, unit := int(wait/time.Second), " seconds"
		if secs == 1 {
			unit = " second"
		}
		assert.Contains(t, res.Text(), "retry after "+strconv.Itoa(secs)+unit, "the text gives the same seconds as _meta")
	}
}

// TestRateLimitPerCaller proves a tool's bucket is per caller: one caller's calls over the
// limit are refused while another's still run. In the 2025-11-25 era two anonymous clients
// are two sessions, two callers; in 2026-07-28, with no session, anonymous callers are named
// by their address (both here are 127.0.0.1: one caller), and callers with tokens by their
// subject.
func TestRateLimitPerCaller(t *testing.T) {
	t.Parallel()
	limitEras(t, func(t *testing.T, era runtime.Era) {
		e := newLimitEnv(t)
		e.addTool("limited", "", runtime.RateLimit{Rate: runtime.PerMinute(3)})
		a, b := e.client(t, era, ""), e.client(t, era, "")
		assert.Equal(t, 3, allowed(t, a, "limited", 5), "first anonymous caller")
		if era == runtime.EraLegacy {
			assert.Equal(t, 3, allowed(t, b, "limited", 5), "second session: its own bucket")
		} else {
			assert.Equal(t, 0, allowed(t, b, "limited", 2), "second anonymous client, same address: the same bucket")
		}
		alice, bob := e.client(t, era, "alice"), e.client(t, era, "bob")
		assert.Equal(t, 3, allowed(t, alice, "limited", 4), "alice")
		assert.Equal(t, 3, allowed(t, bob, "limited", 4), "bob: his own bucket")
		// Another session of alice's shares her bucket: the subject comes before the session.
		alice2 := e.client(t, era, "alice")
		assert.Equal(t, 0, allowed(t, alice2, "limited", 2), "alice, another client")
		want := int64(9)
		if era == runtime.EraLegacy {
			want = 12
		}
		assert.Equal(t, want, e.calls.Load(), "the handler ran for the allowed calls only")
	})
}

// TestRateLimitPerToolAndService proves the buckets' scopes: a tool's own bucket, one bucket
// for all the tools of a service (named by their RPCMetaKey), code's LimitTool replacing a
// spec's rate, and LimitTools over every tool of a caller.
func TestRateLimitPerToolAndService(t *testing.T) {
	t.Parallel()
	svc := runtime.RateLimit{Bucket: "service/test.v1.Svc", Rate: runtime.PerMinute(4)}
	e := newLimitEnv(t, runtime.WithRateLimit(runtime.LimitTool("own", runtime.PerMinute(2))))
	e.addTool("svc_a", "test.v1.Svc/A", svc)
	e.addTool("svc_b", "test.v1.Svc/B", svc)
	e.addTool("own", "", runtime.RateLimit{Rate: runtime.PerMinute(100)}) // LimitTool makes it 2
	e.addTool("free", "")
	c := e.client(t, runtime.EraLegacy, "")
	got := allowed(t, c, "svc_a", 3) + allowed(t, c, "svc_b", 3)
	assert.Equal(t, 4, got, "the service's tools share one bucket of 4")
	assert.Equal(t, 2, allowed(t, c, "own", 4), "LimitTool replaces the spec's rate")
	assert.Equal(t, 10, allowed(t, c, "free", 10), "a tool without limits")

	// LimitTools: every tool of a caller, together; LimitService: by the service's name.
	e2 := newLimitEnv(t, runtime.WithRateLimit(runtime.LimitTools(runtime.PerMinute(5)), runtime.LimitService("test.v1.Other", runtime.PerMinute(1))))
	e2.addTool("x", "test.v1.Other/X")
	e2.addTool("y", "")
	c2 := e2.client(t, runtime.EraModern, "carol")
	assert.Equal(t, 1, allowed(t, c2, "x", 3), "LimitService on a tool whose spec has no limit")
	assert.Equal(t, 4, allowed(t, c2, "y", 5), "LimitTools: 5 for all tools, 1 spent on x (x's refused calls were refused by its narrower bucket first)")
}

// TestRateLimitRequestsAnswerJSONRPCError proves LimitRequests limits every method but the
// handshakes and ping, and answers a refused request that is not a tool call with a JSON-RPC
// error whose data says when to retry, in both eras and both response modes (JSON, SSE),
// without waiting for tokens.
func TestRateLimitRequestsAnswerJSONRPCError(t *testing.T) {
	t.Parallel()
	t.Run("json", func(t *testing.T) { t.Parallel(); testRateLimitRequests(t) })
	t.Run("sse", func(t *testing.T) { t.Parallel(); testRateLimitRequests(t, runtime.WithSSEResponses()) })
}

func testRateLimitRequests(t *testing.T, opts ...runtime.ServerOption) {
	limitEras(t, func(t *testing.T, era runtime.Era) {
		all := append(slices.Clone(opts), runtime.WithRateLimit(runtime.LimitRequests(runtime.Rate{Calls: 2, Period: time.Hour})))
		e := newLimitEnv(t, all...)
		e.addTool("t", "")
		c := e.client(t, era, "dave")
		ctx := testCtx(t)
		_, err := c.ListTools(ctx, "")
		require.NoError(t, err)
		_, err = c.ListTools(ctx, "")
		require.NoError(t, err)
		// A refusal comes at once: the next token is half an hour away, the bound 5 seconds.
		short, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_, err = c.ListTools(short, "")
		require.Error(t, err)
		assert.Equal(t, runtime.CodeRateLimited, runtime.CodeOf(err), "refused tools/list: %v", err)
		assert.ErrorContains(t, err, "retry after 1800 seconds")
		wait, ok := runtime.RetryAfter(nil, err)
		assert.True(t, ok, "retryAfter in the error's data: %v", err)
		assert.Equal(t, 1800*time.Second, wait, "retry hint")
		var rpcErr *runtime.Error
		if assert.ErrorAs(t, err, &rpcErr) {
			assert.JSONEq(t, `{"retryAfter":1800}`, string(rpcErr.Data), "error data")
		}
		// A tools/call over the same limit is a tool error the model reads.
		res, err := c.CallTool(short, "t", nil)
		require.NoError(t, err)
		assertToolRefusal(t, res)
		assert.Zero(t, e.calls.Load(), "the handler never ran")
		// ping is never limited.
		assert.NoError(t, c.Ping(short))
	})
}

// failingLimiter is a Limiter whose store is down until up is set; then it allows every
// call.
type failingLimiter struct {
	up    atomic.Bool
	asked atomic.Int64
}

func (f *failingLimiter) Take(context.Context, string, runtime.Rate, int) (bool, time.Duration, error) {
	f.asked.Add(1)
	if !f.up.Load() {
		return false, 0, errors.New("store unreachable")
	}
	return true, 0, nil
}

// TestRateLimitStoreFailure proves what each RateLimitOnFailure does while the Limiter fails,
// and that the store is used again once it answers (the server asks it once a second).
func TestRateLimitStoreFailure(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		opts    []runtime.RateLimitOption
		allowed int
	}{
		{"local by default", nil, 2},
		{"open", []runtime.RateLimitOption{runtime.RateLimitOnFailure(runtime.FailOpen)}, 5},
		{"closed", []runtime.RateLimitOption{runtime.RateLimitOnFailure(runtime.FailClosed)}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			store := &failingLimiter{}
			e := newLimitEnv(t, runtime.WithRateLimit(append(tc.opts, runtime.RateLimitStore(store))...))
			e.addTool("t", "", runtime.RateLimit{Rate: runtime.PerMinute(2)})
			c := e.client(t, runtime.EraModern, "erin")
			assert.Equal(t, tc.allowed, allowed(t, c, "t", 5), "while the store fails")
			assert.Less(t, store.asked.Load(), int64(5), "a failing store is asked once a second, not on every call")
			if tc.allowed == 0 {
				res, err := c.CallTool(testCtx(t), "t", nil)
				require.NoError(t, err)
				assert.Equal(t, "the rate limiter is unavailable (tool/t); retry after 1 second", res.Text(), "FailClosed's refusal")
			}
			store.up.Store(true)
			// The server asks a failing store again once a second: the first call allowed
			// after that is the store's, and so are the following ones.
			require.True(t, waitFor(10*time.Second, func() bool {
				res, err := c.CallTool(testCtx(t), "t", nil)
				return err == nil && !res.IsError
			}), "the store answers again, but calls are still refused")
			assert.Equal(t, 5, allowed(t, c, "t", 5), "the store answers again")
		})
	}
}

// stuckLimiter is a Limiter whose store never answers: Take returns only when its context
// ends.
type stuckLimiter struct{ asked atomic.Int64 }

func (f *stuckLimiter) Take(ctx context.Context, _ string, _ runtime.Rate, _ int) (bool, time.Duration, error) {
	f.asked.Add(1)
	<-ctx.Done()
	return false, 0, ctx.Err()
}

// TestRateLimitStoreTimeout proves that a store that stops answering is a failing store once
// RateLimitTimeout has passed: calls are decided by RateLimitOnFailure, not held until their
// client gives up, and the store is asked again only once a second.
func TestRateLimitStoreTimeout(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		failure runtime.LimiterFailure
		allowed int
	}{
		{"open", runtime.FailOpen, 3},
		{"closed", runtime.FailClosed, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			store := &stuckLimiter{}
			e := newLimitEnv(t, runtime.WithRateLimit(runtime.RateLimitStore(store), runtime.RateLimitOnFailure(tc.failure),
				runtime.RateLimitTimeout(50*time.Millisecond), runtime.LimitTools(runtime.PerMinute(100))))
			e.addTool("t", "")
			c := e.client(t, runtime.EraModern, "erin")
			// testCtx bounds each call: without the timeout, the first would wait for it.
			assert.Equal(t, tc.allowed, allowed(t, c, "t", 3), "calls decided by RateLimitOnFailure")
			assert.Less(t, store.asked.Load(), int64(3), "a store that timed out is asked once a second, not on every call")
		})
	}
}

// TestRateLimitSessions proves LimitSessions: a caller's initialize requests over the limit
// are refused by the transport, before any session is made, with HTTP 429, Retry-After and a
// JSON-RPC error -31429 whose data holds the same seconds; our client surfaces the hint; a
// caller with a token has its own bucket; existing sessions go on working.
func TestRateLimitSessions(t *testing.T) {
	t.Parallel()
	e := newLimitEnv(t, runtime.WithRateLimit(runtime.LimitSessions(runtime.Rate{Calls: 2, Period: time.Hour})))
	e.addTool("t", "")
	a := e.client(t, runtime.EraLegacy, "")
	e.client(t, runtime.EraLegacy, "")
	const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	req, err := http.NewRequestWithContext(testCtx(t), http.MethodPost, e.hs.URL, strings.NewReader(initBody))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "the third session of an hour: %s", body)
	assert.Equal(t, "1800", resp.Header.Get("Retry-After"), "the next token is half an hour away")
	assert.Empty(t, resp.Header.Get("Mcp-Session-Id"), "no session was made")
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":1,"error":{"code":-31429,"message":"rate limit exceeded (sessions: 2/1h0m0s per caller); retry after 1800 seconds","data":{"retryAfter":1800}}}`, string(body))

	c := runtime.NewClient(e.hs.URL, runtime.WithEra(runtime.EraLegacy), runtime.WithLogger(discardLogger()))
	err = c.Connect(testCtx(t))
	require.Error(t, err, "our client's third session")
	wait, ok := runtime.RetryAfter(nil, err)
	assert.True(t, ok, "the client surfaces the hint: %v", err)
	assert.Equal(t, 1800*time.Second, wait)

	e.client(t, runtime.EraLegacy, "frank") // a caller with a token: its own bucket
	res, err := a.CallTool(testCtx(t), "t", nil)
	require.NoError(t, err)
	assert.False(t, res.IsError, "an existing session goes on working")
}

// TestRateLimitInvalidRatePanics proves a tool whose RateLimits hold a rate that limits
// nothing (no period, no calls) is refused at registration, rather than served unlimited.
func TestRateLimitInvalidRatePanics(t *testing.T) {
	t.Parallel()
	srv := runtime.NewServer(runtime.Implementation{Name: "ratelimit-test"}, runtime.WithLogger(discardLogger()))
	handler := func(context.Context, *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		return textResult("ok"), nil
	}
	for _, r := range []runtime.Rate{{Calls: 10}, {Period: time.Minute}, {Calls: 1, Period: time.Minute, Burst: -1}} {
		assert.PanicsWithValue(t, "mcp: tool \"t\": invalid rate limit "+fmt.Sprintf("%+v", r)+": Calls and Period must be positive", func() {
			srv.AddTool(runtime.ToolSpec{Name: "t", RateLimits: []runtime.RateLimit{{Rate: r}}}, handler)
		}, "%+v", r)
	}
}

// TestRateLimitStdio proves limits hold over stdio, where a caller has no token and no
// address: the one client is one caller, refused with the same tool error and JSON-RPC
// error as over HTTP.
func TestRateLimitStdio(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	srv := runtime.NewServer(runtime.Implementation{Name: "ratelimit-test"}, runtime.WithLogger(discardLogger()),
		runtime.WithRateLimit(runtime.LimitRequests(runtime.Rate{Calls: 4, Period: time.Hour})))
	srv.AddTool(runtime.ToolSpec{Name: "t", RateLimits: []runtime.RateLimit{{Rate: runtime.PerMinute(2)}}},
		func(context.Context, *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
			calls.Add(1)
			return textResult("ok"), nil
		})
	c, done := stdioPair(t, srv)
	require.NoError(t, c.Connect(testCtx(t)))
	assert.Equal(t, 2, allowed(t, c, "t", 3), "the tool's bucket of 2")
	_, err := c.ListTools(testCtx(t), "")
	require.NoError(t, err, "the fourth request")
	_, err = c.ListTools(testCtx(t), "")
	assert.Equal(t, runtime.CodeRateLimited, runtime.CodeOf(err), "the fifth request, over LimitRequests: %v", err)
	assert.Equal(t, int64(2), calls.Load(), "the handler ran for the allowed calls only")
	require.NoError(t, c.Close(testCtx(t)))
	waitServer(t, done)
}

// TestParseRate reads the -rate-limit flag's syntax.
func TestParseRate(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]runtime.Rate{
		"60/m":    {Calls: 60, Period: time.Minute},
		"10/s":    {Calls: 10, Period: time.Second},
		" 5/30s ": {Calls: 5, Period: 30 * time.Second},
		"1000/h":  {Calls: 1000, Period: time.Hour},
	} {
		got, err := runtime.ParseRate(in)
		if assert.NoError(t, err, in) {
			assert.Equal(t, want, got, in)
		}
	}
	for _, bad := range []string{"", "60", "0/m", "-1/m", "x/m", "5/0s", "5/fortnight"} {
		_, err := runtime.ParseRate(bad)
		assert.Error(t, err, "%q", bad)
	}
}

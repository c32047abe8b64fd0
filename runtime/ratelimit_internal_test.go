package runtime

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMemoryLimiterBucket proves the token bucket's arithmetic on a clock the test moves: a
// full bucket at first, the retry hint until the next token, the refill rate, the burst cap,
// and a cost above the capacity.
func TestMemoryLimiterBucket(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_000_000, 0)
	m := NewMemoryLimiter()
	m.now = func() time.Time { return now }
	ctx := context.Background()
	r := Rate{Calls: 6, Period: time.Minute, Burst: 3} // a token every 10s, 3 at most
	for i := range 3 {
		ok, _, err := m.Take(ctx, "k", r, 1)
		require.NoError(t, err)
		assert.True(t, ok, "call %d of the burst", i)
	}
	ok, wait, err := m.Take(ctx, "k", r, 1)
	require.NoError(t, err)
	assert.False(t, ok, "the burst is spent")
	assert.Equal(t, 10*time.Second, wait, "the next token is 10s away")

	now = now.Add(4 * time.Second)
	ok, wait, _ = m.Take(ctx, "k", r, 1)
	assert.False(t, ok, "4s later")
	assert.Equal(t, 6*time.Second, wait, "4s later, 6s to go")

	now = now.Add(6 * time.Second)
	ok, _, _ = m.Take(ctx, "k", r, 1)
	assert.True(t, ok, "10s later a token is there")

	now = now.Add(time.Hour)
	for range 3 {
		ok, _, _ = m.Take(ctx, "k", r, 1)
		assert.True(t, ok, "an hour later: a full bucket")
	}
	ok, _, _ = m.Take(ctx, "k", r, 1)
	assert.False(t, ok, "never more than the burst")

	ok, wait, _ = m.Take(ctx, "other", r, 5)
	assert.False(t, ok, "a cost above the capacity is never allowed")
	assert.Equal(t, 30*time.Second, wait, "its hint is a full refill")

	_, _, err = m.Take(ctx, "bad", Rate{Calls: 0, Period: time.Minute}, 1)
	assert.Error(t, err, "an invalid rate")
}

// TestMemoryLimiterForgetsFullBuckets proves memory follows the callers active within a
// period: once their buckets have refilled, a sweep forgets them.
func TestMemoryLimiterForgetsFullBuckets(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_000_000, 0)
	m := NewMemoryLimiter()
	m.now = func() time.Time { return now }
	ctx := context.Background()
	r := PerMinute(10)
	for i := range 2000 {
		_, _, err := m.Take(ctx, "caller-"+strconv.Itoa(i), r, 1)
		require.NoError(t, err)
	}
	assert.Equal(t, 2000, m.Len(), "buckets of callers active within the period are all kept")
	now = now.Add(time.Minute)
	for i := range 1100 {
		_, _, _ = m.Take(ctx, "later-"+strconv.Itoa(i), r, 1)
	}
	assert.Equal(t, 1100, m.Len(), "the refilled buckets were forgotten, the new ones kept")
}

// TestCallerKeyPrecedence proves how a caller is named: the token's subject (with its
// issuer) before the address, the address before the session (a session is free to open),
// the address without its port (one caller for all its connections), the session without an
// address, and "stdio" when nothing names it.
func TestCallerKeyPrecedence(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tok := &TokenInfo{Issuer: "https://as", Subject: "alice"}
	cases := []struct {
		name string
		req  Request
		want string
	}{
		{"token", Request{SessionID: "s1", rs: &requestState{token: tok, remote: "10.0.0.1:5555"}}, "sub:https://as alice"},
		{"session before address", Request{SessionID: "s1", rs: &requestState{remote: "10.0.0.1:5555"}}, "session:s1"},
		{"token without subject", Request{SessionID: "s1", rs: &requestState{token: &TokenInfo{ClientID: "c"}}}, "session:s1"},
		{"address", Request{rs: &requestState{remote: "10.0.0.1:5555"}}, "addr:10.0.0.1"},
		{"IPv6 address", Request{rs: &requestState{remote: "[::1]:5555"}}, "addr:::/64"},
		{"stdio", Request{rs: &requestState{}}, "stdio"},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, CallerKey(ctx, &tc.req), tc.name)
	}
	// Outside a server's request state (an interceptor's own Request), the context's token.
	assert.Equal(t, "sub:https://as alice", CallerKey(ContextWithTokenInfo(ctx, tok), &Request{}), "context")
}

// TestMemoryLimiterConcurrent proves a bucket taken from by many goroutines at once allows
// its capacity exactly, on a clock that does not move.
func TestMemoryLimiterConcurrent(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_000_000, 0)
	m := NewMemoryLimiter()
	m.now = func() time.Time { return now }
	var wg sync.WaitGroup
	var allowed atomic.Int64
	for range 16 {
		wg.Go(func() {
			for range 50 {
				if ok, _, err := m.Take(context.Background(), "k", PerMinute(100), 1); err == nil && ok {
					allowed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	assert.Equal(t, int64(100), allowed.Load(), "calls allowed out of 800 against a bucket of 100")
}

// TestCallerKeyAddresses proves the order of a caller's names (subject, session, address),
// and that a caller without a session is its address whatever its ports, an IPv6 client its
// /64, so that varying the low bits of its address does not give it a new quota.
func TestCallerKeyAddresses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	key := func(remote, session string, tok *TokenInfo) string {
		return CallerKey(ctx, &Request{SessionID: session, rs: &requestState{remote: remote, token: tok}})
	}
	alice := &TokenInfo{Issuer: "https://issuer.test", Subject: "alice"}
	assert.Equal(t, "sub:https://issuer.test alice", key("192.0.2.1:1000", "s1", alice), "the subject first")
	assert.Equal(t, "session:s1", key("192.0.2.1:1000", "s1", nil), "no subject: the session")
	assert.Equal(t, key("192.0.2.1:1000", "", nil), key("192.0.2.1:2000", "", nil), "no session, one address, two ports: one caller")
	assert.NotEqual(t, key("192.0.2.1:1000", "", nil), key("192.0.2.2:1000", "", nil), "two IPv4 addresses: two callers")
	assert.Equal(t, key("[2001:db8:1:2::1]:1000", "", nil), key("[2001:db8:1:2:ffff:eeee:dddd:cccc]:2000", "", nil), "one IPv6 /64: one caller")
	assert.NotEqual(t, key("[2001:db8:1:2::1]:1000", "", nil), key("[2001:db8:1:3::1]:1000", "", nil), "two IPv6 /64s: two callers")
	assert.Equal(t, key("192.0.2.1:1000", "", nil), key("[::ffff:192.0.2.1]:1000", "", nil), "an IPv4-mapped address is its IPv4")
	assert.Equal(t, "addr:not-an-ip", key("not-an-ip", "", nil), "an address net/http did not write is kept as it is")
	assert.Equal(t, "stdio", key("", "", nil), "without an address or a session")
}

// TestMemoryLimiterForgetsWithoutNewCallers proves the buckets of a crowd that has gone are
// forgotten even when no new caller comes to trigger a sweep: the callers who stay are
// enough, so that memory does not stay at the crowd's peak.
func TestMemoryLimiterForgetsWithoutNewCallers(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_000_000, 0)
	m := NewMemoryLimiter()
	m.now = func() time.Time { return now }
	ctx := context.Background()
	r := PerMinute(10)
	for i := range 5000 {
		_, _, err := m.Take(ctx, "crowd-"+strconv.Itoa(i), r, 1)
		require.NoError(t, err)
	}
	require.Greater(t, m.Len(), 2000, "the crowd's buckets, refilling")
	now = now.Add(time.Hour) // the crowd has gone; one caller stays
	for range 3 {
		_, _, err := m.Take(ctx, "regular", r, 1)
		require.NoError(t, err)
	}
	assert.Equal(t, 1, m.Len(), "an hour later only the regular caller's bucket is kept")
}

// ctxLimiter is a store that answers at once, or the context's error once it has ended, as
// go-redis does; asked counts the questions.
type ctxLimiter struct{ asked atomic.Int64 }

func (c *ctxLimiter) Take(ctx context.Context, _ string, _ Rate, _ int) (bool, time.Duration, error) {
	c.asked.Add(1)
	if err := ctx.Err(); err != nil {
		return false, 0, err
	}
	return true, 0, nil
}

// TestRateLimitCanceledCallIsNoStoreFailure proves a call whose own context has ended (the
// client cancelled it, or went away) does not make the server believe its store failed:
// otherwise any client could, by cancelling calls, turn a whole replica to its failure mode
// (every caller refused, under FailClosed) and keep it there.
func TestRateLimitCanceledCallIsNoStoreFailure(t *testing.T) {
	t.Parallel()
	store := &ctxLimiter{}
	l := newRateLimits([]RateLimitOption{RateLimitStore(store), RateLimitOnFailure(FailClosed)}, slog.New(slog.DiscardHandler))
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	r := PerMinute(10)
	l.take(canceled, "k", r)
	assert.False(t, l.failing.Load(), "a cancelled call is not the store's failure")
	ok, _, down := l.take(context.Background(), "k", r)
	assert.True(t, ok, "the next call is the store's to decide")
	assert.False(t, down, "and not refused as if the store were down")
	assert.Equal(t, int64(2), store.asked.Load(), "the store was asked both times")
}

// TestRateString proves String writes what ParseRate reads back, and a burst after it.
func TestRateString(t *testing.T) {
	t.Parallel()
	r := Rate{Calls: 60, Period: time.Minute}
	back, err := ParseRate(r.String())
	require.NoError(t, err)
	assert.Equal(t, r, back)
	assert.Equal(t, "10/1m0s burst 20", Rate{Calls: 10, Period: time.Minute, Burst: 20}.String())
}

// TestCodeRateLimitedOutsideReservedRange proves the rate limit's JSON-RPC code is one an
// implementation may send: outside the range JSON-RPC reserves (-32768..-32000), whose
// -32020..-32099 the MCP specification keeps for codes it defines (spec 2026-07-28, Basic,
// Error Codes), and outside the local codes, which never go on the wire.
func TestCodeRateLimitedOutsideReservedRange(t *testing.T) {
	t.Parallel()
	c := int(CodeRateLimited)
	assert.False(t, c >= -32768 && c <= -32000, "%d lies in JSON-RPC's reserved range", c)
	assert.False(t, c >= -32899 && c <= -32800, "%d is a local code", c)
	assert.Equal(t, "rate_limited", CodeRateLimited.String())
}

package redismcp

import (
	"context"
	"fmt"
	"time"

	"github.com/protomcp/protomcp/runtime"
	"github.com/redis/go-redis/v9"
)

// Limiter is a runtime.Limiter that keeps its token buckets in Redis, so that the replicas of
// a set share one quota per caller instead of each allowing the whole quota (N replicas
// behind a load balancer would otherwise allow N times it). Give it to a server with
//
//	runtime.WithRateLimit(runtime.RateLimitStore(store.Limiter()))
//
// A bucket is a hash (<prefix>rl:<bucket>|<caller>) of its tokens and when they were counted,
// updated by one Lua script that refills, takes and answers atomically on Redis's clock, so
// that replicas with skewed clocks agree; it expires once it would be full again (an absent
// bucket is a full one).
//
// Each Take is bounded by LimiterOptions.Timeout. When Redis does not answer, Take returns an
// error, and the server does what runtime.RateLimitOnFailure says: by default each replica
// limits calls by itself until Redis answers again, which needs nothing but Redis's return
// (go-redis reconnects; the script is loaded again if Redis lost it).
type Limiter struct {
	rdb     redis.UniversalClient
	prefix  string
	timeout time.Duration
	bounded bool // rdb's reads and writes time out after timeout
}

var _ runtime.Limiter = (*Limiter)(nil)

// LimiterOptions configure a Limiter. The zero value is usable.
type LimiterOptions struct {
	// Prefix starts every key (default "mcp:").
	Prefix string
	// Timeout bounds each Take (default 250 milliseconds): a call waits at most this long for
	// Redis before the server falls back on runtime.RateLimitOnFailure's choice.
	Timeout time.Duration
}

// NewLimiter returns a Limiter on rdb, which it does not close.
func NewLimiter(rdb redis.UniversalClient, opts LimiterOptions) *Limiter {
	if opts.Prefix == "" {
		opts.Prefix = "mcp:"
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 250 * time.Millisecond
	}
	// go-redis bounds its socket reads by its own ReadTimeout, not by a context's deadline
	// (unless the client was built with ContextTimeoutEnabled): a Redis that accepts but never
	// answers would hold every Take for the ReadTimeout (seconds), not for Timeout. A
	// *redis.Client is cloned with Timeout as its read and write timeouts (the clone shares
	// the pool); other clients' commands are abandoned at the deadline (Take).
	l := &Limiter{rdb: rdb, prefix: opts.Prefix, timeout: opts.Timeout}
	if c, ok := rdb.(*redis.Client); ok {
		l.rdb, l.bounded = c.WithTimeout(opts.Timeout), true
	}
	return l
}

// Limiter returns a Limiter on the store's Redis client, with the store's key prefix.
func (s *Store) Limiter() *Limiter {
	return NewLimiter(s.rdb, LimiterOptions{Prefix: s.opts.Prefix})
}

// takeScript refills the bucket KEYS[1] (capacity ARGV[1], ARGV[2] tokens a second) for the
// time since it was last counted, on Redis's clock, takes ARGV[3] tokens when they are
// there, and returns {1, 0} when it did, or {0, microseconds until they will be}. The bucket
// expires when it would be full again.
var takeScript = redis.NewScript(`
local cap = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local b = redis.call('HMGET', KEYS[1], 'tk', 'ts')
local tokens = cap
if b[1] and b[2] then
  local elapsed = now - tonumber(b[2])
  if elapsed < 0 then elapsed = 0 end
  tokens = math.min(cap, tonumber(b[1]) + elapsed * rate / 1000000)
end
local ok, wait = 0, 0
if tokens >= cost then
  tokens = tokens - cost
  ok = 1
else
  local need = cost - tokens
  if cost > cap then need = cap end
  wait = math.ceil(need / rate * 1000000)
end
redis.call('HSET', KEYS[1], 'tk', string.format('%.17g', tokens), 'ts', string.format('%.17g', now))
redis.call('PEXPIRE', KEYS[1], math.ceil((cap - tokens) / rate * 1000) + 1000)
return {ok, wait}
`)

// Take implements runtime.Limiter.
func (l *Limiter) Take(ctx context.Context, key string, rate runtime.Rate, cost int) (bool, time.Duration, error) {
	if rate.Calls <= 0 || rate.Period <= 0 || rate.Burst < 0 {
		return false, 0, fmt.Errorf("redismcp: invalid rate %v", rate)
	}
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	res, err := l.run(ctx, key, rate, cost)
	if err != nil {
		return false, 0, fmt.Errorf("redismcp: rate limit %q: %w", key, err)
	}
	if len(res) != 2 {
		return false, 0, fmt.Errorf("redismcp: rate limit %q: the script answered %v", key, res)
	}
	return res[0] == 1, time.Duration(res[1]) * time.Microsecond, nil
}

// run runs takeScript, returning when ctx ends even if Redis has not answered: the command
// of a client whose reads are not bounded by Timeout finishes in the background, within the
// client's own ReadTimeout.
func (l *Limiter) run(ctx context.Context, key string, rate runtime.Rate, cost int) ([]int64, error) {
	keys := []string{l.prefix + "rl:" + key}
	if l.bounded {
		return takeScript.Run(ctx, l.rdb, keys, rate.Capacity(), rate.PerSecond(), cost).Int64Slice()
	}
	type answer struct {
		res []int64
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := takeScript.Run(ctx, l.rdb, keys, rate.Capacity(), rate.PerSecond(), cost).Int64Slice()
		done <- answer{res, err}
	}()
	select {
	case a := <-done:
		return a.res, a.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

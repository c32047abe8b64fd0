package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Rate limits: a token bucket per caller, per tool, per service or for all of a caller's
// calls, refilled at a steady rate. The spec asks servers to rate limit tool invocations
// (spec 2025-11-25, Server Features, Tools, Security Considerations: servers MUST "rate limit
// tool invocations"); over the limit a call is answered at once, never held: a tool call with
// a tool execution error the model can read, another request with a JSON-RPC error, both
// with the seconds to wait before retrying (RetryAfterMetaKey, the error's data).

// Rate is a token bucket's rate: Calls per Period sustained, and bursts of up to Burst calls
// (Calls when zero) after a quiet spell.
type Rate struct {
	// Calls is how many calls the bucket allows per Period.
	Calls int
	// Period is the time over which Calls are allowed.
	Period time.Duration
	// Burst is the bucket's capacity: the calls allowed at once after a quiet spell. Zero
	// means Calls.
	Burst int
}

// PerMinute returns a Rate of n calls a minute, in bursts of up to n.
func PerMinute(n int) Rate { return Rate{Calls: n, Period: time.Minute} }

// ParseRate reads a rate written "N/unit" or "N/duration": "60/m" (60 a minute), "10/s",
// "1000/h", "5/30s" (5 every 30 seconds). The units are s, m and h (or second, minute,
// hour); a duration is one time.ParseDuration reads.
func ParseRate(s string) (Rate, error) {
	n, per, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return Rate{}, fmt.Errorf("mcp: rate %q: want N/unit, e.g. 60/m", s)
	}
	calls, err := strconv.Atoi(strings.TrimSpace(n))
	if err != nil || calls <= 0 {
		return Rate{}, fmt.Errorf("mcp: rate %q: the number of calls must be a positive integer", s)
	}
	var period time.Duration
	switch strings.TrimSpace(per) {
	case "s", "sec", "second":
		period = time.Second
	case "m", "min", "minute":
		period = time.Minute
	case "h", "hour":
		period = time.Hour
	default:
		d, err := time.ParseDuration(strings.TrimSpace(per))
		if err != nil || d <= 0 {
			return Rate{}, fmt.Errorf("mcp: rate %q: the period must be s, m, h or a positive duration", s)
		}
		period = d
	}
	return Rate{Calls: calls, Period: period}, nil
}

// String writes the rate as "60/1m0s", which ParseRate reads back, followed by " burst N"
// when its burst differs from its calls (ParseRate has no syntax for a burst).
func (r Rate) String() string {
	s := strconv.Itoa(r.Calls) + "/" + r.Period.String()
	if r.Burst > 0 && r.Burst != r.Calls {
		s += " burst " + strconv.Itoa(r.Burst)
	}
	return s
}

// Capacity is the bucket's capacity: Burst, or Calls when Burst is zero.
func (r Rate) Capacity() int {
	if r.Burst > 0 {
		return r.Burst
	}
	return r.Calls
}

// PerSecond is the bucket's refill rate in tokens a second.
func (r Rate) PerSecond() float64 { return float64(r.Calls) / r.Period.Seconds() }

// valid reports whether the rate can fill a bucket.
func (r Rate) valid() bool { return r.Calls > 0 && r.Period > 0 && r.Burst >= 0 }

// RateLimit is one token bucket a tool's calls take from, one bucket per caller. Generated
// code sets ToolSpec.RateLimits from the proto options (mcp.v1.tool).rate_limit (the tool's
// own bucket) and (mcp.v1.service).rate_limit (one bucket for all the service's tools).
type RateLimit struct {
	// Bucket names the bucket: tools whose limits name the same bucket share it. Empty means
	// the tool's own, "tool/<name>"; a service's is "service/<full name>".
	Bucket string
	// Rate is the bucket's rate: its Calls and Period must be positive (registering the
	// tool panics otherwise).
	Rate Rate
}

// A Limiter keeps token buckets: Take takes cost tokens from the bucket named key, which
// refills at rate and holds at most rate.Capacity() tokens (full when first used). It
// reports whether the tokens were there and, when not, how long until they will be. Take
// must not wait for tokens: it answers at once. An error means the limiter could not decide
// (its store is unreachable); the server then does what WithRateLimit's RateLimitOnFailure
// says.
//
// NewMemoryLimiter is the server's default, one process's buckets; the redis module's
// limiter shares them between the replicas of a set, for one quota across all of them.
type Limiter interface {
	Take(ctx context.Context, key string, rate Rate, cost int) (allowed bool, retryAfter time.Duration, err error)
}

// MemoryLimiter is a Limiter that keeps its buckets in memory, for one process. Buckets that
// have refilled are forgotten, so that memory follows the callers active within a period.
type MemoryLimiter struct {
	now func() time.Time

	mu      sync.Mutex
	buckets map[string]*memBucket
	sweepAt int       // sweep the full buckets out when there are this many
	swept   time.Time // when they were last swept: at least once a sweepEvery
}

// sweepEvery is how often, at least, a MemoryLimiter forgets its full buckets, so that the
// buckets of callers who have gone are forgotten even when no new caller comes.
const sweepEvery = time.Minute

type memBucket struct {
	tokens float64
	at     time.Time // when tokens was computed
	full   time.Time // when the bucket is full again: it can be forgotten from then on
}

// NewMemoryLimiter returns an empty MemoryLimiter.
func NewMemoryLimiter() *MemoryLimiter {
	return &MemoryLimiter{now: time.Now, buckets: make(map[string]*memBucket), sweepAt: 1024}
}

// Take implements Limiter.
func (m *MemoryLimiter) Take(_ context.Context, key string, rate Rate, cost int) (bool, time.Duration, error) {
	if !rate.valid() {
		return false, 0, fmt.Errorf("mcp: invalid rate %v", rate)
	}
	now := m.now()
	capacity, perSec := float64(rate.Capacity()), rate.PerSecond()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.swept.IsZero() {
		m.swept = now
	} else if len(m.buckets) > 0 && now.Sub(m.swept) >= sweepEvery {
		m.sweep(now)
	}
	b := m.buckets[key]
	if b == nil {
		if len(m.buckets) >= m.sweepAt {
			m.sweep(now)
		}
		b = &memBucket{tokens: capacity, at: now}
		m.buckets[key] = b
	} else if elapsed := now.Sub(b.at).Seconds(); elapsed > 0 {
		b.tokens = math.Min(capacity, b.tokens+elapsed*perSec)
		b.at = now
	}
	ok, wait := takeTokens(&b.tokens, capacity, perSec, float64(cost))
	b.full = now.Add(time.Duration((capacity - b.tokens) / perSec * float64(time.Second)))
	return ok, wait, nil
}

// takeTokens takes cost from *tokens when they are there; otherwise it reports how long
// refilling at perSec takes to bring them (a cost above the capacity: one full refill).
func takeTokens(tokens *float64, capacity, perSec, cost float64) (bool, time.Duration) {
	if *tokens >= cost {
		*tokens -= cost
		return true, 0
	}
	need := cost - *tokens
	if cost > capacity {
		need = capacity
	}
	return false, time.Duration(math.Ceil(need / perSec * float64(time.Second)))
}

// sweep forgets the buckets that are full by now (a new one would be the same), and sets
// the next sweep at twice the buckets left, or sweepEvery from now, whichever comes first, so
// that sweeping costs O(1) a call on average.
func (m *MemoryLimiter) sweep(now time.Time) {
	for k, b := range m.buckets {
		if !now.Before(b.full) {
			delete(m.buckets, k)
		}
	}
	m.sweepAt = max(1024, 2*len(m.buckets))
	m.swept = now
}

// Len returns how many buckets the limiter holds.
func (m *MemoryLimiter) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.buckets)
}

// LimiterFailure is what the server does when its Limiter fails (its store is unreachable).
// While it fails, the server asks it again once a second, and the other calls meanwhile get
// the LimiterFailure's answer at once rather than wait for the store's timeout.
type LimiterFailure int

const (
	// FailLocal, the default, decides with the server's own in-memory buckets until the
	// Limiter answers again: each replica then enforces the quota by itself, so a set of N
	// replicas allows up to N times the quota, never unlimited calls, and never refuses
	// every caller because of a store's outage.
	FailLocal LimiterFailure = iota
	// FailOpen allows every call while the Limiter fails.
	FailOpen
	// FailClosed refuses every limited call while the Limiter fails, with a retry hint of
	// one second.
	FailClosed
)

// CodeRateLimited is the JSON-RPC error code of a request refused by a rate limit (a tools/call
// is answered with a tool execution error instead); the error's data holds
// {"retryAfter": seconds}. It lies outside the range JSON-RPC 2.0 reserves (-32768..-32000),
// where the spec asks new codes for purposes it does not define to be (spec 2026-07-28, Basic,
// Error Codes: -32020..-32099 are the MCP specification's own, and an implementation must not
// emit one it does not define; -32000..-32019 are legacy), and outside the local codes
// (-32899..-32800); 429 recalls HTTP's Too Many Requests.
const CodeRateLimited Code = -31429

// RetryAfterMetaKey is the key, in the _meta of a tool result refused by a rate limit, of the
// seconds to wait before calling again (an integer, at least 1). A JSON-RPC error refused by
// a rate limit carries the same number as "retryAfter" in its data.
const RetryAfterMetaKey = "com.github.protomcp/retryAfter"

// RateLimitOption configures a server's rate limits (WithRateLimit).
type RateLimitOption interface {
	applyRateLimit(*rateLimitConfig)
}

type rateLimitOptionFunc func(*rateLimitConfig)

func (f rateLimitOptionFunc) applyRateLimit(c *rateLimitConfig) { f(c) }

type rateLimitConfig struct {
	store    Limiter
	failure  LimiterFailure
	timeout  time.Duration // how long a call waits for store (RateLimitTimeout)
	caller   func(context.Context, *Request) string
	tools    *Rate           // every tool call of a caller: LimitTools
	requests *Rate           // every request of a caller: LimitRequests
	sessions *Rate           // new HTTP sessions of a caller: LimitSessions
	tool     map[string]Rate // by tool name: LimitTool
	service  map[string]Rate // by service full name: LimitService
}

// LimitTools limits each caller's tool calls, all tools together, to r (one bucket per
// caller, "tools").
func LimitTools(r Rate) RateLimitOption {
	mustRate("LimitTools", r)
	return rateLimitOptionFunc(func(c *rateLimitConfig) { c.tools = &r })
}

// LimitTool limits each caller's calls of the tool name to r (bucket "tool/<name>"), in place
// of the tool's (mcp.v1.tool).rate_limit.
func LimitTool(name string, r Rate) RateLimitOption {
	mustRate("LimitTool", r)
	return rateLimitOptionFunc(func(c *rateLimitConfig) {
		if c.tool == nil {
			c.tool = map[string]Rate{}
		}
		c.tool[name] = r
	})
}

// LimitService limits each caller's calls of the tools of a generated service (its full
// proto name, e.g. "weather.v1.WeatherService", as RPCMetaKey names it) to r, all of them
// together (bucket "service/<name>"), in place of the service's (mcp.v1.service).rate_limit.
func LimitService(service string, r Rate) RateLimitOption {
	mustRate("LimitService", r)
	return rateLimitOptionFunc(func(c *rateLimitConfig) {
		if c.service == nil {
			c.service = map[string]Rate{}
		}
		c.service[service] = r
	})
}

// LimitRequests limits each caller's requests to r (bucket "requests"): tool calls, lists,
// reads, prompts, completions; not the handshakes (initialize, server/discover), ping or
// subscriptions/listen. A refused tools/call is a tool error; any other refused request a
// JSON-RPC error with code CodeRateLimited. A tool call takes from this bucket before its
// tool's.
func LimitRequests(r Rate) RateLimitOption {
	mustRate("LimitRequests", r)
	return rateLimitOptionFunc(func(c *rateLimitConfig) { c.requests = &r })
}

// LimitSessions limits each caller's new 2025-11-25 sessions over HTTP (initialize requests
// POSTed without a session) to r (bucket "sessions"; the caller is named as for the other
// limits, by the token's subject, else the client's address). Over it the transport refuses
// the initialize before any session is made: HTTP 429 Too Many Requests with Retry-After
// (RFC 6585, section 4; RFC 9110, section 10.2.3), and the JSON-RPC error CodeRateLimited,
// with the same seconds in its data, as its JSON body, as when the session table is full.
// It bounds the session state one caller can make the server keep. Every other refusal is a
// JSON-RPC answer to the request, status 200 (spec 2025-11-25, Transports, Streamable HTTP,
// Sending Messages to the Server: a request is answered with JSON or an SSE stream).
func LimitSessions(r Rate) RateLimitOption {
	mustRate("LimitSessions", r)
	return rateLimitOptionFunc(func(c *rateLimitConfig) { c.sessions = &r })
}

// RateLimitStore keeps the buckets in l instead of the server's memory: the redis module's
// limiter gives the replicas of a set one quota.
func RateLimitStore(l Limiter) RateLimitOption {
	return rateLimitOptionFunc(func(c *rateLimitConfig) { c.store = l })
}

// DefaultLimiterTimeout is how long a call waits for a RateLimitStore's answer by default
// (RateLimitTimeout).
const DefaultLimiterTimeout = time.Second

// RateLimitTimeout bounds how long a call waits for the RateLimitStore's answer (default
// DefaultLimiterTimeout; Unlimited: the call's own context alone): a store that has not
// answered by then has failed, and the server does what RateLimitOnFailure says, so that a
// store that stops answering (a network partition that drops packets) does not hold every
// call until its client gives up. The Limiter's Take must return once its context ends. The
// server's own memory limiter answers at once and is not timed.
func RateLimitTimeout(d time.Duration) RateLimitOption {
	return rateLimitOptionFunc(func(c *rateLimitConfig) { setLimit(&c.timeout, d, 0) })
}

// RateLimitOnFailure sets what the server does while its Limiter fails: FailLocal (the
// default), FailOpen or FailClosed.
func RateLimitOnFailure(f LimiterFailure) RateLimitOption {
	return rateLimitOptionFunc(func(c *rateLimitConfig) { c.failure = f })
}

// RateLimitCaller replaces how a caller is named (CallerKey): callers with the same name share
// their buckets. Behind a reverse proxy, every anonymous caller has the proxy's address: name
// them by the client address the proxy forwards (X-Forwarded-For, when the proxy is trusted
// to set it), falling back to CallerKey.
func RateLimitCaller(f func(ctx context.Context, req *Request) string) RateLimitOption {
	return rateLimitOptionFunc(func(c *rateLimitConfig) { c.caller = f })
}

func mustRate(opt string, r Rate) {
	if !r.valid() {
		panic(fmt.Sprintf("mcp: %s: invalid rate %+v: Calls and Period must be positive", opt, r))
	}
}

// CallerKey names the caller of a request for its rate limits: the access token's subject
// (with its issuer) when the request carries one, else its 2025-11-25 session, else the
// client's network address, so that anonymous callers of the stateless 2026-07-28 era are
// limited too; over stdio, the one client, "stdio". Anonymous clients behind one proxy or
// NAT are thus told apart by their sessions; but a session costs a client one initialize,
// so an anonymous caller that opens a new session when its quota runs out gets a new one:
// bound that with LimitSessions (new sessions per address) or name callers by address with
// RateLimitCaller. An address is its host without the port; an IPv6 address is its /64
// prefix, the block a single host is usually given, since a client varies the low 64 bits
// at will.
func CallerKey(ctx context.Context, req *Request) string {
	var tok *TokenInfo
	var remote string
	if rs := req.rs; rs != nil {
		tok, remote = rs.token, rs.remote
	} else {
		tok = TokenInfoFrom(ctx)
	}
	switch {
	case tok != nil && tok.Subject != "":
		return "sub:" + tok.Issuer + " " + tok.Subject
	case req.SessionID != "":
		return "session:" + req.SessionID
	case remote != "":
		return "addr:" + addrKey(remote)
	}
	return "stdio"
}

// addrKey names a client by its network address ("host:port"): its host, an IPv6 host by
// its /64 prefix (an IPv4-mapped one as IPv4).
func addrKey(remote string) string {
	host := remote
	if h, _, err := net.SplitHostPort(remote); err == nil {
		host = h
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	ip = ip.Unmap().WithZone("")
	if ip.Is4() {
		return ip.String()
	}
	p, _ := ip.Prefix(64)
	return p.String()
}

// rateLimits is a server's rate limiting: its configuration, the store of its buckets and
// the local ones it falls back on.
type rateLimits struct {
	cfg   rateLimitConfig
	local *MemoryLimiter // the store when none is given, and FailLocal's fallback
	log   *slog.Logger
	// failing is set while the store fails, so that the outage and the recovery are logged
	// once each; meanwhile only one call in probeInterval (the first after retryAt, in
	// nanoseconds since epoch on the monotonic clock, so that a step of the wall clock
	// cannot postpone the next probe) asks the store, the others go straight to the
	// fallback, so that an unresponsive store does not add its timeout to every call.
	failing atomic.Bool
	retryAt atomic.Int64
	epoch   time.Time
}

// probeInterval is how often a server asks a failing Limiter whether it is back.
const probeInterval = time.Second

// newRateLimits returns the rate limiting that opts configure.
func newRateLimits(opts []RateLimitOption, log *slog.Logger) *rateLimits {
	l := &rateLimits{local: NewMemoryLimiter(), log: log, epoch: time.Now()}
	l.cfg.timeout = DefaultLimiterTimeout
	for _, o := range opts {
		o.applyRateLimit(&l.cfg)
	}
	if l.cfg.store == nil {
		l.cfg.store = l.local
	}
	if l.cfg.caller == nil {
		l.cfg.caller = CallerKey
	}
	return l
}

// bucket is one limit a request takes a token from.
type bucket struct {
	name string
	rate Rate
}

// forTool returns the buckets a call of the tool spec takes from, narrowest first (the
// tool's own, its service's, then LimitTools), so that a call refused by a narrow bucket
// spends nothing from the broader ones; code's options replace the proto's rates. It panics
// on an invalid rate in spec.RateLimits, as AddTool does on other errors of a spec.
func (l *rateLimits) forTool(spec *ToolSpec) []bucket {
	own, svcName := "tool/"+spec.Name, ""
	if rpc, ok := spec.Meta[RPCMetaKey].(string); ok {
		svcName, _, _ = strings.Cut(rpc, "/")
	}
	svc := "service/" + svcName
	rates := map[string]Rate{}
	var order []string
	set := func(name string, r Rate) {
		if _, ok := rates[name]; !ok {
			order = append(order, name)
		}
		rates[name] = r
	}
	for _, rl := range spec.RateLimits {
		name := rl.Bucket
		if name == "" {
			name = own
		}
		if !rl.Rate.valid() {
			// A rate with no calls or no period would be no limit at all: say so at
			// registration rather than serve the tool unlimited.
			panic(fmt.Sprintf("mcp: tool %q: invalid rate limit %+v: Calls and Period must be positive", spec.Name, rl.Rate))
		}
		set(name, rl.Rate)
	}
	if r, ok := l.cfg.tool[spec.Name]; ok {
		set(own, r)
	}
	if r, ok := l.cfg.service[svcName]; ok && svcName != "" {
		set(svc, r)
	}
	if l.cfg.tools != nil {
		set("tools", *l.cfg.tools)
	}
	rank := func(name string) int {
		switch name {
		case own:
			return 0
		case "tools":
			return 2
		}
		return 1
	}
	bs := make([]bucket, 0, len(order))
	for r := range 3 {
		for _, name := range order {
			if rank(name) == r {
				bs = append(bs, bucket{name, rates[name]})
			}
		}
	}
	return bs
}

// wrapTool returns call inside the tool's rate limits, or call when it has none.
func (l *rateLimits) wrapTool(spec *ToolSpec, call CallFunc) CallFunc {
	bs := l.forTool(spec)
	if len(bs) == 0 {
		return call
	}
	return func(ctx context.Context, req *Request) (*Response, error) {
		caller := l.cfg.caller(ctx, req)
		for _, b := range bs {
			if ok, wait, down := l.take(ctx, b.name+"|"+caller, b.rate); !ok {
				return l.refuse(req, b, wait, down)
			}
		}
		return call(ctx, req)
	}
}

// interceptor returns the server-wide interceptor of LimitRequests, or nil without it.
func (l *rateLimits) interceptor() Interceptor {
	if l.cfg.requests == nil {
		return nil
	}
	b := bucket{"requests", *l.cfg.requests}
	return InterceptorFunc(func(next CallFunc) CallFunc {
		return func(ctx context.Context, req *Request) (*Response, error) {
			switch req.Method {
			case methodInitialize, methodDiscover, methodPing, methodListen:
				return next(ctx, req)
			}
			if ok, wait, down := l.take(ctx, b.name+"|"+l.cfg.caller(ctx, req), b.rate); !ok {
				return l.refuse(req, b, wait, down)
			}
			return next(ctx, req)
		}
	})
}

// admitSession takes a token from the caller's LimitSessions bucket for an initialize POSTed
// without a session by r, and returns nil, or the refusal and the seconds to wait when the
// caller is over the limit.
func (l *rateLimits) admitSession(r *http.Request, msg *wireMessage) (int, error) {
	if l.cfg.sessions == nil {
		return 0, nil
	}
	ctx := r.Context()
	req := &Request{Method: methodInitialize, ID: *msg.ID, Params: msg.Params, Header: r.Header,
		rs: &requestState{header: r.Header, remote: r.RemoteAddr, token: TokenInfoFrom(ctx)}}
	b := bucket{"sessions", *l.cfg.sessions}
	ok, wait, down := l.take(ctx, b.name+"|"+l.cfg.caller(ctx, req), b.rate)
	if ok {
		return 0, nil
	}
	_, err := l.refuse(req, b, wait, down)
	return retrySeconds(wait), err
}

// take takes a token from the bucket key, doing what cfg.failure says when the store fails;
// down reports a refusal because the store failed (FailClosed).
func (l *rateLimits) take(ctx context.Context, key string, r Rate) (ok bool, wait time.Duration, down bool) {
	if !l.failing.Load() || l.probe() {
		ok, wait, err := l.takeFromStore(ctx, key, r)
		if err == nil {
			if l.failing.Load() && l.failing.CompareAndSwap(true, false) {
				l.log.Info("mcp: rate limiter recovered")
			}
			return ok, wait, false
		}
		if ctx.Err() != nil {
			// The call's own context ended (its client cancelled it or went away): the store
			// did not fail, and a client must not be able to switch the server to its
			// failure mode by cancelling. Nobody waits for this answer: decide locally.
			ok, wait, _ = l.local.Take(ctx, key, r, 1)
			return ok, wait, false
		}
		l.retryAt.Store(int64(l.since() + probeInterval))
		if l.failing.CompareAndSwap(false, true) {
			l.log.Warn("mcp: rate limiter failed; until it recovers, "+l.cfg.failure.String(), "error", err)
		}
	}
	switch l.cfg.failure {
	case FailOpen:
		return true, 0, false
	case FailClosed:
		return false, time.Second, true
	}
	ok, wait, _ = l.local.Take(ctx, key, r, 1)
	return ok, wait, false
}

// takeFromStore asks the store for a token, within cfg.timeout when the store is not the
// server's memory: a store that has not answered by then has failed (its error says so).
func (l *rateLimits) takeFromStore(ctx context.Context, key string, r Rate) (bool, time.Duration, error) {
	if l.cfg.store == Limiter(l.local) || l.cfg.timeout <= 0 {
		return l.cfg.store.Take(ctx, key, r, 1)
	}
	tctx, cancel := context.WithTimeout(ctx, l.cfg.timeout)
	defer cancel()
	ok, wait, err := l.cfg.store.Take(tctx, key, r, 1)
	if err != nil && ctx.Err() == nil && tctx.Err() != nil {
		err = fmt.Errorf("mcp: the rate limiter did not answer within %v: %w", l.cfg.timeout, err)
	}
	return ok, wait, err
}

// probe reports whether this call, while the store fails, is the one that asks it again.
func (l *rateLimits) probe() bool {
	at, now := l.retryAt.Load(), int64(l.since())
	return now >= at && l.retryAt.CompareAndSwap(at, now+int64(probeInterval))
}

// since is the time since epoch, on the monotonic clock (time.Time.UnixNano would read the
// wall clock, which NTP may step back by hours while the store is down).
func (l *rateLimits) since() time.Duration { return time.Since(l.epoch) }

// String says what the server does on a failure of its Limiter.
func (f LimiterFailure) String() string {
	switch f {
	case FailOpen:
		return "calls are allowed"
	case FailClosed:
		return "calls are refused"
	}
	return "each replica limits calls by itself"
}

// retrySeconds rounds a wait up to whole seconds, at least 1, as HTTP's Retry-After counts
// them (RFC 9110, 10.2.3).
func retrySeconds(wait time.Duration) int {
	return max(1, int(math.Ceil(wait.Seconds())))
}

// refuse answers a request over the limit of b (or refused because the store is down): a
// tools/call with a tool execution error the model can read (spec 2025-11-25, Server
// Features, Tools, Error Handling), any other request with a JSON-RPC error; both say when to
// retry.
func (l *rateLimits) refuse(req *Request, b bucket, wait time.Duration, down bool) (*Response, error) {
	secs := retrySeconds(wait)
	why := "rate limit exceeded (" + b.name + ": " + b.rate.String() + " per caller)"
	if down {
		why = "the rate limiter is unavailable (" + b.name + ")"
	}
	unit := " seconds"
	if secs == 1 {
		unit = " second"
	}
	msg := why + "; retry after " + strconv.Itoa(secs) + unit
	if req.Method != methodToolsCall {
		return nil, NewError(CodeRateLimited, msg).WithData(map[string]int{"retryAfter": secs})
	}
	res := ErrorResult(msg)
	res.Meta = map[string]any{RetryAfterMetaKey: secs}
	resp := req.response()
	resp.Result, resp.Message = res, nil
	return resp, nil
}

// RetryAfter returns the time a rate limit asks to wait before retrying, read from a tool
// result's _meta (RetryAfterMetaKey; res, or the result of a *ToolError in err) or a JSON-RPC
// error's data, and whether res or err says so. A client's retry loop uses it instead of
// guessing.
func RetryAfter(res *CallToolResult, err error) (time.Duration, bool) {
	if err != nil {
		var te *ToolError
		if errors.As(err, &te) {
			return RetryAfter(te.Result, nil)
		}
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeRateLimited {
			return 0, false
		}
		var d struct {
			RetryAfter float64 `json:"retryAfter"`
		}
		if json.Unmarshal(e.Data, &d) != nil || d.RetryAfter <= 0 {
			return 0, false
		}
		return time.Duration(d.RetryAfter * float64(time.Second)), true
	}
	if res == nil {
		return 0, false
	}
	switch v := res.Meta[RetryAfterMetaKey].(type) {
	case float64:
		return time.Duration(v * float64(time.Second)), true
	case int:
		return time.Duration(v) * time.Second, true
	}
	return 0, false
}

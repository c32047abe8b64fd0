package runtime

import (
	"context"
	"log/slog"
	"math"
	"time"
)

// Unlimited, given to a numeric or duration option of a Server, a Client or a call, removes
// its limit, or turns off what it turns on (a keep-alive, a retention). Any negative value
// means the same. Zero, like leaving the option out, means the option's default. This is the
// rule of every such option; each one's doc comment gives its default and what Unlimited
// means for it.
const Unlimited = -1

// What Unlimited stands for in a config, where zero does not mean "none": limits beyond
// anything a process reaches, small enough that adding to them cannot overflow.
const (
	unlimitedCount    = math.MaxInt32
	unlimitedBytes    = math.MaxInt64 >> 2
	unlimitedDuration = time.Duration(math.MaxInt64 >> 2) // 73 years
)

// setLimit applies the rule of Unlimited: v > 0 sets *dst, 0 keeps the default in *dst, and a
// negative v sets *dst to unlimited (the config's "no limit").
func setLimit[T int | int64 | time.Duration](dst *T, v, unlimited T) {
	switch {
	case v > 0:
		*dst = v
	case v < 0:
		*dst = unlimited
	}
}

// The options of a Server, and those of a Server and a Client alike, are all in this file;
// a Client's are in client_option.go, a call's (CallOption) in client_call.go. The
// exceptions are the options of concerns that are packages of their own, or about to be:
// authorization (WithTokenVerifier, WithOAuth) and
// the MemoryEventStore's (WithMaxTotalEventBytes), which configure that store, not a Server.

// ServerOption configures a Server.
type ServerOption interface {
	applyServer(*serverConfig)
}

// Option configures a Server and a Client alike: WithLogger is one.
type Option interface {
	ServerOption
	ClientOption
}

// HandlerOption configures one registration: a tool, prompt or resource added to a Server,
// or every tool of a generated Register function.
type HandlerOption interface {
	applyHandler(*handlerConfig)
}

// InterceptorsOption is what WithInterceptors returns: an option for a Server, a Client and a
// registration alike.
type InterceptorsOption interface {
	Option
	HandlerOption
}

type handlerConfig struct {
	interceptors []Interceptor
	cache        *CacheHint                             // WithCacheHint
	visible      func(context.Context, *TokenInfo) bool // WithVisibility
	deferTask    bool                                   // DeferTask (task_server.go)
}

func newHandlerConfig(opts []HandlerOption) handlerConfig {
	var c handlerConfig
	for _, o := range opts {
		o.applyHandler(&c)
	}
	return c
}

// WithInterceptors adds interceptors, in order, the first outermost. Given to NewServer they
// wrap every request the server handles; to a registration (AddTool, AddPrompt, AddResource,
// a generated Register function), the requests for what it registers, inside the server's;
// to NewClient, every request the client sends.
func WithInterceptors(interceptors ...Interceptor) InterceptorsOption {
	return &interceptorsOption{interceptors: interceptors}
}

type interceptorsOption struct{ interceptors []Interceptor }

func (o *interceptorsOption) applyServer(c *serverConfig) {
	c.interceptors = append(c.interceptors, o.interceptors...)
}

func (o *interceptorsOption) applyClient(c *clientConfig) {
	c.interceptors = append(c.interceptors, o.interceptors...)
}

func (o *interceptorsOption) applyHandler(c *handlerConfig) {
	c.interceptors = append(c.interceptors, o.interceptors...)
}

// WithLogger sets the logger of a Server or a Client (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return loggerOption{l} }

type loggerOption struct{ l *slog.Logger }

func (o loggerOption) applyServer(c *serverConfig) {
	if o.l != nil {
		c.logger = o.l
	}
}

func (o loggerOption) applyClient(c *clientConfig) {
	if o.l != nil {
		c.logger = o.l
	}
}

// WithEra restricts the protocol eras of a Server or a Client (default EraAuto: both).
func WithEra(e Era) Option { return eraOption{e} }

type eraOption struct{ e Era }

func (o eraOption) applyServer(c *serverConfig) { c.era = o.e }
func (o eraOption) applyClient(c *clientConfig) { c.era = o.e }

type serverOptionFunc func(*serverConfig)

func (f serverOptionFunc) applyServer(c *serverConfig) { f(c) }

type serverConfig struct {
	logger               *slog.Logger
	instructions         string
	alwaysSSE            bool
	allowedOrigins       []string
	allowedHosts         []string
	dnsRebinding         bool
	sessionIdleTimeout   time.Duration
	eventStore           EventStore
	eventRetention       time.Duration
	retryInterval        time.Duration
	maxBodyBytes         int64
	maxSessions          int
	maxInflight          int
	maxBatch             int // 0: no limit
	maxQueuedEvents      int
	handlerTimeout       time.Duration
	callerRequestTimeout time.Duration
	interceptors         []Interceptor
	pageSize             int
	completion           CompletionHandler
	keepAlive            time.Duration
	noHijack             bool // WithoutStreamHijack
	writeTimeout         time.Duration
	sessionBudget        int64
	serverBudget         int64
	maxSessionState      int64
	subscribe            SubscribeHandler
	handshakeTimeout     time.Duration
	evictionGrace        time.Duration // sessions.go
	bodyReadTimeout      time.Duration
	auth                 *serverAuth  // WithTokenVerifier
	era                  Era          // WithEra
	requestStateKey      []byte       // WithRequestStateKey
	sessionStore         SessionStore // WithSessionStore
	bus                  Bus          // WithBus
	replicaID            string       // WithReplicaID

	rateLimit    []RateLimitOption // WithRateLimit
	listCache    CacheHint         // WithListCacheHint
	listsByScope bool              // WithListsByScope
	// Tasks (task_server.go).
	taskStore          TaskStore // WithTaskStore
	taskTTL            time.Duration
	maxTaskTTL         time.Duration
	taskPollInterval   time.Duration
	maxTasks           int
	maxTasksPerCaller  int
	maxTaskBytes       int64
	maxTaskResultBytes int
}

func defaultServerConfig() serverConfig {
	return serverConfig{
		logger:               slog.Default(),
		dnsRebinding:         true,
		sessionIdleTimeout:   30 * time.Minute,
		eventStore:           NewMemoryEventStore(0),
		eventRetention:       10 * time.Second,
		retryInterval:        time.Second,
		maxBodyBytes:         4 << 20,
		maxSessions:          10000,
		maxInflight:          256,
		maxBatch:             DefaultMaxBatchSize,
		maxQueuedEvents:      10000,
		handlerTimeout:       10 * time.Minute,
		callerRequestTimeout: 5 * time.Minute,
		pageSize:             100,
		writeTimeout:         time.Minute,
		sessionBudget:        defaultSessionBudget,
		serverBudget:         defaultServerBudget,
		maxSessionState:      defaultMaxSessionState,
		handshakeTimeout:     defaultHandshakeTimeout,
		evictionGrace:        defaultEvictionGrace,
		bodyReadTimeout:      defaultBodyReadTimeout,
		taskTTL:              defaultTaskTTL,
		maxTaskTTL:           defaultMaxTaskTTL,
		taskPollInterval:     defaultTaskPoll,
		maxTasks:             defaultMaxTasks,
		maxTasksPerCaller:    defaultTasksPerUser,
		maxTaskBytes:         defaultTaskBytes,
		maxTaskResultBytes:   defaultTaskResult,
	}
}

// WithInstructions sets the instructions returned by initialize.
func WithInstructions(s string) ServerOption {
	return serverOptionFunc(func(c *serverConfig) { c.instructions = s })
}

// WithSSEResponses makes the server answer every POSTed request with an SSE stream (priming
// event, then the request's messages). By default the server answers with plain JSON and
// upgrades to SSE only when a handler sends a notification or request before its result.
func WithSSEResponses() ServerOption {
	return serverOptionFunc(func(c *serverConfig) { c.alwaysSSE = true })
}

// WithEventStore sets where SSE events are kept for resumption (default: an in-memory store,
// NewMemoryEventStore(0)). nil disables resumption of events already written.
func WithEventStore(s EventStore) ServerOption {
	return serverOptionFunc(func(c *serverConfig) { c.eventStore = s })
}

// WithCompletionHandler enables completion/complete (and the completions capability).
func WithCompletionHandler(h CompletionHandler) ServerOption {
	return serverOptionFunc(func(c *serverConfig) { c.completion = h })
}

// WithSubscribeHandler makes resources/subscribe ask h before recording a subscription. By
// default any URI is accepted, within the session's state budget.
func WithSubscribeHandler(h SubscribeHandler) ServerOption {
	return serverOptionFunc(func(c *serverConfig) { c.subscribe = h })
}

// WithAllowedOrigins adds origins (e.g. "https://app.example.com") that may call the server
// from a browser. Loopback origins are always allowed.
func WithAllowedOrigins(origins ...string) ServerOption {
	return serverOptionFunc(func(c *serverConfig) { c.allowedOrigins = append(c.allowedOrigins, origins...) })
}

// WithAllowedHosts adds Host header values (host or host:port) the server answers to besides
// loopback names. Needed when the server is reached by a DNS name or a non-loopback address.
func WithAllowedHosts(hosts ...string) ServerOption {
	return serverOptionFunc(func(c *serverConfig) { c.allowedHosts = append(c.allowedHosts, hosts...) })
}

// WithoutDNSRebindingProtection turns off the Origin and Host checks. Only do this behind a
// proxy that performs them, or with real authentication in front of the server.
func WithoutDNSRebindingProtection() ServerOption {
	return serverOptionFunc(func(c *serverConfig) { c.dnsRebinding = false })
}

// WithRequestStateKey sets the key that protects the requestState of InputRequiredResults
// (HMAC-SHA256). Replicas behind a load balancer must share it, so that a retry reaching
// another replica is accepted; by default each Server makes its own at random.
func WithRequestStateKey(key []byte) ServerOption {
	return serverOptionFunc(func(c *serverConfig) { c.requestStateKey = append([]byte(nil), key...) })
}

// WithSessionStore makes the server keep its 2025-11-25 sessions in store, shared with other
// replicas, besides its own memory. It takes effect together with WithBus and a
// SharedEventStore given to WithEventStore: a replica set needs all three.
func WithSessionStore(store SessionStore) ServerOption {
	return serverOptionFunc(func(c *serverConfig) { c.sessionStore = store })
}

// WithBus connects the server to the other replicas of its service (see SessionStore).
func WithBus(bus Bus) ServerOption {
	return serverOptionFunc(func(c *serverConfig) { c.bus = bus })
}

// WithReplicaID names this replica on the Bus (default: a random ID, new at each start). Each
// live replica must have its own; its request streams' event IDs start with it.
func WithReplicaID(id string) ServerOption {
	return serverOptionFunc(func(c *serverConfig) { c.replicaID = id })
}

// The numeric and duration options of a Server. Zero (or leaving the option out) means the
// default; Unlimited (any negative value) means no limit, or off (see Unlimited).

// WithSessionIdleTimeout sets how long a session may go unused before it is ended (default
// 30 minutes; Unlimited: sessions last until DELETE or shutdown).
func WithSessionIdleTimeout(d time.Duration) ServerOption {
	return serverOptionFunc(func(c *serverConfig) { setLimit(&c.sessionIdleTimeout, d, 0) })
}

// WithHandshakeTimeout sets how long a session may go without any message after initialize's
// answer before it is ended (default 10 s; Unlimited: only the idle timeout applies). A
// client that follows the lifecycle sends notifications/initialized at once.
func WithHandshakeTimeout(d time.Duration) ServerOption {
	return serverOptionFunc(func(c *serverConfig) { setLimit(&c.handshakeTimeout, d, 0) })
}

// WithEventRetention sets how long the events of a stream whose response was written stay in
// the event store, for a client whose connection died at the very end to resume (default 10 s;
// Unlimited turns retention off: they are forgotten at once). The store's own bounds still
// apply.
func WithEventRetention(d time.Duration) ServerOption {
	return serverOptionFunc(func(c *serverConfig) { setLimit(&c.eventRetention, d, 0) })
}

// WithRetryInterval sets the SSE retry: value sent with priming events (default 1 s). It is
// no limit and cannot be turned off: Unlimited, like zero, means the default.
func WithRetryInterval(d time.Duration) ServerOption {
	return serverOptionFunc(func(c *serverConfig) { setLimit(&c.retryInterval, d, c.retryInterval) })
}

// WithMaxBodyBytes limits the size of a POST body, and of a line over stdio (default 4 MiB;
// Unlimited: no limit); larger bodies get 413.
func WithMaxBodyBytes(n int64) ServerOption {
	return serverOptionFunc(func(c *serverConfig) { setLimit(&c.maxBodyBytes, n, unlimitedBytes) })
}

// WithBodyReadTimeout bounds how long the server waits for a POST body to arrive in full
// (default 30 s; Unlimited: no bound of the runtime's own). A body still incomplete then gets
// 408 and the connection is closed.
func WithBodyReadTimeout(d time.Duration) ServerOption {
	return serverOptionFunc(func(c *serverConfig) { setLimit(&c.bodyReadTimeout, d, 0) })
}

// WithMaxSessions limits the number of live sessions (default 10000; Unlimited: no limit);
// initialize beyond it gets 503.
func WithMaxSessions(n int) ServerOption {
	return serverOptionFunc(func(c *serverConfig) { setLimit(&c.maxSessions, n, unlimitedCount) })
}

// WithMaxInflight limits the requests one session may have in flight (default 256;
// Unlimited: no limit); beyond it requests get HTTP 429 with a JSON-RPC error.
func WithMaxInflight(n int) ServerOption {
	return serverOptionFunc(func(c *serverConfig) { setLimit(&c.maxInflight, n, unlimitedCount) })
}

// WithMaxBatchSize limits the messages of one JSON-RPC batch (default DefaultMaxBatchSize;
// Unlimited: no limit); a larger batch is refused whole with HTTP 400 and a JSON-RPC error
// saying the limit. Its bytes are bounded by WithMaxBodyBytes, like any POST body. Batches are
// accepted only on sessions that negotiated protocol version 2025-03-26.
func WithMaxBatchSize(n int) ServerOption {
	return serverOptionFunc(func(c *serverConfig) { setLimit(&c.maxBatch, n, 0) })
}

// WithMaxQueuedEvents limits the events one stream may hold for a client that is not reading
// (default 10000; Unlimited: no limit but the session's budget). A handler whose message does
// not fit gets an error; nothing is dropped silently.
func WithMaxQueuedEvents(n int) ServerOption {
	return serverOptionFunc(func(c *serverConfig) { setLimit(&c.maxQueuedEvents, n, unlimitedCount) })
}

// WithHandlerTimeout bounds every request handler (default 10 minutes; Unlimited: no bound).
// Requests that start close together share one deadline timer, so a handler's deadline is its
// start plus d, rounded up by at most a 64th of d.
func WithHandlerTimeout(d time.Duration) ServerOption {
	return serverOptionFunc(func(c *serverConfig) { setLimit(&c.handlerTimeout, d, 0) })
}

// WithCallerRequestTimeout bounds the requests a handler sends back to its caller through
// Caller (CreateMessage, Elicit, ListRoots, Ping) when the handler's context has no earlier
// deadline (default 5 minutes; Unlimited: no bound but the handler's).
func WithCallerRequestTimeout(d time.Duration) ServerOption {
	return serverOptionFunc(func(c *serverConfig) { setLimit(&c.callerRequestTimeout, d, 0) })
}

// WithPageSize sets how many items list methods return per page (default 100; Unlimited:
// every item on one page).
func WithPageSize(n int) ServerOption {
	return serverOptionFunc(func(c *serverConfig) { setLimit(&c.pageSize, n, unlimitedCount) })
}

// WithKeepAlive makes the server send an SSE comment on idle GET streams at this interval,
// so that proxies do not cut them (default off; Unlimited: off).
func WithKeepAlive(d time.Duration) ServerOption {
	return serverOptionFunc(func(c *serverConfig) { setLimit(&c.keepAlive, d, 0) })
}

// WithoutStreamHijack keeps a session's GET stream on net/http's handler goroutine, as any
// handler, for as long as it is open. By default, on HTTP/1.x, the server takes the stream's
// connection over (http.Hijacker) once the GET is accepted: the handler returns, net/http
// frees the connection's buffers and goroutine, and the stream costs a few KB instead of
// about 24 (docs/benchmarks.md). Middleware then sees the GET end at once with status 200,
// http.Server.Shutdown no longer waits for the stream (Server.Shutdown ends it), and the
// connection closes when the stream ends. Use this option when middleware must see the
// stream's whole life (access logs, metrics of open streams). HTTP/2 streams, and writers
// that do not expose the connection (Unwrap, as http.ResponseController looks), always stay
// on the handler's goroutine.
func WithoutStreamHijack() ServerOption {
	return serverOptionFunc(func(c *serverConfig) { c.noHijack = true })
}

// WithWriteTimeout bounds each write to a client (default 1 minute; Unlimited: no bound). A
// client that stops reading for that long loses its connection instead of holding a goroutine
// and its events forever; it can resume the stream with GET and Last-Event-ID. Over stdio it
// bounds each write to the output where the output takes a deadline (os.Stdout on a pipe
// does): past it the connection's output is given up, and what the server sends fails.
func WithWriteTimeout(d time.Duration) ServerOption {
	return serverOptionFunc(func(c *serverConfig) { setLimit(&c.writeTimeout, d, 0) })
}

// WithSessionBudget sets how many bytes one session may make the server hold (default 64 MiB;
// Unlimited: no limit but the server's): its state, the params of its requests in flight, and
// the events queued for it. At the limit a new request gets HTTP 429 with a JSON-RPC error, a
// handler's notification or request fails with an error (logged), and a response whose client
// went away is dropped (the stream then cannot be resumed); a response whose client is
// connected always goes out.
func WithSessionBudget(n int64) ServerOption {
	return serverOptionFunc(func(c *serverConfig) { setLimit(&c.sessionBudget, n, unlimitedBytes) })
}

// WithServerBudget sets how many bytes all sessions together may make the server hold
// (default 1 GiB; Unlimited: no limit), counted as WithSessionBudget counts them. At the limit
// initialize gets 503, and every session meets the limits WithSessionBudget describes.
func WithServerBudget(n int64) ServerOption {
	return serverOptionFunc(func(c *serverConfig) { setLimit(&c.serverBudget, n, unlimitedBytes) })
}

// WithMaxSessionState bounds what a session keeps for its whole life (default 64 KiB;
// Unlimited: no limit but the session's budget): the clientInfo of initialize, and its
// resource subscriptions. An initialize over it gets 400 with -32602; a subscription over it
// gets -32602.
func WithMaxSessionState(n int64) ServerOption {
	return serverOptionFunc(func(c *serverConfig) { setLimit(&c.maxSessionState, n, unlimitedBytes) })
}

// WithRateLimit configures the server's rate limits (ratelimit.go): limits given in code
// (LimitTools, LimitTool, LimitService, LimitRequests, LimitSessions), where the buckets are
// kept (RateLimitStore; the server's memory by default), what happens when that store fails
// (RateLimitOnFailure) and how callers are named (RateLimitCaller). Tools' own limits
// (ToolSpec.RateLimits, from proto options) apply without it, in memory. Several
// WithRateLimit options add up, the later ones overriding the earlier.
func WithRateLimit(opts ...RateLimitOption) ServerOption {
	return serverOptionFunc(func(c *serverConfig) { c.rateLimit = append(c.rateLimit, opts...) })
}

// WithListCacheHint sets the cache hint of the server's lists, tools/list, prompts/list,
// resources/list and resources/templates/list (spec 2026-07-28, Caching): how long a client
// may consider a page fresh, and whether it may be shared across callers. A registration's
// own hint (ToolSpec.Cache, WithCacheHint) takes part too: a page is fresh for the shortest
// TTL of what it lists, and public only when everything its list holds is public and no
// entry is shown to some callers only (WithListsByScope, WithVisibility). By default lists
// are immediately stale (ttlMs 0) and private. In 2025-11-25, which defines no caching, a
// list whose hint has a positive TTL carries ttlMs and cacheScope too (its Result allows
// members it does not define; protomcp's client honours them, others ignore them).
// resources/read stays immediately stale and private.
func WithListCacheHint(h CacheHint) ServerOption {
	return serverOptionFunc(func(c *serverConfig) { c.listCache = h })
}

// WithListsByScope makes tools/list leave out the tools whose scopes (ToolSpec.Scopes, the
// proto option (mcp.v1.tool).scopes) the caller's access token does not grant, and makes
// the list private for caches while any tool has scopes (spec 2026-07-28, Caching, Choosing
// a Cache Scope: filtered lists vary per user). Calling a tool left out still answers 403
// insufficient_scope with the scopes it needs, so that a client can step up and then sees
// the fuller list. Over stdio, which carries no token, a tool with scopes cannot be called,
// so it is left out too.
func WithListsByScope() ServerOption {
	return serverOptionFunc(func(c *serverConfig) { c.listsByScope = true })
}

// WithCacheHint gives a registration (AddTool, AddPrompt, AddResource, AddResourceTemplate,
// their typed forms, or every registration of a generated Register function) its cache
// hint, which the lists it appears on take into account (see CacheHint). A ToolSpec's own
// Cache, when set, wins over it.
func WithCacheHint(h CacheHint) HandlerOption { return cacheHintOption{h} }

type cacheHintOption struct{ h CacheHint }

func (o cacheHintOption) applyHandler(c *handlerConfig) { h := o.h; c.cache = &h }

// WithVisibility makes a registration (AddTool, AddPrompt, AddResource,
// AddResourceTemplate, their typed forms, or every registration of a generated Register
// function) visible only to the callers visible accepts: it is asked, with the request's
// context and its token (nil for an unauthenticated caller, and over stdio), on every list
// and call. What it hides is left out of the lists that caller gets, which are then private
// for caches (spec 2026-07-28, Caching, Choosing a Cache Scope), and is unknown to that
// caller: tools/call answers as for a tool that does not exist, prompts/get and
// resources/read likewise, so that a caller learns nothing of what it may not see. Unlike a
// tool's scopes (WithListsByScope), which a caller can obtain by a step-up, visibility is
// the server's own decision (a tenant, a feature flag), so no challenge is offered.
//
// visible runs on every list request for every registration it guards: keep it cheap, and
// safe for concurrent use.
func WithVisibility(visible func(ctx context.Context, token *TokenInfo) bool) HandlerOption {
	return visibilityOption{visible}
}

type visibilityOption struct {
	visible func(context.Context, *TokenInfo) bool
}

func (o visibilityOption) applyHandler(c *handlerConfig) { c.visible = o.visible }

// The options of tasks: tool calls that outlive their request (task_server.go).

// WithTaskStore sets where a Server keeps its tasks (default: a MemoryTaskStore of its own).
// Replicas of a server share tasks through a shared store (the redis module's).
func WithTaskStore(st TaskStore) ServerOption {
	return serverOptionFunc(func(c *serverConfig) { c.taskStore = st })
}

// WithDefaultTaskTTL sets how long a task is kept after its creation when its client asks for no
// TTL (default 1 hour; Unlimited: until the server stops, within WithMaxTaskTTL). Its handler
// is cancelled when the TTL runs out, and the task is forgotten.
func WithDefaultTaskTTL(d time.Duration) ServerOption {
	return serverOptionFunc(func(c *serverConfig) { setLimit(&c.taskTTL, d, unlimitedDuration) })
}

// WithMaxTaskTTL caps the TTL a client may ask for a task (default 24 hours; Unlimited: no
// cap).
func WithMaxTaskTTL(d time.Duration) ServerOption {
	return serverOptionFunc(func(c *serverConfig) { setLimit(&c.maxTaskTTL, d, unlimitedDuration) })
}

// WithTaskPollInterval sets the interval between polls a Server suggests to the clients of
// its tasks (default 1 s). It is no limit and cannot be turned off: Unlimited, like zero,
// means the default.
func WithTaskPollInterval(d time.Duration) ServerOption {
	return serverOptionFunc(func(c *serverConfig) { setLimit(&c.taskPollInterval, d, c.taskPollInterval) })
}

// WithMaxTasks limits the live tasks of a Server, all callers together (default 1000;
// Unlimited: no limit); a tools/call that would create one more is refused with a JSON-RPC
// error (-32600) that says so. Finished tasks count until their TTL runs out.
func WithMaxTasks(n int) ServerOption {
	return serverOptionFunc(func(c *serverConfig) { setLimit(&c.maxTasks, n, unlimitedCount) })
}

// WithMaxTasksPerCaller limits the live tasks of one caller: one authenticated identity, or
// one session without authentication (default 100; Unlimited: no limit). Past it a tools/call
// that would create a task is refused with a JSON-RPC error (-32600) that says so. Callers of
// the 2026-07-28 era without authentication are no one caller: WithMaxTasks alone bounds
// their tasks.
func WithMaxTasksPerCaller(n int) ServerOption {
	return serverOptionFunc(func(c *serverConfig) { setLimit(&c.maxTasksPerCaller, n, unlimitedCount) })
}

// WithMaxTaskBytes limits the bytes the task store's records may take together, stored
// results included (default 64 MiB; Unlimited: no limit); past it new tasks are refused.
func WithMaxTaskBytes(n int64) ServerOption {
	return serverOptionFunc(func(c *serverConfig) { setLimit(&c.maxTaskBytes, n, unlimitedBytes) })
}

// WithMaxTaskResultBytes limits the size of one task's stored result (default 4 MiB;
// Unlimited: no limit); a larger result fails the task with an error that says so.
func WithMaxTaskResultBytes(n int) ServerOption {
	return serverOptionFunc(func(c *serverConfig) { setLimit(&c.maxTaskResultBytes, n, unlimitedCount) })
}

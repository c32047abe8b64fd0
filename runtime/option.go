package runtime

import (
	"log/slog"
	"time"
)

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
	maxBatch             int // WithMaxBatchSize (batch.go)
	maxQueuedEvents      int
	handlerTimeout       time.Duration
	callerRequestTimeout time.Duration
	interceptors         []Interceptor
	pageSize             int
	completion           CompletionHandler
	keepAlive            time.Duration
	writeTimeout         time.Duration
	sessionBudget        int64
	serverBudget         int64
	maxSessionState      int64
	subscribe            SubscribeHandler
	handshakeTimeout     time.Duration
	bodyReadTimeout      time.Duration
	auth                 *serverAuth  // WithTokenVerifier
	era                  Era          // WithEra
	requestStateKey      []byte       // WithRequestStateKey
	sessionStore         SessionStore // WithSessionStore
	bus                  Bus          // WithBus
	replicaID            string       // WithReplicaID
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
		bodyReadTimeout:      defaultBodyReadTimeout,
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

// WithSessionIdleTimeout sets how long a session may go unused before it is ended (default
// 30 minutes; 0 keeps sessions until DELETE or shutdown).
func WithSessionIdleTimeout(d time.Duration) ServerOption {
	return serverOptionFunc(func(c *serverConfig) { c.sessionIdleTimeout = d })
}

// WithEventStore sets where SSE events are kept for resumption (default: an in-memory store,
// NewMemoryEventStore(0)). nil disables resumption of events already written.
func WithEventStore(s EventStore) ServerOption {
	return serverOptionFunc(func(c *serverConfig) { c.eventStore = s })
}

// WithEventRetention sets how long the events of a stream whose response was written stay in
// the event store, for a client whose connection died at the very end to resume (default 10s;
// 0 forgets them at once). The store's own bounds still apply.
func WithEventRetention(d time.Duration) ServerOption {
	return serverOptionFunc(func(c *serverConfig) { c.eventRetention = d })
}

// WithRetryInterval sets the SSE retry: value sent with priming events (default 1s).
func WithRetryInterval(d time.Duration) ServerOption {
	return serverOptionFunc(func(c *serverConfig) { c.retryInterval = d })
}

// WithMaxBodyBytes limits the size of a POST body (default 4 MiB); larger bodies get 413.
func WithMaxBodyBytes(n int64) ServerOption {
	return serverOptionFunc(func(c *serverConfig) { c.maxBodyBytes = n })
}

// WithMaxSessions limits the number of live sessions (default 10000); initialize beyond it
// gets 503.
func WithMaxSessions(n int) ServerOption {
	return serverOptionFunc(func(c *serverConfig) { c.maxSessions = n })
}

// WithMaxInflight limits the requests one session may have in flight (default 256); beyond
// it requests get HTTP 429 with a JSON-RPC error.
func WithMaxInflight(n int) ServerOption {
	return serverOptionFunc(func(c *serverConfig) { c.maxInflight = n })
}

// WithMaxQueuedEvents limits the events one stream may hold for a client that is not reading
// (default 10000). A handler whose message does not fit gets an error; nothing is dropped
// silently.
func WithMaxQueuedEvents(n int) ServerOption {
	return serverOptionFunc(func(c *serverConfig) { c.maxQueuedEvents = n })
}

// WithHandlerTimeout bounds every request handler (default 10 minutes; 0 for none). Requests
// that start close together share one deadline timer, so a handler's deadline is its start
// plus d, rounded up by at most a 64th of d.
func WithHandlerTimeout(d time.Duration) ServerOption {
	return serverOptionFunc(func(c *serverConfig) { c.handlerTimeout = d })
}

// WithCallerRequestTimeout bounds the requests a handler sends back to its caller through
// Caller (CreateMessage, Elicit, ListRoots, Ping) when the handler's context has no earlier
// deadline (default 5 minutes).
func WithCallerRequestTimeout(d time.Duration) ServerOption {
	return serverOptionFunc(func(c *serverConfig) { c.callerRequestTimeout = d })
}

// WithPageSize sets how many items list methods return per page (default 100).
func WithPageSize(n int) ServerOption {
	return serverOptionFunc(func(c *serverConfig) {
		if n > 0 {
			c.pageSize = n
		}
	})
}

// WithCompletionHandler enables completion/complete (and the completions capability).
func WithCompletionHandler(h CompletionHandler) ServerOption {
	return serverOptionFunc(func(c *serverConfig) { c.completion = h })
}

// WithKeepAlive makes the server send an SSE comment on idle GET streams at this interval,
// so that proxies do not cut them (default off).
func WithKeepAlive(d time.Duration) ServerOption {
	return serverOptionFunc(func(c *serverConfig) { c.keepAlive = d })
}

// WithWriteTimeout bounds each write to a client (default 1 minute; 0 for none). A client that
// stops reading for that long loses its connection instead of holding a goroutine and its
// events forever; it can resume the stream with GET and Last-Event-ID.
func WithWriteTimeout(d time.Duration) ServerOption {
	return serverOptionFunc(func(c *serverConfig) { c.writeTimeout = d })
}

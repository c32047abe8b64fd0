package runtime

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// ClientOption configures a Client.
type ClientOption interface {
	applyClient(*clientConfig)
}

type clientOptionFunc func(*clientConfig)

func (f clientOptionFunc) applyClient(c *clientConfig) { f(c) }

type clientConfig struct {
	httpClient      *http.Client
	info            Implementation
	protocolVersion string
	versionPinned   bool // WithProtocolVersion was given: its version's era decides
	headers         http.Header
	logger          *slog.Logger
	maxEventSize    int
	maxResponse     int64
	drainBytes      int64
	drainTime       time.Duration
	callTimeout     time.Duration
	closeTimeout    time.Duration
	maxResumes      int
	sampling        SamplingHandler
	elicitation     ElicitationHandler
	roots           RootsHandler
	onNotification  NotificationHandler
	noListCache     bool // WithoutListCache
	onLog           func(context.Context, *LogMessageParams)
	listen          bool
	interceptors    []Interceptor
	era             Era // WithEra
	// A command client's: the waits of its process's shutdown.
	stdioExitWait, stdioTermWait time.Duration

	maxServerRequests    int
	notificationBudget   int64
	crossOriginRedirects bool
	// wrapTransport wraps the HTTP client's transport (WithTransportWrapper).
	wrapTransport func(next http.RoundTripper, endpoint string, log *slog.Logger) http.RoundTripper
}

// SamplingHandler answers sampling/createMessage requests from the server.
type SamplingHandler func(ctx context.Context, p *CreateMessageParams) (*CreateMessageResult, error)

// ElicitationHandler answers elicitation/create requests from the server. For an "accept" in
// form mode, properties the handler leaves out are filled in from the schema's defaults.
type ElicitationHandler func(ctx context.Context, p *ElicitParams) (*ElicitResult, error)

// RootsHandler answers roots/list requests from the server.
type RootsHandler func(ctx context.Context) (*ListRootsResult, error)

// NotificationHandler receives every notification from the server, in order per stream.
type NotificationHandler func(ctx context.Context, method string, params json.RawMessage)

func defaultClientConfig() clientConfig {
	return clientConfig{
		info:            Implementation{Name: "protomcp-client", Version: Version},
		protocolVersion: LatestProtocolVersion,
		logger:          slog.Default(),
		maxEventSize:    64 << 20,
		maxResponse:     64 << 20,
		drainBytes:      1 << 20,
		drainTime:       5 * time.Second,
		callTimeout:     5 * time.Minute,
		closeTimeout:    5 * time.Second,
		maxResumes:      5,
		stdioExitWait:   defaultStdioExitWait,
		stdioTermWait:   defaultStdioTermWait,

		maxServerRequests:  defaultMaxServerRequests,
		notificationBudget: defaultNotificationBudget,
	}
}

// DefaultTransport returns the http.Transport a Client uses unless given its own *http.Client:
// keep-alive connections, enough idle connections per host for 64 concurrent calls, and no
// overall timeout (calls are bounded by their contexts, which a transport timeout would cut
// short on long streams).
func DefaultTransport() *http.Transport {
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   128,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		ForceAttemptHTTP2:     true,
	}
}

// WithHTTPClient makes the client use hc (its Transport should keep connections alive; do
// not set hc.Timeout, which would cut long SSE streams: calls are bounded by their contexts).
// When hc has neither a cookie jar nor a timeout, the client hands its requests to hc's
// Transport itself rather than through hc.Do, which would only copy them in case they
// redirect; a redirect is then followed by hc.Do, with hc's CheckRedirect.
func WithHTTPClient(hc *http.Client) ClientOption {
	return clientOptionFunc(func(c *clientConfig) { c.httpClient = hc })
}

// WithTransportWrapper makes the Client send its HTTP requests through the RoundTripper
// that wrap returns around next, the one it would use otherwise (the Transport of
// WithHTTPClient's client, or DefaultTransport). wrap is called once, by NewClient, with the
// endpoint URL and the Client's logger (WithLogger). This is how authorization plugs into
// a Client without the core knowing its flows: oauth.WithOAuth, in package runtime/oauth,
// is a WithTransportWrapper. Given several times, each wraps those given before it.
func WithTransportWrapper(wrap func(next http.RoundTripper, endpoint string, log *slog.Logger) http.RoundTripper) ClientOption {
	return clientOptionFunc(func(c *clientConfig) {
		if wrap == nil {
			return
		}
		inner := c.wrapTransport
		if inner == nil {
			c.wrapTransport = wrap
			return
		}
		c.wrapTransport = func(next http.RoundTripper, endpoint string, log *slog.Logger) http.RoundTripper {
			return wrap(inner(next, endpoint, log), endpoint, log)
		}
	})
}

// WithClientInfo sets the name and version the client gives at initialization.
func WithClientInfo(info Implementation) ClientOption {
	return clientOptionFunc(func(c *clientConfig) { c.info = info })
}

// WithProtocolVersion sets the protocol version the client asks for. Without it the client
// probes with server/discover and speaks 2026-07-28 to a server that does, else initializes a
// session with the latest session-era version. A version given here also decides the era:
// a session-era version (2025-11-25 included) always initializes a session, as WithEra(EraLegacy)
// would.
func WithProtocolVersion(v string) ClientOption {
	return clientOptionFunc(func(c *clientConfig) { c.protocolVersion, c.versionPinned = v, true })
}

// WithHeader adds an HTTP header sent with every request (e.g. Authorization).
func WithHeader(key, value string) ClientOption {
	return clientOptionFunc(func(c *clientConfig) {
		if c.headers == nil {
			c.headers = make(http.Header)
		}
		c.headers.Add(key, value)
	})
}

// The numeric and duration options of a Client. Zero (or leaving the option out) means the
// default; Unlimited (any negative value) means no limit (see Unlimited).

// WithMaxEventSize bounds one SSE event and one JSON response body, and over stdio one
// message (a line): a longer one fails the call it answers (default 64 MiB; Unlimited: 2 GiB,
// the most one buffer holds).
func WithMaxEventSize(n int) ClientOption {
	return clientOptionFunc(func(c *clientConfig) {
		setLimit(&c.maxEventSize, n, unlimitedCount)
		c.maxResponse = int64(c.maxEventSize)
	})
}

// WithDrainLimits bounds how much of a finished response stream the client reads, after the
// response arrived, so that its connection can be reused (defaults 1 MiB and 5 s; Unlimited
// for either: no bound of that kind). A stream still open past either bound is closed, and its
// connection with it.
func WithDrainLimits(maxBytes int64, maxTime time.Duration) ClientOption {
	return clientOptionFunc(func(c *clientConfig) {
		setLimit(&c.drainBytes, maxBytes, unlimitedBytes)
		setLimit(&c.drainTime, maxTime, unlimitedDuration)
	})
}

// WithDefaultCallTimeout bounds calls whose context has no deadline (default 5 minutes;
// Unlimited: no bound).
func WithDefaultCallTimeout(d time.Duration) ClientOption {
	return clientOptionFunc(func(c *clientConfig) { setLimit(&c.callTimeout, d, 0) })
}

// WithCloseTimeout bounds Close: its DELETE, and the wait for background work to stop
// (default 5 s; Unlimited: no bound but the context given to Close).
func WithCloseTimeout(d time.Duration) ClientOption {
	return clientOptionFunc(func(c *clientConfig) { setLimit(&c.closeTimeout, d, unlimitedDuration) })
}

// WithMaxResumes bounds how many times in a row a call resumes its stream with GET and
// Last-Event-ID without receiving anything (default 5; Unlimited: no bound but the call's
// deadline).
func WithMaxResumes(n int) ClientOption {
	return clientOptionFunc(func(c *clientConfig) { setLimit(&c.maxResumes, n, unlimitedCount) })
}

// WithMaxServerRequests bounds how many requests from the server (sampling, elicitation,
// roots, ping) the client handles at once (default 16; Unlimited: no bound). A request beyond
// it is answered at once with a JSON-RPC internal error saying so.
func WithMaxServerRequests(n int) ClientOption {
	return clientOptionFunc(func(c *clientConfig) { setLimit(&c.maxServerRequests, n, unlimitedCount) })
}

// WithNotificationBudget bounds the bytes of notifications waiting for their callbacks
// (WithNotificationHandler, WithLogHandler, progress), for all streams together (default
// 16 MiB; Unlimited: no bound). Notifications beyond it are dropped, and the drop is logged;
// over stdio, a typed stream's messages beyond it fail its call instead (a stream loses no
// message).
func WithNotificationBudget(n int64) ClientOption {
	return clientOptionFunc(func(c *clientConfig) { setLimit(&c.notificationBudget, n, unlimitedBytes) })
}

// WithSamplingHandler declares the sampling capability and answers sampling requests with h.
func WithSamplingHandler(h SamplingHandler) ClientOption {
	return clientOptionFunc(func(c *clientConfig) { c.sampling = h })
}

// WithElicitationHandler declares the elicitation capability (form mode) and answers
// elicitation requests with h.
func WithElicitationHandler(h ElicitationHandler) ClientOption {
	return clientOptionFunc(func(c *clientConfig) { c.elicitation = h })
}

// WithRootsHandler declares the roots capability and answers roots/list with h.
func WithRootsHandler(h RootsHandler) ClientOption {
	return clientOptionFunc(func(c *clientConfig) { c.roots = h })
}

// WithNotificationHandler receives every notification the server sends.
func WithNotificationHandler(h NotificationHandler) ClientOption {
	return clientOptionFunc(func(c *clientConfig) { c.onNotification = h })
}

// WithLogHandler receives the server's log messages (notifications/message).
func WithLogHandler(h func(context.Context, *LogMessageParams)) ClientOption {
	return clientOptionFunc(func(c *clientConfig) { c.onLog = h })
}

// WithStandaloneStream makes the client open the session's GET stream after initializing, to
// receive notifications and requests unrelated to a call (list changes, resource updates). A
// server without one (405) is fine.
func WithStandaloneStream() ClientOption {
	return clientOptionFunc(func(c *clientConfig) { c.listen = true })
}

// WithCrossOriginRedirects lets the client follow redirects to another origin (scheme, host
// and port). By default they are refused: a redirect would carry the request's body (a tool's
// arguments), the session ID and the headers set with WithHeader to another server.
func WithCrossOriginRedirects() ClientOption {
	return clientOptionFunc(func(c *clientConfig) { c.crossOriginRedirects = true })
}

// WithStdioShutdown sets how long a command client's Close waits for the server process to
// exit after closing its stdin (default 2s), and then after SIGTERM (default 2s), before it
// kills the process. Unlimited waits for as long as Close's context allows.
func WithStdioShutdown(exitWait, termWait time.Duration) ClientOption {
	return clientOptionFunc(func(c *clientConfig) {
		setLimit(&c.stdioExitWait, exitWait, unlimitedDuration)
		setLimit(&c.stdioTermWait, termWait, unlimitedDuration)
	})
}

// WithoutListCache makes the Client ask the server for every list page, whatever the cache
// hints of earlier pages said. By default a page the server sent with a positive ttlMs is
// reused while fresh, and dropped on the matching list_changed notification and, when
// private, when the credentials change (see AuthorizationContextTransport and ListTools).
func WithoutListCache() ClientOption {
	return clientOptionFunc(func(c *clientConfig) { c.noListCache = true })
}

package runtime

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// Every numeric and duration option follows one rule (see Unlimited): zero, like leaving the
// option out, keeps the default; Unlimited, and any other negative value, means no limit (or
// off); a positive value is the limit. Each row reads the option's field from a config built
// with it.
func TestOptionZeroDefaultUnlimited(t *testing.T) {
	t.Parallel()
	type option struct {
		// apply builds a config with the option given v, and returns the field it sets.
		apply func(v int64) int64
		// dflt is the field's value in a config built without the option.
		dflt int64
	}
	type row struct {
		name string
		option
		// unlimited is the field's value for Unlimited: its "no limit" or "off".
		unlimited int64
	}
	server := func(opt func(int64) ServerOption, field func(*serverConfig) int64) option {
		d := defaultServerConfig()
		return option{func(v int64) int64 {
			c := defaultServerConfig()
			opt(v).applyServer(&c)
			return field(&c)
		}, field(&d)}
	}
	client := func(opt func(int64) ClientOption, field func(*clientConfig) int64) option {
		d := defaultClientConfig()
		return option{func(v int64) int64 {
			c := defaultClientConfig()
			opt(v).applyClient(&c)
			return field(&c)
		}, field(&d)}
	}
	dur := func(d time.Duration) int64 { return int64(d) }
	def := defaultServerConfig()
	rows := []row{
		{"WithSessionIdleTimeout", server(func(v int64) ServerOption { return WithSessionIdleTimeout(time.Duration(v)) }, func(c *serverConfig) int64 { return dur(c.sessionIdleTimeout) }), 0},
		{"WithHandshakeTimeout", server(func(v int64) ServerOption { return WithHandshakeTimeout(time.Duration(v)) }, func(c *serverConfig) int64 { return dur(c.handshakeTimeout) }), 0},
		{"WithEventRetention", server(func(v int64) ServerOption { return WithEventRetention(time.Duration(v)) }, func(c *serverConfig) int64 { return dur(c.eventRetention) }), 0},
		{"WithRetryInterval", server(func(v int64) ServerOption { return WithRetryInterval(time.Duration(v)) }, func(c *serverConfig) int64 { return dur(c.retryInterval) }), dur(def.retryInterval)},
		{"WithMaxBodyBytes", server(func(v int64) ServerOption { return WithMaxBodyBytes(v) }, func(c *serverConfig) int64 { return c.maxBodyBytes }), unlimitedBytes},
		{"WithBodyReadTimeout", server(func(v int64) ServerOption { return WithBodyReadTimeout(time.Duration(v)) }, func(c *serverConfig) int64 { return dur(c.bodyReadTimeout) }), 0},
		{"WithMaxSessions", server(func(v int64) ServerOption { return WithMaxSessions(int(v)) }, func(c *serverConfig) int64 { return int64(c.maxSessions) }), unlimitedCount},
		{"WithMaxInflight", server(func(v int64) ServerOption { return WithMaxInflight(int(v)) }, func(c *serverConfig) int64 { return int64(c.maxInflight) }), unlimitedCount},
		{"WithMaxBatchSize", server(func(v int64) ServerOption { return WithMaxBatchSize(int(v)) }, func(c *serverConfig) int64 { return int64(c.maxBatch) }), 0},
		{"WithMaxQueuedEvents", server(func(v int64) ServerOption { return WithMaxQueuedEvents(int(v)) }, func(c *serverConfig) int64 { return int64(c.maxQueuedEvents) }), unlimitedCount},
		{"WithHandlerTimeout", server(func(v int64) ServerOption { return WithHandlerTimeout(time.Duration(v)) }, func(c *serverConfig) int64 { return dur(c.handlerTimeout) }), 0},
		{"WithCallerRequestTimeout", server(func(v int64) ServerOption { return WithCallerRequestTimeout(time.Duration(v)) }, func(c *serverConfig) int64 { return dur(c.callerRequestTimeout) }), 0},
		{"WithPageSize", server(func(v int64) ServerOption { return WithPageSize(int(v)) }, func(c *serverConfig) int64 { return int64(c.pageSize) }), unlimitedCount},
		{"WithKeepAlive", server(func(v int64) ServerOption { return WithKeepAlive(time.Duration(v)) }, func(c *serverConfig) int64 { return dur(c.keepAlive) }), 0},
		{"WithWriteTimeout", server(func(v int64) ServerOption { return WithWriteTimeout(time.Duration(v)) }, func(c *serverConfig) int64 { return dur(c.writeTimeout) }), 0},
		{"WithSessionBudget", server(func(v int64) ServerOption { return WithSessionBudget(v) }, func(c *serverConfig) int64 { return c.sessionBudget }), unlimitedBytes},
		{"WithServerBudget", server(func(v int64) ServerOption { return WithServerBudget(v) }, func(c *serverConfig) int64 { return c.serverBudget }), unlimitedBytes},
		{"WithMaxSessionState", server(func(v int64) ServerOption { return WithMaxSessionState(v) }, func(c *serverConfig) int64 { return c.maxSessionState }), unlimitedBytes},

		{"WithMaxEventSize", client(func(v int64) ClientOption { return WithMaxEventSize(int(v)) }, func(c *clientConfig) int64 { return int64(c.maxEventSize) }), unlimitedCount},
		{"WithMaxEventSize (response)", client(func(v int64) ClientOption { return WithMaxEventSize(int(v)) }, func(c *clientConfig) int64 { return c.maxResponse }), unlimitedCount},
		{"WithDrainLimits (bytes)", client(func(v int64) ClientOption { return WithDrainLimits(v, 0) }, func(c *clientConfig) int64 { return c.drainBytes }), unlimitedBytes},
		{"WithDrainLimits (time)", client(func(v int64) ClientOption { return WithDrainLimits(0, time.Duration(v)) }, func(c *clientConfig) int64 { return dur(c.drainTime) }), dur(unlimitedDuration)},
		{"WithDefaultCallTimeout", client(func(v int64) ClientOption { return WithDefaultCallTimeout(time.Duration(v)) }, func(c *clientConfig) int64 { return dur(c.callTimeout) }), 0},
		{"WithCloseTimeout", client(func(v int64) ClientOption { return WithCloseTimeout(time.Duration(v)) }, func(c *clientConfig) int64 { return dur(c.closeTimeout) }), dur(unlimitedDuration)},
		{"WithMaxResumes", client(func(v int64) ClientOption { return WithMaxResumes(int(v)) }, func(c *clientConfig) int64 { return int64(c.maxResumes) }), unlimitedCount},
		{"WithMaxServerRequests", client(func(v int64) ClientOption { return WithMaxServerRequests(int(v)) }, func(c *clientConfig) int64 { return int64(c.maxServerRequests) }), unlimitedCount},
		{"WithNotificationBudget", client(func(v int64) ClientOption { return WithNotificationBudget(v) }, func(c *clientConfig) int64 { return c.notificationBudget }), unlimitedBytes},

		// A call without WithTimeout has no timeout of its own: the client's default applies.
		{"WithTimeout", option{func(v int64) int64 { return dur(newCallOptions([]CallOption{WithTimeout(time.Duration(v))}).timeout) }, 0}, dur(unlimitedDuration)},
		{"WithMaxTotalEventBytes", option{func(v int64) int64 { return int64(NewMemoryEventStore(0, WithMaxTotalEventBytes(int(v))).maxTotal) }, 256 << 20}, unlimitedBytes},
		{"NewMemoryEventStore", option{func(v int64) int64 { return int64(NewMemoryEventStore(int(v)).maxBytes) }, 16 << 20}, unlimitedBytes},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, r.dflt, r.apply(0), "zero keeps the default")
			assert.Equal(t, r.unlimited, r.apply(Unlimited), "Unlimited")
			assert.Equal(t, r.unlimited, r.apply(-7), "any negative value is Unlimited")
			assert.Equal(t, int64(12345), r.apply(12345), "a positive value is the limit")
		})
	}
}

// Zero was "refuse everything", "none" or "the default", option by option: now it is the
// default for every one of them.
func TestOptionZeroIsTheDefault(t *testing.T) {
	t.Parallel()
	s := defaultServerConfig()
	for _, o := range []ServerOption{WithMaxSessions(0), WithMaxInflight(0), WithHandlerTimeout(0), WithSessionIdleTimeout(0),
		WithWriteTimeout(0), WithHandshakeTimeout(0), WithBodyReadTimeout(0), WithEventRetention(0), WithMaxBatchSize(0)} {
		o.applyServer(&s)
	}
	assert.Equal(t, 10000, s.maxSessions)
	assert.Equal(t, 256, s.maxInflight)
	assert.Equal(t, 10*time.Minute, s.handlerTimeout)
	assert.Equal(t, 30*time.Minute, s.sessionIdleTimeout)
	assert.Equal(t, time.Minute, s.writeTimeout)
	assert.Equal(t, defaultHandshakeTimeout, s.handshakeTimeout)
	assert.Equal(t, defaultBodyReadTimeout, s.bodyReadTimeout)
	assert.Equal(t, 10*time.Second, s.eventRetention)
	assert.Equal(t, DefaultMaxBatchSize, s.maxBatch)
	c := defaultClientConfig()
	for _, o := range []ClientOption{WithDefaultCallTimeout(0), WithMaxResumes(0), WithDrainLimits(0, 0), WithMaxEventSize(0)} {
		o.applyClient(&c)
	}
	assert.Equal(t, 5*time.Minute, c.callTimeout)
	assert.Equal(t, 5, c.maxResumes)
	assert.Equal(t, int64(1<<20), c.drainBytes)
	assert.Equal(t, 5*time.Second, c.drainTime)
	assert.Equal(t, 64<<20, c.maxEventSize)
	assert.Equal(t, int64(64<<20), c.maxResponse)
}

// Package redismcp lets several replicas of a protomcp server behind one URL share their
// state through Redis (7 or later) or Valkey: the 2025-11-25 era's sessions, the events of
// their streams, and the messages one replica sends another. One Store implements
// runtime.SessionStore, runtime.SharedEventStore and runtime.Bus:
//
//	store, err := redismcp.Dial("redis://127.0.0.1:6379/0", redismcp.Options{})
//	srv := runtime.NewServer(impl, store.ServerOptions()...)
//
// In Redis:
//   - a session is a hash (<prefix>s:<id>) whose lifetime is Options.SessionTTL, extended on
//     each of its requests; its subscriptions are fields of it;
//   - the events of a stream are a Redis Stream (<prefix>e:<session>:<stream>), entry IDs
//     0-<seq>, trimmed to about Options.MaxStreamEvents entries (XADD MAXLEN ~), kept for
//     Options.EventTTL after their last event and forgotten with their session; a replay after
//     a Last-Event-ID is an XRANGE;
//   - tasks (tools run as tasks) are records of a TaskStore (tasks.go), shared by every
//     replica; the handler runs on the replica that created the task;
//   - the replicas talk over Pub/Sub (<prefix>bus for all, <prefix>bus:<replica> for one), and
//     each live replica holds a lease key (<prefix>r:<replica>) that expires Options.Lease
//     after the replica stops.
//
// Every call is bounded by the client's timeouts and the caller's context: when Redis is
// unreachable the server answers 503 with a JSON-RPC error, and it recovers by itself when
// Redis returns (go-redis reconnects; the bus resubscribes).
package redismcp

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/protomcp/protomcp/runtime"
	"github.com/redis/go-redis/v9"
)

// Options configure a Store. The zero value is usable.
type Options struct {
	// Prefix starts every key and channel name (default "mcp:"), so that several services can
	// share one Redis.
	Prefix string
	// SessionTTL is how long a session lives unused (default 30 minutes): give it the
	// server's runtime.WithSessionIdleTimeout.
	SessionTTL time.Duration
	// EventTTL is how long a stream's events are kept after its newest one (default
	// SessionTTL); the server deletes a stream's events sooner, once its response is
	// delivered and its retention is over (runtime.WithEventRetention).
	EventTTL time.Duration
	// MaxStreamEvents bounds the events kept per stream (default 10000, the server's default
	// bound on a stream's queued events); older ones are trimmed, and resuming before them
	// gets 404.
	MaxStreamEvents int64
	// Lease is how long a replica is considered alive after its last heartbeat (default 3
	// seconds). A client whose replica died gets its request's definitive error about that
	// long after the death.
	Lease time.Duration
}

// Store keeps the shared state of a replica set in Redis. It implements
// runtime.SessionStore, runtime.SharedEventStore and runtime.Bus.
type Store struct {
	rdb  redis.UniversalClient
	opts Options
}

var (
	_ runtime.SessionStore     = (*Store)(nil)
	_ runtime.SharedEventStore = (*Store)(nil)
	_ runtime.Bus              = (*Store)(nil)
)

// New returns a Store on rdb, which it does not close.
func New(rdb redis.UniversalClient, opts Options) *Store {
	if opts.Prefix == "" {
		opts.Prefix = "mcp:"
	}
	if opts.SessionTTL <= 0 {
		opts.SessionTTL = 30 * time.Minute
	}
	if opts.EventTTL <= 0 {
		opts.EventTTL = opts.SessionTTL
	}
	if opts.MaxStreamEvents <= 0 {
		opts.MaxStreamEvents = 10000
	}
	if opts.Lease <= 0 {
		opts.Lease = 3 * time.Second
	}
	return &Store{rdb: rdb, opts: opts}
}

// Dial connects to the Redis at url (redis://[user:password@]host:port/db, or rediss:// for
// TLS; go-redis's query parameters, such as pool_size, apply) and returns a Store on it; Close
// closes the connection. Unless the URL says otherwise, dials and reads are bounded to 2 s, so
// that an unreachable Redis fails requests fast. It does not wait for Redis to answer: a
// replica may start before its Redis.
func Dial(url string, opts Options) (*Store, error) {
	o, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("redismcp: %w", err)
	}
	// Fail fast when Redis is down, rather than queueing requests behind reconnections; the
	// URL's own settings (dial_timeout=, read_timeout=, pool_size=, ...) win.
	setDefault(&o.DialTimeout, 2*time.Second)
	setDefault(&o.ReadTimeout, 2*time.Second)
	setDefault(&o.WriteTimeout, 2*time.Second)
	setDefault(&o.PoolTimeout, 3*time.Second)
	setDefault(&o.MaxRetries, 1)
	setDefault(&o.DialerRetries, 2)
	return New(redis.NewClient(o), opts), nil
}

func setDefault[T comparable](p *T, v T) {
	var zero T
	if *p == zero {
		*p = v
	}
}

// Close closes the Redis client.
func (s *Store) Close() error { return s.rdb.Close() }

// Client returns the Redis client.
func (s *Store) Client() redis.UniversalClient { return s.rdb }

// ServerOptions returns the options that make a server a replica sharing its state through
// this Store: runtime.WithSessionStore, runtime.WithEventStore, runtime.WithBus and
// runtime.WithTaskStore (its Tasks), and runtime.WithSessionIdleTimeout matching
// Options.SessionTTL.
func (s *Store) ServerOptions() []runtime.ServerOption {
	return []runtime.ServerOption{
		runtime.WithSessionStore(s),
		runtime.WithEventStore(s),
		runtime.WithBus(s),
		runtime.WithTaskStore(s.Tasks()),
		runtime.WithSessionIdleTimeout(s.opts.SessionTTL),
	}
}

func (s *Store) sessionKey(id string) string { return s.opts.Prefix + "s:" + id }

// Session hash fields.
const (
	fieldVersion  = "v"
	fieldInfo     = "ci"
	fieldCaps     = "caps"
	fieldLevel    = "ll"
	fieldOwner    = "o"
	subPrefix     = "sub:"
	errConflictRe = "equal or smaller"
)

func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("redis %s: %w", op, err)
}

func parseSeq(id string) (uint64, error) {
	_, n, ok := strings.Cut(id, "-")
	if !ok {
		return 0, fmt.Errorf("redismcp: unexpected stream entry ID %q", id)
	}
	return strconv.ParseUint(n, 10, 64)
}

func isNil(err error) bool { return errors.Is(err, redis.Nil) }

// ctxErr prefers the context's error, which says why a call stopped.
func ctxErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

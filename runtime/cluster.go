package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// Scale-out: several replicas of one server behind one URL.
//
// In the 2025-11-25 era a session lives between initialize and DELETE, and its requests may land
// on any replica behind a load balancer. Three things are then shared by the replicas, through
// the interfaces of this file (the redis module implements them on Redis):
//   - a SessionStore holds what a replica needs to serve a session it did not start: the
//     negotiated version, the client's capabilities and info, its log level and resource
//     subscriptions, and who started it. A replica loads it on every request of the session
//     (which also extends its idle lifetime), so that a change made through one replica (a
//     subscription, a log level, a DELETE) holds on all of them;
//   - a SharedEventStore holds every event of a request stream before it goes to the client,
//     so that a client whose replica died resumes the stream, with GET and Last-Event-ID, from
//     another replica (Streamable HTTP transport, Resumability and Redelivery);
//   - a Bus carries what one replica produces for a client connected to another: server-wide
//     notifications (list_changed, resources/updated) go to the replica holding each session's
//     GET stream, a client's response to a server request (sampling, elicitation, roots) goes to
//     the replica whose handler waits for it, and notifications/cancelled to the replica
//     running the request.
//
// Without them (the default), a Server keeps all of this in its own memory, as before, and
// nothing on the paths of a single process changes. The stateless 2026-07-28 era needs none
// of it: each request carries its whole context (era_server.go); replicas only need the same
// WithRequestStateKey for multi-round-trip requests.
//
// What "nothing lost" means when a replica dies: every event of a request stream is in the
// event store before it can reach the client, so a client that resumes on another replica
// gets every event after its Last-Event-ID exactly once. The handler itself died with its
// replica; once that replica's lease on the Bus lapses (Bus.Alive reports false), the replica
// the client resumed on ends the stream with a JSON-RPC error saying the request's replica
// stopped, stored in the event store like any response, so the client gets one definitive
// outcome rather than waiting forever.

// SessionState is what replicas share about a 2025-11-25 session.
type SessionState struct {
	ProtocolVersion string             `json:"protocolVersion"`
	ClientInfo      Implementation     `json:"clientInfo"`
	Capabilities    ClientCapabilities `json:"capabilities"`
	// LogLevel is the level set by logging/setLevel; empty until the client sets one.
	LogLevel LoggingLevel `json:"logLevel,omitempty"`
	// Subscriptions are the resource URIs the session subscribed to.
	Subscriptions []string `json:"subscriptions,omitempty"`
	// Owner identifies who started the session (an opaque string made by the runtime from the
	// access token's issuer, subject and client); requests with another identity get 403.
	Owner string `json:"owner,omitempty"`
}

// SessionChange is one change to a stored session: a new log level, or one subscription added
// or removed. Changes are applied field by field, so that two replicas changing the same
// session at once do not overwrite each other.
type SessionChange struct {
	LogLevel    LoggingLevel // set when not empty
	Subscribe   string       // a URI to add, when not empty
	Unsubscribe string       // a URI to remove, when not empty
}

// ErrSessionNotFound is returned by a SessionStore for a session it does not hold (never
// created, deleted, or expired).
var ErrSessionNotFound = errors.New("mcp: session not found in the session store")

// SessionStore holds the sessions that several replicas of a server share. Sessions expire
// when unused for the store's idle lifetime, which should match the server's
// WithSessionIdleTimeout. Implementations must be safe for concurrent use, and must return an
// error rather than block when their backend is unreachable.
type SessionStore interface {
	// Create stores a new session.
	Create(ctx context.Context, id string, state *SessionState) error
	// Load returns a session's state and extends its lifetime; ErrSessionNotFound when the
	// store does not hold it.
	Load(ctx context.Context, id string) (*SessionState, error)
	// Update applies a change to a stored session.
	Update(ctx context.Context, id string, change SessionChange) error
	// Touch extends a session's lifetime (a replica holding its GET stream open calls it);
	// ErrSessionNotFound when the store does not hold it.
	Touch(ctx context.Context, id string) error
	// Delete forgets a session (DELETE).
	Delete(ctx context.Context, id string) error
}

// StreamInfo describes a stored request stream.
type StreamInfo struct {
	// RequestID is the JSON of the id of the request the stream answers.
	RequestID json.RawMessage
	// LastSeq is the sequence number of the newest stored event (0 when none is).
	LastSeq uint64
}

// ErrEventConflict is returned by SharedEventStore.Append when the stream already holds an
// event with that sequence number or a later one: another replica wrote first.
var ErrEventConflict = errors.New("mcp: the event store already holds this event of the stream")

// SharedEventStore is an EventStore that several replicas share. Besides storing and replaying
// events, it lets a replica follow a stream that another replica produces.
type SharedEventStore interface {
	EventStore
	// OpenStream records the request a stream answers, before its first event is stored.
	OpenStream(ctx context.Context, session, stream string, requestID json.RawMessage) error
	// StreamInfo returns what OpenStream recorded and the newest stored sequence number;
	// ErrSessionNotFound when the stream is unknown.
	StreamInfo(ctx context.Context, session, stream string) (StreamInfo, error)
	// Wait returns when the stream holds an event after seq after, when ctx ends, or after
	// about a second in any case (the caller looks again); Append must fail with
	// ErrEventConflict for a sequence number not greater than the newest stored one.
	Wait(ctx context.Context, session, stream string, after uint64) error
}

// Bus carries messages between the replicas of a server. Delivery is best effort (a replica
// that is reconnecting to the bus misses what is published meanwhile), as notifications are
// when a client has no stream open.
type Bus interface {
	// Publish sends msg to the replica named to, or to every replica when to is empty.
	Publish(ctx context.Context, to string, msg []byte) error
	// Listen calls fn, one message at a time, for every message published to replica or to
	// every replica, until ctx ends; meanwhile it holds replica's lease, so that Alive reports
	// it alive. It reconnects by itself after errors, and returns when ctx ends.
	Listen(ctx context.Context, replica string, fn func(msg []byte)) error
	// Alive reports whether replica holds its lease: it runs Listen, and has not stopped for
	// longer than the lease's duration.
	Alive(ctx context.Context, replica string) (bool, error)
}

// storeTimeout bounds each call a request makes to a shared store, on top of the store's own
// timeouts, so that an unreachable backend never holds a request.
const storeTimeout = 5 * time.Second

package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"

	"github.com/protomcp/protomcp/internal/jsonscan"
)

// Memory budgets. Every byte a client can make the server hold past the request that brought
// it is counted against two budgets, in bytes: one per session and one for the whole server.
//
// What a session is charged for:
//   - its state: the clientInfo it gave at initialize (capabilities other than roots, sampling
//     and elicitation are not kept) and its resource subscriptions (each URI plus
//     subscriptionOverhead), within WithMaxSessionState as well;
//   - the params of its requests in flight, until their handlers return;
//   - the events queued on its streams for a client that has not read them yet, until a writer
//     takes them (a stream whose connection died moves them to the event store: spill);
//   - the stored events a resumption is replaying, until they are written (replay).
//
// The event store has bounds of its own (see NewMemoryEventStore).

// Budget defaults; the README's Security section lists them.
const (
	defaultSessionBudget   = 64 << 20
	defaultServerBudget    = 1 << 30
	defaultMaxSessionState = 64 << 10
	// subscriptionOverhead is what one subscription is charged besides its URI: the map
	// entry that holds it.
	subscriptionOverhead = 64
	// maxMetaBytes bounds a request's params._meta: it is decoded into a map, which costs
	// several times its JSON size for as long as the handler runs.
	maxMetaBytes = 64 << 10
)

// errBudget is returned to a handler whose message would take its session, or the server,
// over its memory budget.
var errBudget = errors.New("mcp: the session's memory budget is spent: the client is not reading its events (see WithSessionBudget)")

// errResponseDropped is logged when a response is dropped because its client went away and
// the session's budget has no room left to keep it for a resumption.
var errResponseDropped = errors.New("mcp: the response was dropped: its client went away and the session's memory budget has no room to keep it")

// SubscribeHandler decides whether a session may subscribe to a resource (resources/subscribe).
// Returning an error refuses the subscription: an *Error (for instance with
// CodeResourceNotFound) goes to the client as is; any other error becomes -32602 with its text.
type SubscribeHandler func(ctx context.Context, uri string) error

// reserve charges n bytes to the session and the server. Unless force, it fails when either
// budget would be exceeded. Concurrent reservations may overshoot a budget by at most the size
// of the messages in flight at that instant.
func (sess *session) reserve(n int64, force bool) bool {
	if n <= 0 {
		return true
	}
	s := sess.server
	if !force && (sess.held.Load()+n > s.cfg.sessionBudget || s.held.Load()+n > s.cfg.serverBudget) {
		return false
	}
	sess.held.Add(n)
	s.held.Add(n)
	return true
}

// release returns n bytes reserved by reserve.
func (sess *session) release(n int64) {
	if n <= 0 {
		return
	}
	sess.held.Add(-n)
	sess.server.held.Add(-n)
}

// stateSize is what a session's clientInfo is charged.
func stateSize(info *Implementation) int64 {
	return int64(len(info.Name) + len(info.Title) + len(info.Version) + len(info.Description) + len(info.WebsiteURL))
}

// subscribe records a subscription within the session's state budget, after asking the
// server's SubscribeHandler.
func (sess *session) subscribe(ctx context.Context, uri string) error {
	if err := sess.server.askSubscribe(ctx, uri); err != nil {
		return err
	}
	cost := int64(len(uri)) + subscriptionOverhead
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if sess.subscriptions[uri] {
		return nil
	}
	if sess.state+cost > sess.server.cfg.maxSessionState || !sess.reserve(cost, false) {
		return Errorf(CodeInvalidParams, "subscription refused: the session's subscriptions and client info would exceed %d bytes (the server's limit); unsubscribe from others first", sess.server.cfg.maxSessionState)
	}
	sess.state += cost
	sess.subscriptions[uri] = true
	return nil
}

// askSubscribe asks the server's SubscribeHandler, when it has one, whether a session may
// subscribe to uri: its JSON-RPC errors are sent as they are, others as invalid params.
func (s *Server) askSubscribe(ctx context.Context, uri string) error {
	h := s.cfg.subscribe
	if h == nil {
		return nil
	}
	err := h(ctx, uri)
	if err == nil {
		return nil
	}
	if rpc := (*Error)(nil); errors.As(err, &rpc) {
		return err
	}
	return Errorf(CodeInvalidParams, "subscription to %s refused: %v", truncate(uri, 200), err)
}

// unsubscribe forgets a subscription and releases its bytes.
func (sess *session) unsubscribe(uri string) {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if !sess.subscriptions[uri] {
		return
	}
	delete(sess.subscriptions, uri)
	cost := int64(len(uri)) + subscriptionOverhead
	sess.state -= cost
	sess.release(cost)
}

// budgetError is the JSON-RPC error of a request refused for lack of budget.
func budgetError(sess *session) *Error {
	return Errorf(CodeInvalidRequest, "too many bytes held for this session (budget %d bytes): read the answers of earlier requests, or wait for them to finish", sess.server.cfg.sessionBudget)
}

// checkInitialize checks initialize's params against the state budget.
func (s *Server) checkInitialize(info *Implementation) *Error {
	if n := stateSize(info); n > s.cfg.maxSessionState {
		return Errorf(CodeInvalidParams, "clientInfo of %d bytes exceeds the server's limit of %d bytes", n, s.cfg.maxSessionState)
	}
	return nil
}

// metaTooLarge reports a params._meta over maxMetaBytes.
func metaTooLarge(n int) *Error {
	return Errorf(CodeInvalidParams, "params._meta of %d bytes exceeds the limit of %d bytes", n, maxMetaBytes)
}

// maxProgressToken bounds a progressToken: the server repeats it in every progress
// notification of the request.
const maxProgressToken = 256

// requestMeta decodes a request's params._meta, once, for every method. A _meta over
// maxMetaBytes, one that is not an object, and a progressToken that is not a string or a number
// (the MCP schema's ProgressToken) or is over maxProgressToken bytes are refused with -32602.
func requestMeta(params json.RawMessage) (*RequestMeta, *Error) {
	return requestMetaOf(findMeta(params))
}

// requestMetaOf is requestMeta of params whose _meta is raw (nil for none).
func requestMetaOf(raw json.RawMessage) (*RequestMeta, *Error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if len(raw) > maxMetaBytes {
		return nil, metaTooLarge(len(raw))
	}
	if raw[0] != '{' {
		return nil, NewError(CodeInvalidParams, "params._meta must be an object")
	}
	m, e := decodeRequestMeta(raw)
	if e != nil {
		return nil, e
	}
	if e := checkProgressToken(m.ProgressToken); e != nil {
		return nil, e
	}
	return m, nil
}

// findMeta returns the value of params' _meta member, nil when it has none or params is not
// an object the method's own decoding would accept (which then reports what is wrong).
func findMeta(params json.RawMessage) json.RawMessage {
	if len(params) == 0 || !bytes.Contains(params, []byte(`"_meta"`)) {
		return nil
	}
	if raw, _, ok := scanMember(params, "_meta"); ok {
		return raw
	}
	// Shapes the scanner leaves to encoding/json (escaped keys, other cases).
	var p struct {
		Meta json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil {
		return nil
	}
	return p.Meta
}

// decodeRequestMeta decodes raw, a _meta object, into what RequestMeta.UnmarshalJSON makes,
// with views of the params for values where the scanner can read them.
func decodeRequestMeta(raw json.RawMessage) (*RequestMeta, *Error) {
	var m RequestMeta
	all, ok := rawMembers(raw)
	if !ok {
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, Errorf(CodeInvalidParams, "params._meta: %v", err)
		}
		return &m, nil
	}
	if t, ok := all["progressToken"]; ok {
		m.ProgressToken = t
		delete(all, "progressToken")
	}
	if len(all) > 0 {
		m.Other = all
	}
	return &m, nil
}

// checkProgressToken refuses a progressToken that is not a string or a number (the MCP
// schema's ProgressToken) or is over maxProgressToken bytes; an absent one is fine.
func checkProgressToken(t json.RawMessage) *Error {
	if len(t) == 0 {
		return nil
	}
	if len(t) > maxProgressToken {
		return Errorf(CodeInvalidParams, "params._meta.progressToken of %d bytes exceeds the limit of %d bytes", len(t), maxProgressToken)
	}
	if c := t[0]; c != '"' && !isJSONNumberStart(c) {
		return NewError(CodeInvalidParams, "params._meta.progressToken must be a string or a number")
	}
	return nil
}

// scanMember finds the value of a top-level member of a JSON object that decodeMessage has
// validated. ok is false for shapes it does not handle (escaped keys, a key that matches only
// without regard to case): the caller then asks encoding/json.
func scanMember(obj []byte, name string) (val []byte, found, ok bool) {
	ok = jsonscan.Members(obj, func(k, v []byte) bool {
		switch {
		case string(k) == name:
			val, found = v, true
		case equalFoldASCII(k, name):
			return false
		}
		return true
	})
	if !ok {
		return nil, false, false
	}
	return val, found, true
}

// requestCost is what a request in flight is charged: its params, method and id, held until
// its handler returns.
func requestCost(msg *wireMessage) int64 {
	return int64(len(msg.Params) + len(msg.Method) + len(msg.ID.raw))
}

// short returns the ID's JSON text cut to 64 bytes, for error messages and logs: an ID can be
// as long as the body allows, and only the response itself must echo it in full.
func (id ID) short() string { return truncate(id.raw, 64) }

// decodeInitialize decodes initialize's params, keeping only what the session needs:
// capabilities other than roots, sampling and elicitation (experimental ones, of any size)
// are skipped rather than decoded into maps kept for the session's life.
func (s *Server) decodeInitialize(params json.RawMessage) (*InitializeParams, *Error) {
	var p struct {
		ProtocolVersion string `json:"protocolVersion"`
		Capabilities    struct {
			Roots       *RootsCapability       `json:"roots,omitempty"`
			Sampling    *SamplingCapability    `json:"sampling,omitempty"`
			Elicitation *ElicitationCapability `json:"elicitation,omitempty"`
		} `json:"capabilities"`
		ClientInfo Implementation `json:"clientInfo"`
	}
	if err := unmarshalParams(params, &p); err != nil {
		return nil, err
	}
	if err := s.checkInitialize(&p.ClientInfo); err != nil {
		return nil, err
	}
	return &InitializeParams{
		ProtocolVersion: p.ProtocolVersion,
		Capabilities:    ClientCapabilities{Roots: p.Capabilities.Roots, Sampling: p.Capabilities.Sampling, Elicitation: p.Capabilities.Elicitation},
		ClientInfo:      p.ClientInfo,
	}, nil
}

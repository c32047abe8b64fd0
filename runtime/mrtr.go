package runtime

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Multi round-trip requests (spec 2026-07-28, Multi Round-Trip Requests) by replay.
//
// In the modern era a server cannot send the client a request: a handler that needs input
// (Caller.Elicit, CreateMessage, ListRoots) makes its request answer an InputRequiredResult
// instead, and the client retries the original request with inputResponses. The runtime
// bridges the two eras by replaying the handler: on every attempt the handler runs from the
// start, and its input calls are answered, in order, from the answers the client sent. The
// first call with no answer yet returns ErrInputRequired (the handler should return it, or an
// error wrapping it, as it would any error); the runtime then answers the request with an
// InputRequiredResult carrying that call's request (and any others made before the handler
// returned), keyed by the call's position and a digest of its params. The answers used so far
// travel in requestState, protected by an HMAC, so that the next attempt has them all: no
// state stays on the server between attempts.

// ErrInputRequired is what Caller.Elicit, CreateMessage and ListRoots return in the modern era
// when the client has not answered the request yet: the handler should return it (or an error
// wrapping it). Its request is then sent to the client in an InputRequiredResult, and the
// handler runs again, from the start, when the client retries with the answer. See the
// README's "Two protocol eras" for what that asks of a handler.
var ErrInputRequired = errors.New("mcp: the client's input is required: return this error; the handler runs again with the answer")

// requestStateTTL bounds how long an InputRequiredResult's requestState stays valid.
const requestStateTTL = 15 * time.Minute

// maxInputRequests bounds the input requests of one attempt, against a handler that asks in a
// loop without returning.
const maxInputRequests = 64

// inputRequest is one entry of an InputRequiredResult's inputRequests.
type inputRequest struct {
	Method string `json:"method"`
	Params any    `json:"params"`
}

// inputRequiredResult is the InputRequiredResult of spec 2026-07-28 (its resultType first, so
// that insertResultType leaves it be).
type inputRequiredResult struct {
	ResultType    string                  `json:"resultType"`
	InputRequests map[string]inputRequest `json:"inputRequests,omitempty"`
	RequestState  string                  `json:"requestState,omitempty"`
}

// mrtrState is the input of one attempt of a request that may ask for input: the answers the
// client sent (in inputResponses, and in the requestState of earlier attempts), and what the
// handler asked for in this attempt.
type mrtrState struct {
	s         *Server
	method    string
	name      string
	principal string

	mu      sync.Mutex
	answers map[string]json.RawMessage
	used    map[string]json.RawMessage
	pending map[string]inputRequest
	n       int
}

// requestStatePayload is what requestState protects: the answers so far, bound to the request
// they answer and to an expiry (spec 2026-07-28, Multi Round-Trip Requests, Server
// Requirements).
type requestStatePayload struct {
	Method    string                     `json:"m"`
	Name      string                     `json:"n"`
	Principal string                     `json:"p,omitempty"` // who the answers came from
	Expires   int64                      `json:"e"`
	Answers   map[string]json.RawMessage `json:"a"`
}

// principal names the authenticated caller of a request (issuer, subject and client of its
// access token), or "" without one: requestState is bound to it, so that one principal's
// answers are never replayed for another's request.
func principal(r *http.Request) string {
	id := TokenInfoFrom(r.Context()).identity()
	if !id.authenticated {
		return ""
	}
	b, _ := json.Marshal([]string{id.issuer, id.subject, id.clientID})
	return string(b)
}

// stateKey returns the key of requestState's HMAC: the one given to WithRequestStateKey, or
// one made at random for this Server (then only this process accepts its requestState).
func (s *Server) stateKey() []byte {
	if len(s.cfg.requestStateKey) > 0 {
		return s.cfg.requestStateKey
	}
	s.modern.keyOnce.Do(func() {
		s.modern.key = make([]byte, 32)
		if _, err := rand.Read(s.modern.key); err != nil {
			panic(fmt.Sprintf("mcp: crypto/rand failed: %v", err))
		}
	})
	return s.modern.key
}

// signState returns p as a requestState: its JSON and the JSON's HMAC under the server's key,
// both in unpadded base64url, joined by a dot.
func (s *Server) signState(p *requestStatePayload) string {
	b, _ := json.Marshal(p)
	mac := hmac.New(sha256.New, s.stateKey())
	mac.Write(b)
	return base64.RawURLEncoding.EncodeToString(b) + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// verifyState returns the answers a requestState carries, after deciding that this server
// signed it, for this request (method and name) of this principal (who), and that it has not
// expired (spec 2026-07-28, Multi Round-Trip Requests, Server Requirements).
func (s *Server) verifyState(state, method, name, who string) (map[string]json.RawMessage, error) {
	p, err := s.openState(state)
	if err != nil {
		return nil, err
	}
	if err := p.bindsTo(method, name, who); err != nil {
		return nil, err
	}
	return p.Answers, nil
}

// openState undoes signState: it decides whether state is well formed and its signature
// verifies under the server's key, and decodes its payload.
func (s *Server) openState(state string) (*requestStatePayload, error) {
	body, sig, ok := strings.Cut(state, ".")
	if !ok {
		return nil, errors.New("malformed")
	}
	b, err1 := base64.RawURLEncoding.DecodeString(body)
	got, err2 := base64.RawURLEncoding.DecodeString(sig)
	if err1 != nil || err2 != nil {
		return nil, errors.New("malformed")
	}
	mac := hmac.New(sha256.New, s.stateKey())
	mac.Write(b)
	if !hmac.Equal(got, mac.Sum(nil)) {
		return nil, errors.New("its signature does not verify (tampered with, or issued by a server with another key)")
	}
	var p requestStatePayload
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, errors.New("malformed")
	}
	return &p, nil
}

// bindsTo decides whether a verified payload may serve this request: issued for the same
// method and name, to the same principal (who), and not expired.
func (p *requestStatePayload) bindsTo(method, name, who string) error {
	if p.Method != method || p.Name != name {
		return fmt.Errorf("it was issued for %s %q, not this request", p.Method, p.Name)
	}
	if p.Principal != who {
		return errors.New("it was issued to another principal (access token)")
	}
	if time.Now().Unix() > p.Expires {
		return errors.New("it has expired; send the request again without it")
	}
	return nil
}

// newMRTR returns the input state of a modern request that may ask for input. A requestState
// that fails verification is refused: it is attacker-controlled input.
func (s *Server) newMRTR(msg *wireMessage, mr *modernRequest, name, who string) (*mrtrState, *modernError) {
	m := &mr.mrtr // in the request's allocation
	*m = mrtrState{s: s, method: msg.Method, name: name, principal: who}
	if mr.requestState != nil {
		answers, err := s.verifyState(*mr.requestState, msg.Method, name, who)
		if err != nil {
			return nil, &modernError{http.StatusBadRequest, Errorf(CodeInvalidParams, "invalid requestState: %v", err)}
		}
		m.answers = answers
	}
	if len(mr.inputResponses) > 0 {
		if m.answers == nil {
			m.answers = make(map[string]json.RawMessage, len(mr.inputResponses))
		}
		for k, v := range mr.inputResponses {
			m.answers[k] = v
		}
	}
	return m, nil
}

// ask answers an input call of the handler from the client's answers, or records it as
// pending and returns ErrInputRequired. key is the call's inputRequests key, or "" for one
// made from the call's position and params.
func (m *mrtrState) ask(key, method string, params any, result any) error {
	pb, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("mcp: encode %s params: %w", method, err)
	}
	m.mu.Lock()
	key = m.keyFor(key, method, pb)
	ans, answered := m.answers[key]
	if answered {
		m.use(key, ans)
	} else {
		m.addPending(key, method, pb)
	}
	m.mu.Unlock()
	if !answered {
		return ErrInputRequired
	}
	if err := json.Unmarshal(ans, result); err != nil {
		return Errorf(CodeInvalidParams, "inputResponses[%q] is not a valid %s result: %v", key, method, err)
	}
	return nil
}

// keyFor decides the inputRequests key of the attempt's next input call (its params pb): the
// handler's own key, or one made from the call's position, method and params. m.mu is held.
func (m *mrtrState) keyFor(key, method string, pb []byte) string {
	n := m.n
	m.n++
	if key != "" {
		return key
	}
	sum := sha256.Sum256(append([]byte(method+"\x00"), pb...))
	return inputKey(method) + "-" + strconv.Itoa(n) + "-" + hex.EncodeToString(sum[:6])
}

// use records that the client's answer ans to key was used, so that the next requestState
// carries it. m.mu is held.
func (m *mrtrState) use(key string, ans json.RawMessage) {
	if m.used == nil {
		m.used = make(map[string]json.RawMessage)
	}
	m.used[key] = ans
}

// addPending records an input call the client has not answered, unless the attempt already
// asks for maxInputRequests. m.mu is held.
func (m *mrtrState) addPending(key, method string, pb []byte) {
	if len(m.pending) >= maxInputRequests {
		return
	}
	if m.pending == nil {
		m.pending = make(map[string]inputRequest)
	}
	m.pending[key] = inputRequest{Method: method, Params: json.RawMessage(pb)}
}

// inputKeys are the words that start the keys the runtime makes for input calls, by method.
var inputKeys = map[string]string{methodElicit: "elicit", methodCreateMessage: "sample", methodListRoots: "roots"}

// inputKey is the word that starts the key the runtime makes for an input call of method.
func inputKey(method string) string {
	if k, ok := inputKeys[method]; ok {
		return k
	}
	return "input"
}

// inputRequired returns the InputRequiredResult of the attempt, or nil when the handler asked
// for nothing it has not got.
func (m *mrtrState) inputRequired() *inputRequiredResult {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.pending) == 0 {
		return nil
	}
	// requestState is sent from the first round on, even with no answers yet, so that the
	// client's echo of it binds every retry to this request and its expiry, and a tampered
	// one is refused (spec 2026-07-28, Multi Round-Trip Requests, Server Requirements).
	return &inputRequiredResult{
		ResultType:    resultTypeInputRequired,
		InputRequests: m.pending,
		RequestState: m.s.signState(&requestStatePayload{
			Method: m.method, Name: m.name, Principal: m.principal, Expires: time.Now().Add(requestStateTTL).Unix(), Answers: m.used,
		}),
	}
}

// missingCapability is the error of an input call that needs a capability the client did not
// declare: -32021 with data.requiredCapabilities in the modern era (spec 2026-07-28, schema,
// MissingRequiredClientCapabilityError), -32601 in the session era.
func (rs *requestState) missingCapability(capability string) error {
	if !rs.sess.stateless {
		return Errorf(CodeMethodNotFound, "the client did not declare the %s capability", capability)
	}
	data, _ := json.Marshal(map[string]any{"requiredCapabilities": map[string]any{capability: map[string]any{}}})
	return &Error{Code: CodeMissingClientCapability, Message: "this request needs the client's " + capability + " capability, which its clientCapabilities do not declare", Data: data}
}

// inputKeyCtx is the context key of WithInputKey.
type inputKeyCtx struct{}

// WithInputKey returns a copy of ctx under which an input call of a handler (Caller.Elicit,
// CreateMessage, ListRoots) is keyed key in the modern era's InputRequiredResult.inputRequests,
// and so in the client's inputResponses, instead of the key the runtime makes from the call's
// position and params. The keys of inputRequests are the server's to choose (spec 2026-07-28,
// Multi Round-Trip Requests): a handler names them when a client, or a test, expects given
// names. Keys must be unique within one request; the session era ignores them.
func WithInputKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, inputKeyCtx{}, key)
}

// callModern is requestState.call in the modern era: input calls go through MRTR.
func (rs *requestState) callModern(ctx context.Context, method string, params, result any) error {
	if rs.mrtr == nil {
		if method == methodPing {
			return NewError(CodeMethodNotFound, "there is no ping in MCP "+ProtocolVersion20260728)
		}
		return Errorf(CodeInvalidRequest, "%s cannot be asked while serving %s: in MCP %s only tools/call, resources/read and prompts/get may ask the client for input", method, rs.req.Method, ProtocolVersion20260728)
	}
	if params == nil {
		params = struct{}{}
	}
	key, _ := ctx.Value(inputKeyCtx{}).(string)
	return rs.mrtr.ask(key, method, params, result)
}

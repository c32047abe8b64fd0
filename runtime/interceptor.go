package runtime

import (
	"context"
	"encoding/json"
	"net/http"

	"google.golang.org/protobuf/proto"
)

// CallFunc serves one MCP request. On a Server it runs the method's handler; on a Client it
// sends the request and reads its answer. Interceptors wrap CallFuncs.
type CallFunc func(ctx context.Context, req *Request) (*Response, error)

// An Interceptor adds behaviour around every request a Server handles or a Client sends:
// authentication, tracing, metrics, logging, rate limits, retries. It is the one extension
// point of both sides, in the manner of connect's interceptors.
//
// On a Server, an interceptor sees each request after the transport has accepted it and the
// method's target has been resolved: for tools/call, Request.Name is the tool and
// Request.Message its decoded typed request. Returning without calling next refuses the
// request; replacing the Response changes the answer. On a Client, it sees each request before
// it is sent; it may add headers or _meta entries, call next more than once to retry, and
// inspect or replace the answer.
//
// Interceptors given to WithInterceptors run in order: the first is the outermost.
// Notifications (in either direction) do not pass through interceptors.
type Interceptor interface {
	WrapCall(next CallFunc) CallFunc
}

// InterceptorFunc is a function that is an Interceptor.
type InterceptorFunc func(next CallFunc) CallFunc

// WrapCall implements Interceptor.
func (f InterceptorFunc) WrapCall(next CallFunc) CallFunc { return f(next) }

// Request is one MCP request as interceptors see it.
type Request struct {
	// Method is the JSON-RPC method, e.g. "tools/call".
	Method string
	// ID is the JSON-RPC request ID. On a Client it is assigned when the request is sent, and
	// every attempt gets a new one: read it after next returns.
	ID ID
	// Params is the params object as JSON: on a Server as received (with its _meta); on a
	// Client as it will be sent, before Meta is added to it.
	Params json.RawMessage
	// Meta is the params' _meta. On a Client, entries added here (for example trace context)
	// are sent with the request.
	Meta *RequestMeta
	// Name is what the request targets: the tool for tools/call, the prompt for prompts/get,
	// the URI for resources/read and resources/(un)subscribe; "" for other methods.
	Name string
	// Message is the typed request: on a Server, a typed tool's decoded arguments (nil when
	// they could not be decoded, or for raw tools); on a Client, the request of a typed
	// CallTool. An interceptor may replace it with a message of the same type.
	Message proto.Message
	// SessionID is the MCP session's ID. On a Client it is set when the request is sent.
	SessionID string
	// ProtocolVersion is the session's negotiated protocol version. On a Client it is set
	// when the request is sent.
	ProtocolVersion string
	// Header holds HTTP headers. On a Server, the headers of the HTTP request that carried the
	// request (nil on other transports); treat them as read-only. On a Client, extra headers
	// to send with this request: nil unless an interceptor sets some.
	Header http.Header
	// IsClient reports whether this request is being sent by a Client (true) or handled by a
	// Server (false), for interceptors that serve both.
	IsClient bool

	// Server side: set by the method's route, read by the innermost CallFunc and by the
	// encoding of the answer.
	rs      *requestState
	serve   CallFunc
	handler methodHandler
	tool    *toolEntry
	args    json.RawMessage

	// Client side: decodes a typed call's result into Response.Message; the call's options.
	decode resultDecoder
	co     *callOptions
	// Client side, initialize only: the session it is sent on.
	initSession *clientSession
}

// Response is the answer to a Request as interceptors see it.
type Response struct {
	// Result is the method's result. On a Server: a *CallToolResult for tools/call (nil when
	// a typed tool answered with Message), the handler's value for other methods. On a Client:
	// the result as received, a json.RawMessage.
	Result any
	// Message is the typed response: on a Server, what a typed tool's handler returned; on a
	// Client, the decoded response of a typed CallTool. On a Server, a Result set by an
	// interceptor takes precedence over Message.
	Message proto.Message
}

// ToolResult returns the Result as a *CallToolResult, or nil when it is not one (a typed
// tool's answer before encoding is in Message).
func (r *Response) ToolResult() *CallToolResult {
	if r == nil {
		return nil
	}
	tr, _ := r.Result.(*CallToolResult)
	return tr
}

// chain wraps fn in the interceptors, the first outermost.
func chain(ics []Interceptor, fn CallFunc) CallFunc {
	for i := len(ics) - 1; i >= 0; i-- {
		if ics[i] != nil {
			fn = ics[i].WrapCall(fn)
		}
	}
	return fn
}

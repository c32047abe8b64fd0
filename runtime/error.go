package runtime

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Error is a JSON-RPC error: a protocol failure, as opposed to a tool execution error (which
// travels as a result with isError set). A handler that returns an *Error (or an error that
// wraps one) makes the server answer with that JSON-RPC error.
type Error struct {
	Code    Code            `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// NewError returns an *Error with the given code and message.
func NewError(code Code, message string) *Error { return &Error{Code: code, Message: message} }

// Errorf returns an *Error with the given code and a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// WithData returns a copy of e carrying data (encoded as JSON) in its data member.
func (e *Error) WithData(data any) *Error {
	c := *e
	b, err := json.Marshal(data)
	if err == nil {
		c.Data = b
	}
	return &c
}

// Error implements error.
func (e *Error) Error() string {
	return fmt.Sprintf("jsonrpc error %d: %s", e.Code, e.Message)
}

// Is reports whether target is an *Error with the same code, so errors.Is(err,
// runtime.NewError(runtime.CodeMethodNotFound, "")) matches on code alone.
func (e *Error) Is(target error) bool {
	var t *Error
	if errors.As(target, &t) {
		return t.Code == e.Code
	}
	return false
}

// Unimplemented returns the error that generated Unimplemented...Handler methods return: a
// JSON-RPC method-not-found error naming the tool.
func Unimplemented(tool string) error {
	return Errorf(CodeMethodNotFound, "tool %q is not implemented by this server", tool)
}

// ToolError is the error a typed client returns when a tool call succeeds at the protocol
// level but the tool reports failure (a CallToolResult with isError set). It carries the
// result's content so that callers can show it or hand it to a model.
type ToolError struct {
	// Tool is the tool's name.
	Tool string
	// Result is the whole result the server sent.
	Result *CallToolResult
}

// Error implements error, using the result's text content as the message.
func (e *ToolError) Error() string {
	msg := e.Result.Text()
	if msg == "" {
		msg = "tool reported an error"
	}
	return fmt.Sprintf("tool %s: %s", e.Tool, msg)
}

// HTTPError is returned by the client when the server answers with an unexpected HTTP status.
type HTTPError struct {
	// StatusCode is the HTTP status.
	StatusCode int
	// Status is the HTTP status line text.
	Status string
	// Body holds up to 4 KiB of the response body.
	Body string
	// RPC is the JSON-RPC error in the body, when there was one.
	RPC *Error
}

// Error implements error. A 404 without a JSON-RPC error in its body (what a wrong path
// gets) asks whether the URL is right.
func (e *HTTPError) Error() string {
	if e.RPC != nil {
		return fmt.Sprintf("http %s: %s", e.Status, e.RPC.Message)
	}
	msg := "http " + e.Status
	if e.Body != "" {
		msg += ": " + truncate(strings.TrimSpace(e.Body), 200)
	}
	if e.StatusCode == http.StatusNotFound {
		msg += " (no MCP endpoint answered at this URL: is the URL right?)"
	}
	return msg
}

// Unwrap returns the JSON-RPC error in the body, if any.
func (e *HTTPError) Unwrap() error {
	if e.RPC == nil {
		return nil
	}
	return e.RPC
}

// ErrSessionExpired is returned (wrapped) by client calls when the server no longer knows the
// session (HTTP 404) and the call could not be retried safely on a new session.
var ErrSessionExpired = errors.New("mcp: session expired")

// ErrClosed is returned by calls on a closed client or to a server that is shutting down.
var ErrClosed = errors.New("mcp: closed")

package runtime

import (
	"context"
	"errors"
	"strconv"
)

// Code is a JSON-RPC error code: the standard ones of JSON-RPC 2.0 and those MCP adds. Errors
// carry one (Error.Code); CodeOf reads it from any error.
type Code int

// JSON-RPC and MCP error codes.
const (
	// CodeParseError is for malformed JSON.
	CodeParseError Code = -32700
	// CodeInvalidRequest is for JSON that is not a valid JSON-RPC request, or a request the
	// session cannot take (not initialized, a duplicate id).
	CodeInvalidRequest Code = -32600
	// CodeMethodNotFound is for an unknown method, or a capability the peer did not declare.
	CodeMethodNotFound Code = -32601
	// CodeInvalidParams is for params of the wrong shape, an unknown tool, a bad cursor.
	CodeInvalidParams Code = -32602
	// CodeInternalError is for a failure inside the server.
	CodeInternalError Code = -32603
	// CodeResourceNotFound is MCP's code for resources/read of an unknown URI.
	CodeResourceNotFound Code = -32002
	// CodeURLElicitationRequired tells the client that URL-mode elicitation must happen first.
	CodeURLElicitationRequired Code = -32042
	// CodeRequestCancelled is returned to local callers whose request was cancelled. It is
	// never sent on the wire: a cancelled request gets no response.
	CodeRequestCancelled Code = -32800
	// CodeUserRejected is the sampling error code for a user who declined the request.
	CodeUserRejected Code = -1
)

var codeNames = map[Code]string{
	CodeParseError:             "parse_error",
	CodeInvalidRequest:         "invalid_request",
	CodeMethodNotFound:         "method_not_found",
	CodeInvalidParams:          "invalid_params",
	CodeInternalError:          "internal_error",
	CodeResourceNotFound:       "resource_not_found",
	CodeURLElicitationRequired: "url_elicitation_required",
	CodeRequestCancelled:       "request_cancelled",
	CodeUserRejected:           "user_rejected",
}

// String returns the code's name in snake case ("invalid_params"), or its number for a code
// this package does not name.
func (c Code) String() string {
	if n, ok := codeNames[c]; ok {
		return n
	}
	return strconv.Itoa(int(c))
}

// CodeOf returns the JSON-RPC code that err carries: the code of an *Error in its chain
// (including the one inside an *HTTPError), CodeRequestCancelled for a cancelled context,
// 0 for nil, and CodeInternalError for anything else.
func CodeOf(err error) Code {
	if err == nil {
		return 0
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	if errors.Is(err, context.Canceled) {
		return CodeRequestCancelled
	}
	return CodeInternalError
}

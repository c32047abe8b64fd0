package runtime

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"net/url"
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
	// CodeUserRejected is the sampling error code for a user who declined the request.
	CodeUserRejected Code = -1
)

// Local codes: CodeOf's answers for failures that happen on this side of the connection. They
// are never sent on the wire, and lie in -32899..-32800, outside JSON-RPC's reserved
// -32768..-32000 (spec 2025-11-25, Basic, Error codes, follows JSON-RPC 2.0) and unused by MCP.
// Their names follow connect's and gRPC's status codes.
const (
	// CodeRequestCancelled is for a call whose context was cancelled (connect's and gRPC's
	// Canceled; LSP's RequestCancelled has the same number). A cancelled request gets no
	// response (spec 2025-11-25, Utilities, Cancellation).
	CodeRequestCancelled Code = -32800
	// CodeDeadlineExceeded is for a call that ran out of time: its context's deadline or
	// WithTimeout passed before the answer came (connect's and gRPC's DeadlineExceeded).
	CodeDeadlineExceeded Code = -32810
	// CodeUnavailable is for a call that reached no MCP server: the connection was refused or
	// dropped, the host name did not resolve, the TLS handshake failed, the URL is malformed,
	// or the server answered with an HTTP status and no JSON-RPC error that says nobody serves
	// MCP there (404, 408, 429, 502, 503, 504) (connect's and gRPC's Unavailable).
	CodeUnavailable Code = -32811
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
	CodeDeadlineExceeded:       "deadline_exceeded",
	CodeUnavailable:            "unavailable",
	CodeUserRejected:           "user_rejected",
	CodeRateLimited:            "rate_limited",
}

// String returns the code's name in snake case ("invalid_params"), or its number for a code
// this package does not name.
func (c Code) String() string {
	if n, ok := codeNames[c]; ok {
		return n
	}
	return strconv.Itoa(int(c))
}

// CodeOf returns the code that err carries: the code of an *Error in its chain (including the
// one inside an *HTTPError), CodeDeadlineExceeded for a context past its deadline,
// CodeRequestCancelled for a cancelled context, CodeUnavailable for a failure to reach the
// server (see CodeUnavailable), 0 for nil, and CodeInternalError for anything else.
func CodeOf(err error) Code {
	if err == nil {
		return 0
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return CodeDeadlineExceeded
	case errors.Is(err, context.Canceled):
		return CodeRequestCancelled
	case unreachable(err):
		return CodeUnavailable
	}
	return CodeInternalError
}

// unreachable reports whether err says that the request reached no MCP server: a network,
// DNS, TLS or URL error, or an HTTP status without a JSON-RPC error that means nobody serves
// MCP at the URL (or not now).
func unreachable(err error) bool {
	var h *HTTPError
	if errors.As(err, &h) {
		return unreachableStatus[h.StatusCode]
	}
	for _, target := range transportErrors() {
		if errors.As(err, target) {
			return true
		}
	}
	return false
}

// unreachableStatus holds the HTTP statuses that, without a JSON-RPC error, mean nobody serves
// MCP at the URL, or not now.
var unreachableStatus = map[int]bool{
	http.StatusNotFound: true, http.StatusRequestTimeout: true, http.StatusTooManyRequests: true,
	http.StatusBadGateway: true, http.StatusServiceUnavailable: true, http.StatusGatewayTimeout: true,
}

// transportErrors returns errors.As targets for the error types of a request that reached no
// server: network, DNS, URL and TLS errors.
func transportErrors() []any {
	return []any{
		new(net.Error), new(*url.Error), new(*tls.CertificateVerificationError), new(tls.AlertError),
		new(tls.RecordHeaderError), new(x509.UnknownAuthorityError), new(x509.HostnameError),
		new(x509.CertificateInvalidError),
	}
}

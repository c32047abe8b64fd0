package runtime

import (
	"encoding/json"
	"mime"
	"net/http"
	"strings"
)

// This file holds small helpers for HTTP headers and the formatting of values in messages.

func isMediaType(header, want string) bool {
	if header == want {
		return true // the common case, without ParseMediaType's map
	}
	mt, _, err := mime.ParseMediaType(header)
	return err == nil && strings.EqualFold(mt, want)
}

// accepts reports whether the request's Accept header admits the media type.
func accepts(r *http.Request, want string) bool {
	major, _, _ := strings.Cut(want, "/")
	for _, v := range r.Header.Values("Accept") {
		for part := range strings.SplitSeq(v, ",") {
			mt, _, _ := strings.Cut(part, ";")
			mt = strings.ToLower(strings.TrimSpace(mt))
			if mt == want || mt == "*/*" || mt == major+"/*" {
				return true
			}
		}
	}
	return false
}

// acceptsJSONAndSSE reports whether r accepts both application/json and text/event-stream, as
// a POST must (spec: Streamable HTTP, Sending Messages to the Server).
func acceptsJSONAndSSE(r *http.Request) bool {
	if v := r.Header["Accept"]; len(v) == 1 && (v[0] == "application/json, text/event-stream" || v[0] == "text/event-stream, application/json") {
		return true // what clients send, read without parsing it
	}
	return accepts(r, "application/json") && accepts(r, "text/event-stream")
}

// headerValue is h.Get(key) for a key already in canonical form (every header name the
// runtime reads: a test holds them so), without canonicalizing it again on every request.
func headerValue(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

func quoteOrNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return `"` + truncate(s, 100) + `"`
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\n' || b[0] == '\r') {
		b = b[1:]
	}
	return b
}

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

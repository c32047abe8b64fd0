package otelmcp

import (
	"encoding/json"

	"go.opentelemetry.io/otel/propagation"
)

// metaCarrier is a propagation.TextMapCarrier over the entries of a request's params._meta:
// each value is a JSON string, as SEP-414 of MCP prescribes for traceparent, tracestate and
// baggage.
type metaCarrier map[string]json.RawMessage

var _ propagation.TextMapCarrier = metaCarrier(nil)

// Get returns the string value of key, or "" when it is absent or not a JSON string.
func (m metaCarrier) Get(key string) string {
	raw, ok := m[key]
	if !ok {
		return ""
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return ""
	}
	return s
}

// Set stores value under key as a JSON string.
func (m metaCarrier) Set(key, value string) {
	b, err := json.Marshal(value)
	if err != nil {
		return
	}
	m[key] = b
}

// Keys returns the keys of the entries.
func (m metaCarrier) Keys() []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

package runtime

import (
	"encoding/json"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// modernMeta.requestMeta, which reuses the members decode read, gives what requestMetaOf gives
// when it reads the _meta again, without the request metadata: the same RequestMeta or the
// same error.
func TestModernMetaRequestMetaMatchesRequestMetaOf(t *testing.T) {
	for _, raw := range []string{
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"}}`,
		`{"progressToken":7,"io.modelcontextprotocol/protocolVersion":"2026-07-28","trace":"abc"}`,
		`{"progressToken":"tok","progressToken":8}`,
		`{"progressToken":{"no":1}}`,
		`{"x":1,"x":2,"y":[1,2,{"z":null}]}`,
		`{"\u0070rogressToken":9}`,
		"{\"bad\xffkey\":1}",
		`{}`,
		`{"io.modelcontextprotocol/logLevel":"debug","io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"io.modelcontextprotocol/other":1}`,
		`{"progressToken":"p","io.modelcontextprotocol/protocolVersion":"2026-07-28"}`,
	} {
		t.Run(raw, func(t *testing.T) {
			var mm modernMeta
			require.True(t, mm.decode([]byte(raw)))
			want, wantErr := requestMetaOf(json.RawMessage(raw))
			want = withoutRequestMetadata(want)
			got, gotErr := mm.requestMeta(json.RawMessage(raw))
			assert.Equal(t, wantErr, gotErr)
			assert.Equal(t, want, got)
		})
	}
}

// The request metadata never reaches RequestMeta; what else _meta holds does.
func TestWithoutRequestMetadata(t *testing.T) {
	assert.Nil(t, withoutRequestMetadata(nil))
	assert.Nil(t, withoutRequestMetadata(&RequestMeta{Other: map[string]json.RawMessage{metaProtocolVersion: json.RawMessage(`"2026-07-28"`), metaLogLevel: json.RawMessage(`"info"`)}}),
		"_meta with only the request metadata is as no _meta")
	m := withoutRequestMetadata(&RequestMeta{ProgressToken: json.RawMessage(`1`), Other: map[string]json.RawMessage{metaClientInfo: json.RawMessage(`{}`)}})
	require.NotNil(t, m)
	assert.Equal(t, json.RawMessage(`1`), m.ProgressToken)
	assert.Nil(t, m.Other)
	m = withoutRequestMetadata(&RequestMeta{Other: map[string]json.RawMessage{metaClientCaps: json.RawMessage(`{}`), "trace": json.RawMessage(`"t"`)}})
	require.NotNil(t, m)
	assert.Equal(t, map[string]json.RawMessage{"trace": json.RawMessage(`"t"`)}, m.Other)
}

// A modern request's state is one allocation, within its size class: a field added to
// modernRequest, session, requestState or mrtrState that pushes it into the next class costs
// every 2026-07-28 request 128 more bytes, and should be a decision, not an accident.
func TestModernRequestSize(t *testing.T) {
	assert.LessOrEqual(t, unsafe.Sizeof(modernRequest{}), uintptr(maxModernRequestSize))
}

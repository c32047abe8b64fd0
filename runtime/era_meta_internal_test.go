package runtime

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// modernMeta.requestMeta, which reuses the members decode read, gives what requestMetaOf gives
// when it reads the _meta again: the same RequestMeta or the same error.
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
	} {
		t.Run(raw, func(t *testing.T) {
			var mm modernMeta
			require.True(t, mm.decode([]byte(raw)))
			want, wantErr := requestMetaOf(json.RawMessage(raw))
			got, gotErr := mm.requestMeta(json.RawMessage(raw))
			assert.Equal(t, wantErr, gotErr)
			assert.Equal(t, want, got)
		})
	}
}

package runtime

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// encodeRequestMeta writes the same bytes as splicing the _meta into the params and then
// encoding the request, for every shape of params a modern call sends.
func TestEncodeRequestMetaMatchesSplice(t *testing.T) {
	t.Parallel()
	mb := []byte(`{"protocolVersion":"2026-07-28","clientInfo":{"name":"c","version":"1"}}`)
	id := IntID(42)
	for _, params := range []string{"", "null", "{}", " { } ", `{"name":"echo","arguments":{"text":"hi"}}`, "\n{\"a\":1}\n"} {
		for _, idp := range []*ID{&id, nil} {
			spliced, err := spliceMeta(json.RawMessage(params), mb)
			require.NoError(t, err)
			want, err := encodeRequest(idp, methodToolsCall, spliced)
			require.NoError(t, err)
			p, err := metaCarrier(json.RawMessage(params))
			require.NoError(t, err)
			got := encodeRequestMeta(idp, methodToolsCall, p, mb)
			assert.Equal(t, string(want), string(got), "params %q", params)
			assert.True(t, json.Valid(got))
		}
	}
}

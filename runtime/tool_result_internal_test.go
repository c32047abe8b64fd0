package runtime

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// responseWith writes the 2026-07-28 era's response in front of a typed result, in its own
// buffer, byte for byte as modernBody makes it from a copy; when it cannot (an ID too long
// for the headroom, a result that has its resultType), it says so and modernBody does it.
func TestResponseWithMatchesModernBody(t *testing.T) {
	t.Parallel()
	idOf := func(id ID) *ID { return &id }
	ids := []*ID{idOf(IntID(7)), idOf(StringID("0f8fad5b-d9cb-469f-a165-70867728950e")), idOf(StringID(strings.Repeat("x", 90))), nil}
	results := []string{`{}`, `{"content":[{"type":"text","text":"hi"}]}`, `{"resultType":"input_required"}`}
	for _, id := range ids {
		for _, res := range results {
			for _, method := range []string{methodToolsCall, methodToolsList} {
				buf := make([]byte, resultHeadroom, resultHeadroom+len(res)+1)
				buf = append(buf, res...)
				wb := &wireBuf{b: buf}
				er := &encodedResult{buf: buf, off: resultHeadroom, pooled: wb}
				want := string(modernBody(method, encodeResponse(id, json.RawMessage(res), nil), id))
				body, pooled, ok := er.responseWith(id, modernMembers(method))
				idLen := 4 // null
				if id != nil {
					idLen = len(id.raw)
				}
				fits := len(`{"jsonrpc":"2.0","id":,"result":{`)+idLen+len(modernMembers(method))+1 <= resultHeadroom+1
				if method == methodToolsCall && idLen <= 38 {
					assert.True(t, fits, "a tools/call answer to a UUID's ID fits in the headroom")
				}
				if strings.HasPrefix(res, `{"resultType"`) || !fits {
					assert.Falsef(t, ok, "id %v, result %s: written in place", id, res)
					continue
				}
				require.Truef(t, ok, "id %v, result %s", id, res)
				assert.Equal(t, want, string(body))
				assert.Same(t, wb, pooled, "the response is in the result's pooled buffer")
				assert.True(t, json.Valid(body))
			}
		}
	}
}

package runtime

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
)

// headerValue looks a header up without canonicalizing its name: every name it is given must
// be canonical already, or it would miss what net/http stored.
func TestHeaderNamesAreCanonical(t *testing.T) {
	for _, k := range []string{headerSessionID, headerProtocolVersion, headerLastEventID, headerMethod, headerName, "Content-Type", "Origin", "Accept"} {
		assert.Equal(t, http.CanonicalHeaderKey(k), k)
	}
	h := http.Header{}
	h.Set("mcp-protocol-version", "2026-07-28")
	assert.Equal(t, "2026-07-28", headerValue(h, headerProtocolVersion))
	assert.Equal(t, "", headerValue(h, headerSessionID))
}

package runtime

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestHeadKind checks what the start of a message cut off at the client's size limit shows:
// a request by its method and id, a response by its result or error, and nothing when it is
// cut before its kind shows.
func TestHeadKind(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		head string
		id   string // "" for none
		kind msgKind
	}{
		{`{"jsonrpc":"2.0","id":3,"method":"elicitation/create","params":{"message":"xxx`, "3", headRequest},
		{`{"jsonrpc":"2.0","method":"sampling/createMessage","id":"a","params":{"x`, `"a"`, headRequest},
		{`{"jsonrpc":"2.0","id":3,"result":{"content":[{"text":"xx`, "3", headResponse},
		{`{"jsonrpc":"2.0","id":3,"error":{"code":-1,"message":"xx`, "3", headResponse},
		{`{"jsonrpc":"2.0","result":{"x":"y`, "", headResponse},
		{`{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"xx`, "", headUnknown},
		{`{"jsonrpc":"2.0","method":"notifications/message"}`, "", headNotification},
		{`{"jsonrpc":"2.0","id":3,"par`, "3", headUnknown},
		{`{"jsonrpc":"2.0","id":12`, "", headUnknown},
		{`not json`, "", headUnknown},
	} {
		id, kind := headKind([]byte(tc.head))
		assert.Equal(t, tc.kind, kind, tc.head)
		if tc.id == "" {
			assert.Nil(t, id, tc.head)
		} else if assert.NotNil(t, id, tc.head) {
			assert.Equal(t, tc.id, id.raw, tc.head)
		}
	}
}

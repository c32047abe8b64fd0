package runtime

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"

	mcpv1 "github.com/protomcp/protomcp/gen/mcp/v1"
)

// TestEncodeTaskMetadata checks what SetTaskMetadata stores for each kind of value: a proto
// message in the proto3 JSON mapping, an Any unpacked to the message it holds, any other value
// as encoding/json has it, nothing for nil, a typed nil or null, and an error for a value
// encoding/json refuses, an Any of a type nothing linked in, or one past MaxTaskMetadata.
func TestEncodeTaskMetadata(t *testing.T) {
	t.Parallel()
	packed, err := anypb.New(&mcpv1.TextContent{Text: "in an Any"})
	require.NoError(t, err)
	for _, c := range []struct {
		name string
		v    any
		want string // "" for no metadata
	}{
		{"proto", &mcpv1.TextContent{Text: "rows 3"}, `{"text":"rows 3"}`},
		{"well-known type", structpb.NewNumberValue(3), `3`},
		{"any", packed, `{"text":"in an Any"}`},
		{"map", map[string]int{"rows": 3}, `{"rows":3}`},
		{"raw JSON", json.RawMessage(` {"phase": "load"} `), `{"phase":"load"}`},
		{"nil", nil, ""},
		{"typed nil proto", (*mcpv1.TextContent)(nil), ""},
		{"nil Any", (*anypb.Any)(nil), ""},
		{"null", json.RawMessage(`null`), ""},
		{"exactly the bound", strings.Repeat("x", MaxTaskMetadata-2), `"` + strings.Repeat("x", MaxTaskMetadata-2) + `"`},
	} {
		got, err := encodeTaskMetadata(c.v)
		require.NoError(t, err, c.name)
		assert.Equal(t, c.want, string(got), c.name)
	}

	_, err = encodeTaskMetadata(strings.Repeat("x", MaxTaskMetadata-1))
	require.ErrorIs(t, err, ErrTaskMetadataTooLarge)
	assert.Contains(t, err.Error(), "65537 bytes")
	_, err = encodeTaskMetadata(json.RawMessage(`{not JSON`))
	assert.Error(t, err, "invalid JSON")
	_, err = encodeTaskMetadata(&anypb.Any{TypeUrl: "type.googleapis.com/no.such.Message"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no.such.Message")
	_, err = encodeTaskMetadata(make(chan int))
	assert.Error(t, err, "a value encoding/json refuses")
}

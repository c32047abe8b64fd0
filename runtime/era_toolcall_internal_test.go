package runtime

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// routeCallTool takes a 2026-07-28 tools/call's name and arguments from what checkModern
// scanned (modernRequest.toolCall) instead of reading the params again: for every shape of
// params, what it takes is what callToolParams reads, or checkModern leaves the call to
// callToolParams (toolCall false).
func TestModernToolCallMatchesCallToolParams(t *testing.T) {
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	s := NewServer(Implementation{Name: "t", Version: "0"})
	for _, tc := range []struct {
		params string
		left   bool // to callToolParams: a key escaped, or one that folds to a member, or inputResponses
	}{
		{`{"name":"echo","arguments":{"a":1},` + meta + `}`, false},
		{`{` + meta + `,"arguments":{"a":1},"name":"echo"}`, false},
		{`{"name":"echo",` + meta + `}`, false},
		{`{"name":"echo","arguments":null,` + meta + `}`, false},
		{`{"name":"echo","arguments": null ,` + meta + `}`, false},
		{`{ "name" : "echo" , "arguments" : { "a" : [ 1 , 2 ] } , ` + meta + ` }`, false},
		{`{"name":"ech\u006f","arguments":{"a":1},` + meta + `}`, false},
		{`{"name":"e\"cho","arguments":{},` + meta + `}`, false},
		{`{"name":"x","name":"echo","arguments":{"a":1},"arguments":{"b":2},` + meta + `}`, false},
		{`{"name":"echo","arguments":{"a":1},"arguments":null,` + meta + `}`, false},
		{`{"name":"echo","arguments":[1],` + meta + `}`, false},
		{`{"name":"echo","arguments":"text",` + meta + `}`, false},
		{`{"name":"echo","arguments":7,` + meta + `}`, false},
		{`{"n\u0061me":"echo","name":"echo","arguments":{},` + meta + `}`, true},
		{`{"name":"echo","Arguments":{"a":1},"arguments":{"b":2},` + meta + `}`, true},
		{`{"NAME":"echo","name":"echo",` + meta + `}`, true},
		{`{"name":"echo","requestState":null,"arguments":{},` + meta + `}`, false},
		{`{"name":"echo","uri":"file:///x","arguments":{},` + meta + `}`, false},
		{`{"name":"echo","other":{"name":"no","arguments":1},"arguments":{},` + meta + `}`, false},
		{`{"name":"echo","inputResponses":{},"arguments":{},` + meta + `}`, true},
		{`{"name":"\u00e9cho","arguments":{},` + meta + `}`, false},
	} {
		params := tc.params
		t.Run(params, func(t *testing.T) {
			msg, rpcErr := decodeMessage([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + params + `}`))
			require.Nil(t, rpcErr)
			want, err := callToolParams(msg.Params)
			require.NoError(t, err)
			r := &http.Request{Header: http.Header{}}
			r.Header.Set(headerProtocolVersion, ProtocolVersion20260728)
			r.Header.Set(headerMethod, methodToolsCall)
			r.Header.Set(headerName, encodeHeaderValue(want.Name))
			mr, me := s.checkModern(r, msg)
			require.Nil(t, me)
			require.Equal(t, !tc.left, mr.toolCall, "whether checkModern took the name and arguments")
			if !mr.toolCall {
				return // routeCallTool reads the params with callToolParams
			}
			assert.Equal(t, want.Name, mr.name())
			assert.Equal(t, string(want.Arguments), string(mr.args))
			assert.Equal(t, want.Arguments == nil, mr.args == nil)
		})
	}
}

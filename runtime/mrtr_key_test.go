package runtime_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/protomcp/protomcp/runtime"
)

// mrtrReply is what a modern tools/call answers: a result (complete or input required) or an
// error, with the HTTP status.
type mrtrReply struct {
	status int
	Result struct {
		ResultType    string                     `json:"resultType"`
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
		RequestState  string                     `json:"requestState"`
		Content       []runtime.Content          `json:"content"`
	} `json:"result"`
	Error *runtime.Error `json:"error"`
}

// postModernCall sends a modern tools/call of tool with extra members in params.
func postModernCall(t *testing.T, url, tool, extra string) mrtrReply {
	t.Helper()
	status, body := postModernParams(t, url, tool, `{"name":"`+tool+`","arguments":{}`+extra+
		`,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}`)
	var r mrtrReply
	require.NoError(t, json.Unmarshal(body, &r), "a JSON response")
	r.status = status
	return r
}

// TestModernEraNamedInputKeys: a handler names its input requests with WithInputKey; the
// first InputRequiredResult already carries a requestState, two rounds carry different ones,
// answers under the names complete the call, and a tampered requestState is refused (spec
// 2026-07-28, Multi Round-Trip Requests).
func TestModernEraNamedInputKeys(t *testing.T) {
	t.Parallel()
	srv := runtime.NewServer(runtime.Implementation{Name: "s", Version: "1"})
	srv.AddTool(runtime.ToolSpec{Name: "two_steps", InputSchema: `{"type":"object"}`}, func(ctx context.Context, _ *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		c := runtime.CallerFrom(ctx)
		first, err := c.Elicit(runtime.WithInputKey(ctx, "step1"), &runtime.ElicitParams{Message: "name?"})
		if err != nil {
			return nil, err
		}
		second, err := c.Elicit(runtime.WithInputKey(ctx, "step2"), &runtime.ElicitParams{Message: "colour?"})
		if err != nil {
			return nil, err
		}
		return &runtime.CallToolResult{Content: []runtime.Content{runtime.TextContent(first.Content["name"].(string) + " likes " + second.Content["color"].(string))}}, nil
	})
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)

	r1 := postModernCall(t, hs.URL, "two_steps", "")
	require.Nil(t, r1.Error, "round 1")
	assert.Equal(t, "input_required", r1.Result.ResultType, "round 1")
	assert.Contains(t, r1.Result.InputRequests, "step1", "round 1 keys")
	require.NotEmpty(t, r1.Result.RequestState, "round 1 requestState")

	r2 := postModernCall(t, hs.URL, "two_steps", `,"inputResponses":{"step1":{"action":"accept","content":{"name":"Ada"}}},"requestState":"`+r1.Result.RequestState+`"`)
	require.Nil(t, r2.Error, "round 2")
	assert.Equal(t, "input_required", r2.Result.ResultType, "round 2")
	assert.Contains(t, r2.Result.InputRequests, "step2", "round 2 keys")
	require.NotEmpty(t, r2.Result.RequestState, "round 2 requestState")
	assert.NotEqual(t, r1.Result.RequestState, r2.Result.RequestState, "round 2 carries the first answer")

	r3 := postModernCall(t, hs.URL, "two_steps", `,"inputResponses":{"step2":{"action":"accept","content":{"color":"blue"}}},"requestState":"`+r2.Result.RequestState+`"`)
	require.Nil(t, r3.Error, "round 3")
	assert.Equal(t, "complete", r3.Result.ResultType, "round 3")
	require.Len(t, r3.Result.Content, 1, "round 3")
	assert.Equal(t, "Ada likes blue", r3.Result.Content[0].Text, "round 3")

	bad := postModernCall(t, hs.URL, "two_steps", `,"inputResponses":{"step1":{"action":"accept","content":{"name":"Eve"}}},"requestState":"`+r1.Result.RequestState+`-TAMPERED"`)
	require.NotNil(t, bad.Error, "a tampered requestState")
	assert.Equal(t, http.StatusBadRequest, bad.status, "a tampered requestState")
	assert.Equal(t, runtime.CodeInvalidParams, bad.Error.Code, "a tampered requestState: %v", bad.Error)
}

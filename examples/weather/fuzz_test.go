package weather_test

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/stretchr/testify/require"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/protomcp/protomcp/bufvalidate"
	"github.com/protomcp/protomcp/examples/weather"
	weatherv1 "github.com/protomcp/protomcp/gen/weather/v1"
	"github.com/protomcp/protomcp/gen/weather/v1/weatherv1mcp"
	"github.com/protomcp/protomcp/runtime"
)

// FuzzToolArguments sends arbitrary arguments to each weather tool through the whole server
// path in process (JSON-RPC decode, tools/call, runtime.AddTypedTool's protojson decode into the
// generated request message, the handler, the result encoding). Whatever the arguments, the
// server answers 200 with a result or a tool error (never a panic, an internal error or
// a hang), and arguments that protojson accepts reach the handler (no isError naming an
// argument problem for them).
func FuzzToolArguments(f *testing.F) {
	for _, s := range []string{
		`{"city":"Paris, FR","days":5,"unit":"TEMPERATURE_UNIT_FAHRENHEIT"}`,
		`{"coordinates":{"latitude":"NaN","longitude":-180}}`,
		`{"city":"x","coordinates":{}}`,
		`{"regions":["FR","DE"],"minSeverity":"SEVERITY_SEVERE"}`,
		`{"regions":[]}`,
		`{"city":"Tokyo","days":14}`,
		`{"days":99999999999}`,
		`{"cty":"Paris"}`,
		`{"unit":3}`,
		`{"days":"7"}`,
		`{"city":"` + strings.Repeat("é", 100) + `"}`,
		`{"coordinates":{"latitude":1e400}}`,
		`null`, `[]`, `{}`, `"x"`,
	} {
		for tool := range byte(3) {
			f.Add(tool, s)
		}
	}
	srv := runtime.NewServer(runtime.Implementation{Name: "weather-fuzz", Version: "0"})
	weatherv1mcp.RegisterWeatherServiceHandler(srv, &weather.Service{Now: func() time.Time { return fixedNow }})
	f.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	post := func(sid, body string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader(body))
		r.Host = "127.0.0.1"
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			r.Header.Set("Mcp-Session-Id", sid)
			r.Header.Set("Mcp-Protocol-Version", runtime.LatestProtocolVersion)
		}
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, r)
		return w
	}
	w := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+runtime.LatestProtocolVersion+`","capabilities":{},"clientInfo":{"name":"fuzz","version":"0"}}}`)
	sid := w.Header().Get("Mcp-Session-Id")
	require.Falsef(f, w.Code != 200 || sid == "", "initialize: %d %s", w.Code, w.Body)
	tools := []string{weatherv1mcp.WeatherServiceGetForecastToolName, weatherv1mcp.WeatherServiceListAlertsToolName, weatherv1mcp.WeatherServiceRenderForecastChartToolName}

	f.Fuzz(func(t *testing.T, tool byte, args string) {
		name := tools[int(tool)%len(tools)]
		params, _ := json.Marshal(map[string]any{"name": name, "arguments": json.RawMessage(args)})
		if !json.Valid([]byte(args)) {
			// Not JSON: the message itself is malformed.
			params = []byte(`{"name":"` + name + `","arguments":` + args + `}`)
		}
		body := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":` + string(params) + `}`
		done := make(chan *httptest.ResponseRecorder, 1)
		go func() { done <- post(sid, body) }()
		var w *httptest.ResponseRecorder
		select {
		case w = <-done:
		case <-time.After(10 * time.Second):
			require.Fail(t, "tools/call hung")
		}
		if w.Code == http.StatusBadRequest {
			// Only for messages that are not valid JSON-RPC; the error says what is wrong.
			var m struct {
				Error *runtime.Error `json:"error"`
			}
			require.Falsef(t, json.Unmarshal(w.Body.Bytes(), &m) != nil || m.Error == nil || m.Error.Message == "", "400 without a JSON-RPC error: %s", w.Body)
			return
		}
		require.Falsef(t, w.Code != http.StatusOK, "HTTP %d: %s", w.Code, w.Body)
		var m struct {
			Error  *runtime.Error          `json:"error"`
			Result *runtime.CallToolResult `json:"result"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &m); err != nil {
			require.Fail(t, fmt.Sprintf("answer is not JSON: %v: %s", err, w.Body))
		}
		if m.Error != nil {
			require.Falsef(t, m.Error.Code == runtime.CodeInternalError, "internal error for arguments %q: %s", args, m.Error.Message)
			return
		}
		require.Falsef(t, m.Result == nil, "no result: %s", w.Body)
		// protojson also takes enum numbers and 32-bit integers as strings, which the input
		// schema does not allow: the runtime refuses them, saying so.
		strict := strings.Contains(m.Result.Text(), "is an enum number") || strings.Contains(m.Result.Text(), "a 32-bit integer must be a JSON number")
		if m.Result.IsError && strings.Contains(m.Result.Text(), "invalid arguments") && !strict && acceptedByProtojson(name, args) {
			require.Fail(t, fmt.Sprintf("arguments that protojson accepts were refused: %q: %s", args, m.Result.Text()))
		}
	})
}

// acceptedByProtojson reports whether the generated request message of tool decodes args,
// satisfies its buf.validate rules, and every required field is there (not null, not an empty list), i.e. whether the handler should see them.
func acceptedByProtojson(tool, args string) bool {
	var msg proto.Message
	required := ""
	switch tool {
	case weatherv1mcp.WeatherServiceGetForecastToolName:
		msg = &weatherv1.GetForecastRequest{}
	case weatherv1mcp.WeatherServiceListAlertsToolName:
		msg = &weatherv1.ListAlertsRequest{}
		required = "regions"
	default:
		msg = &weatherv1.RenderForecastChartRequest{}
		required = "city"
	}
	if protojson.Unmarshal([]byte(args), msg) != nil {
		return false
	}
	// The buf.validate rules (days 1 to 14, latitude and longitude ranges).
	if bufvalidate.Validate(msg) != nil {
		return false
	}
	if required != "" {
		var present map[string]json.RawMessage
		_ = json.Unmarshal([]byte(args), &present)
		if v, ok := present[required]; !ok || string(v) == "null" {
			return false
		}
		// A required list needs at least one item.
		var items []json.RawMessage
		if json.Unmarshal(present[required], &items) == nil && len(items) == 0 {
			return false
		}
	}
	return true
}

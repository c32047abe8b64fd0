package weather_test

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/protomcp/protomcp/examples/weather"
	weatherv1 "github.com/protomcp/protomcp/gen/weather/v1"
	"github.com/protomcp/protomcp/gen/weather/v1/weatherv1mcp"
	"github.com/protomcp/protomcp/runtime"
)

var fixedNow = time.Date(2025, 6, 1, 9, 30, 0, 0, time.UTC)

// start serves the weather tools on loopback and returns a generated client for them.
func start(t *testing.T) (weatherv1mcp.WeatherServiceClient, *runtime.Client) {
	t.Helper()
	srv := runtime.NewServer(runtime.Implementation{Name: "weather-test", Version: "0"})
	weatherv1mcp.RegisterWeatherServiceHandler(srv, &weather.Service{Now: func() time.Time { return fixedNow }})
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	c := runtime.NewClient(hs.URL)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		assert.NoError(t, c.Close(ctx), "close")
	})
	return weatherv1mcp.NewWeatherServiceClient(c), c
}

// testCtx returns a context that bounds one test.
func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// Each rpc, through the generated client and a real server, returns what the handler returns
// when called directly.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	client, _ := start(t)
	direct := &weather.Service{Now: func() time.Time { return fixedNow }}

	days := int32(5)
	fcReq := &weatherv1.GetForecastRequest{
		Location: &weatherv1.GetForecastRequest_City{City: "Paris, FR"},
		Days:     &days,
		Unit:     weatherv1.TemperatureUnit_TEMPERATURE_UNIT_FAHRENHEIT,
	}
	got, err := client.GetForecast(testCtx(t), fcReq)
	require.NoError(t, err, "GetForecast")
	want, _ := direct.GetForecast(context.Background(), fcReq)
	if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
		assert.Fail(t, fmt.Sprintf("GetForecast through the client (-direct +client):\n%s", diff))
	}
	assert.Len(t, got.GetDays(), 5, "GetForecast days")
	assert.Equal(t, fixedNow.Truncate(time.Hour), got.GetIssuedAt().AsTime(), "GetForecast issued at")

	coordReq := &weatherv1.GetForecastRequest{Location: &weatherv1.GetForecastRequest_Coordinates{
		Coordinates: &weatherv1.Coordinates{Latitude: -33.8688, Longitude: 151.2093},
	}}
	got, err = client.GetForecast(testCtx(t), coordReq)
	require.NoError(t, err, "GetForecast(coordinates)")
	want, _ = direct.GetForecast(context.Background(), coordReq)
	if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
		assert.Fail(t, fmt.Sprintf("GetForecast(coordinates) through the client (-direct +client):\n%s", diff))
	}

	alReq := &weatherv1.ListAlertsRequest{Regions: []string{"FR", "DE", "JP", "US"}}
	alerts, err := client.ListAlerts(testCtx(t), alReq)
	require.NoError(t, err, "ListAlerts")
	wantAlerts, _ := direct.ListAlerts(context.Background(), alReq)
	if diff := cmp.Diff(wantAlerts, alerts, protocmp.Transform()); diff != "" {
		assert.Fail(t, fmt.Sprintf("ListAlerts through the client (-direct +client):\n%s", diff))
	}
	assert.NotEmpty(t, alerts.GetAlerts(), "ListAlerts: at least the FR alert")
	// regions is REQUIRED (google.api.field_behavior): an empty list is "not set" (AIP-203),
	// and the server tells the model which field is missing instead of calling the handler.
	_, err = client.ListAlerts(testCtx(t), &weatherv1.ListAlertsRequest{Regions: []string{}})
	var toolErr *runtime.ToolError
	if assert.ErrorAs(t, err, &toolErr, "ListAlerts(no regions): want a tool error") {
		assert.ErrorContains(t, toolErr, `missing required field "regions"`, "ListAlerts(no regions)")
	}

	chart, err := client.RenderForecastChart(testCtx(t), &weatherv1.RenderForecastChartRequest{City: "Tokyo"})
	require.NoError(t, err, "RenderForecastChart")
	require.False(t, chart.GetIsError(), "RenderForecastChart: %v", chart)
	require.Len(t, chart.GetContent(), 2, "RenderForecastChart content")
	assert.Contains(t, chart.GetContent()[0].GetText().GetText(), "Tokyo", "chart text")
	img := chart.GetContent()[1].GetImage()
	assert.Equal(t, "image/png", img.GetMimeType(), "chart image type")
	_, err = png.Decode(bytes.NewReader(img.GetData()))
	assert.NoError(t, err, "chart image is not a PNG")
	wantChart, _ := direct.RenderForecastChart(context.Background(), &weatherv1.RenderForecastChartRequest{City: "Tokyo"})
	if diff := cmp.Diff(wantChart, chart, protocmp.Transform()); diff != "" {
		assert.Fail(t, fmt.Sprintf("RenderForecastChart through the client (-direct +client):\n%s", diff))
	}
}

// A broken buf.validate rule (checked by protovalidate before the handler runs) and a handler
// error reach the typed client as a *runtime.ToolError carrying the message.
func TestToolError(t *testing.T) {
	t.Parallel()
	client, _ := start(t)
	days := int32(40)
	_, err := client.GetForecast(testCtx(t), &weatherv1.GetForecastRequest{
		Location: &weatherv1.GetForecastRequest_Coordinates{Coordinates: &weatherv1.Coordinates{Latitude: 91, Longitude: -181}},
		Days:     &days,
	})
	var te *runtime.ToolError
	require.ErrorAs(t, err, &te, "GetForecast(days=40)")
	for _, want := range []string{
		"days: must be greater than or equal to 1 and less than or equal to 14",
		"coordinates.latitude: must be greater than or equal to -90 and less than or equal to 90",
		"coordinates.longitude: must be greater than or equal to -180 and less than or equal to 180",
	} {
		assert.ErrorContains(t, err, want, "GetForecast(days=40, 91, -181)")
	}
	_, err = client.GetForecast(testCtx(t), &weatherv1.GetForecastRequest{})
	assert.Error(t, err, "GetForecast without a location")
}

// tools/list advertises the generated names, schemas and annotations; the rich-result tool
// has no outputSchema.
func TestListTools(t *testing.T) {
	t.Parallel()
	_, c := start(t)
	res, err := c.ListTools(testCtx(t), "")
	require.NoError(t, err)
	byName := map[string]runtime.Tool{}
	for _, tool := range res.Tools {
		byName[tool.Name] = tool
	}
	for _, name := range []string{
		weatherv1mcp.WeatherServiceGetForecastToolName,
		weatherv1mcp.WeatherServiceListAlertsToolName,
		weatherv1mcp.WeatherServiceRenderForecastChartToolName,
	} {
		tool, ok := byName[name]
		if !assert.True(t, ok, "tool %s not listed; got %v", name, res.Tools) {
			continue
		}
		assert.Contains(t, string(tool.InputSchema), `"type"`, "%s: input schema", name)
		hasOutput := len(tool.OutputSchema) > 0 && string(tool.OutputSchema) != "null"
		assert.Equal(t, name != weatherv1mcp.WeatherServiceRenderForecastChartToolName, hasOutput, "%s: outputSchema present", name)
		if assert.NotNil(t, tool.Annotations, "%s: annotations", name) && assert.NotNil(t, tool.Annotations.ReadOnlyHint, "%s: readOnlyHint", name) {
			assert.True(t, *tool.Annotations.ReadOnlyHint, "%s: readOnlyHint", name)
		}
	}
}

// tools/list names each generated tool's rpc in its _meta, under runtime.RPCMetaKey (spec
// 2025-11-25, basic "_meta"), so a client finds the rpc without the proto options.
func TestListToolsMetaNamesRPC(t *testing.T) {
	t.Parallel()
	_, c := start(t)
	res, err := c.ListTools(testCtx(t), "")
	require.NoError(t, err)
	rpcs := map[string]any{}
	for _, tool := range res.Tools {
		rpcs[tool.Name] = tool.Meta[runtime.RPCMetaKey]
	}
	assert.Equal(t, "weather.v1.WeatherService/GetForecast", rpcs[weatherv1mcp.WeatherServiceGetForecastToolName])
	assert.Equal(t, "weather.v1.WeatherService/ListAlerts", rpcs[weatherv1mcp.WeatherServiceListAlertsToolName])
	assert.Equal(t, "weather.v1.WeatherService/RenderForecastChart", rpcs[weatherv1mcp.WeatherServiceRenderForecastChartToolName])
}

// prompts/list and resources/templates/list name the rpc behind a generated prompt and
// resource template in their _meta too.
func TestListSurfaceMetaNamesRPC(t *testing.T) {
	t.Parallel()
	_, c := start(t)
	prompts, err := c.ListPrompts(testCtx(t), "")
	require.NoError(t, err)
	rpcs := map[string]any{}
	for _, p := range prompts.Prompts {
		rpcs[p.Name] = p.Meta[runtime.RPCMetaKey]
	}
	assert.Equal(t, "weather.v1.WeatherService/PlanTrip", rpcs[weatherv1mcp.WeatherServicePlanTripPromptName])
	templates, err := c.ListResourceTemplates(testCtx(t), "")
	require.NoError(t, err)
	rpcs = map[string]any{}
	for _, rt := range templates.ResourceTemplates {
		rpcs[rt.URITemplate] = rt.Meta[runtime.RPCMetaKey]
	}
	assert.Equal(t, "weather.v1.WeatherService/GetStation", rpcs[weatherv1mcp.WeatherServiceGetStationURITemplate])
}

// GetForecast reports one progress step per day to a client that asks for progress.
func TestForecastProgress(t *testing.T) {
	t.Parallel()
	client, _ := start(t)
	days := int32(4)
	var got []float64
	_, err := client.GetForecast(testCtx(t), &weatherv1.GetForecastRequest{
		Location: &weatherv1.GetForecastRequest_City{City: "Berlin"},
		Days:     &days,
	}, runtime.WithProgress(func(p *runtime.ProgressParams) {
		assert.Falsef(t, p.Total == nil || *p.Total != float64(days), "progress %v: total %v, want %d", p.Progress, p.Total, days)
		got = append(got, p.Progress)
	}))
	require.NoError(t, err, "GetForecast")
	assert.Equal(t, []float64{1, 2, 3, 4}, got, "progress")
}

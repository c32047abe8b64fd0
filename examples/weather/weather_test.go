package weather_test

import (
	"bytes"
	"context"
	"errors"
	"image/png"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

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
		if err := c.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return weatherv1mcp.NewWeatherServiceClient(c), c
}

func ctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// Each rpc, through the generated client and a real server, returns what the handler returns
// when called directly.
func TestRoundTrip(t *testing.T) {
	client, _ := start(t)
	direct := &weather.Service{Now: func() time.Time { return fixedNow }}

	days := int32(5)
	fcReq := &weatherv1.GetForecastRequest{
		Location: &weatherv1.GetForecastRequest_City{City: "Paris, FR"},
		Days:     &days,
		Unit:     weatherv1.TemperatureUnit_TEMPERATURE_UNIT_FAHRENHEIT,
	}
	got, err := client.GetForecast(ctx(t), fcReq)
	if err != nil {
		t.Fatalf("GetForecast: %v", err)
	}
	want, _ := direct.GetForecast(context.Background(), fcReq)
	if !proto.Equal(got, want) {
		t.Errorf("GetForecast = %v, want %v", got, want)
	}
	if len(got.GetDays()) != 5 || got.GetIssuedAt().AsTime() != fixedNow.Truncate(time.Hour) {
		t.Errorf("GetForecast: %d days issued at %v", len(got.GetDays()), got.GetIssuedAt().AsTime())
	}

	coordReq := &weatherv1.GetForecastRequest{Location: &weatherv1.GetForecastRequest_Coordinates{
		Coordinates: &weatherv1.Coordinates{Latitude: -33.8688, Longitude: 151.2093},
	}}
	got, err = client.GetForecast(ctx(t), coordReq)
	if err != nil {
		t.Fatalf("GetForecast(coordinates): %v", err)
	}
	want, _ = direct.GetForecast(context.Background(), coordReq)
	if !proto.Equal(got, want) {
		t.Errorf("GetForecast(coordinates) = %v, want %v", got, want)
	}

	alReq := &weatherv1.ListAlertsRequest{Regions: []string{"FR", "DE", "JP", "US"}}
	alerts, err := client.ListAlerts(ctx(t), alReq)
	if err != nil {
		t.Fatalf("ListAlerts: %v", err)
	}
	wantAlerts, _ := direct.ListAlerts(context.Background(), alReq)
	if !proto.Equal(alerts, wantAlerts) || len(alerts.GetAlerts()) == 0 {
		t.Errorf("ListAlerts = %v, want %v (and at least the FR alert)", alerts, wantAlerts)
	}
	// regions is REQUIRED (google.api.field_behavior): an empty list is "not set" (AIP-203),
	// and the server tells the model which field is missing instead of calling the handler.
	empty, err := client.ListAlerts(ctx(t), &weatherv1.ListAlertsRequest{Regions: []string{}})
	var toolErr *runtime.ToolError
	if !errors.As(err, &toolErr) || !strings.Contains(toolErr.Error(), `missing required field "regions"`) {
		t.Errorf("ListAlerts(no regions) = %v, %v; want a tool error naming regions", empty, err)
	}

	chart, err := client.RenderForecastChart(ctx(t), &weatherv1.RenderForecastChartRequest{City: "Tokyo"})
	if err != nil {
		t.Fatalf("RenderForecastChart: %v", err)
	}
	if chart.GetIsError() || len(chart.GetContent()) != 2 {
		t.Fatalf("RenderForecastChart = %v", chart)
	}
	if text := chart.GetContent()[0].GetText().GetText(); !strings.Contains(text, "Tokyo") {
		t.Errorf("chart text = %q", text)
	}
	img := chart.GetContent()[1].GetImage()
	if img.GetMimeType() != "image/png" {
		t.Errorf("chart image type = %q", img.GetMimeType())
	}
	if _, err := png.Decode(bytes.NewReader(img.GetData())); err != nil {
		t.Errorf("chart image is not a PNG: %v", err)
	}
	wantChart, _ := direct.RenderForecastChart(context.Background(), &weatherv1.RenderForecastChartRequest{City: "Tokyo"})
	if !proto.Equal(chart, wantChart) {
		t.Errorf("RenderForecastChart differs from the handler's result")
	}
}

// A broken buf.validate rule (checked by protovalidate before the handler runs) and a handler
// error reach the typed client as a *runtime.ToolError carrying the message.
func TestToolError(t *testing.T) {
	client, _ := start(t)
	days := int32(40)
	_, err := client.GetForecast(ctx(t), &weatherv1.GetForecastRequest{
		Location: &weatherv1.GetForecastRequest_Coordinates{Coordinates: &weatherv1.Coordinates{Latitude: 91, Longitude: -181}},
		Days:     &days,
	})
	var te *runtime.ToolError
	if !errors.As(err, &te) {
		t.Fatalf("GetForecast(days=40) error = %v, want a ToolError", err)
	}
	for _, want := range []string{
		"days: must be greater than or equal to 1 and less than or equal to 14",
		"coordinates.latitude: must be greater than or equal to -90 and less than or equal to 90",
		"coordinates.longitude: must be greater than or equal to -180 and less than or equal to 180",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("GetForecast(days=40, 91, -181) error = %v, want it to contain %q", err, want)
		}
	}
	if _, err := client.GetForecast(ctx(t), &weatherv1.GetForecastRequest{}); err == nil {
		t.Error("GetForecast without a location: no error")
	}
}

// tools/list advertises the generated names, schemas and annotations; the rich-result tool
// has no outputSchema.
func TestListTools(t *testing.T) {
	_, c := start(t)
	res, err := c.ListTools(ctx(t), "")
	if err != nil {
		t.Fatal(err)
	}
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
		if !ok {
			t.Errorf("tool %s not listed; got %v", name, res.Tools)
			continue
		}
		if !strings.Contains(string(tool.InputSchema), `"type"`) {
			t.Errorf("%s: input schema %s", name, tool.InputSchema)
		}
		hasOutput := len(tool.OutputSchema) > 0 && string(tool.OutputSchema) != "null"
		if wantOutput := name != weatherv1mcp.WeatherServiceRenderForecastChartToolName; hasOutput != wantOutput {
			t.Errorf("%s: outputSchema present = %v, want %v", name, hasOutput, wantOutput)
		}
		if tool.Annotations == nil || tool.Annotations.ReadOnlyHint == nil || !*tool.Annotations.ReadOnlyHint {
			t.Errorf("%s: annotations %+v, want readOnlyHint", name, tool.Annotations)
		}
	}
}

// GetForecast reports one progress step per day to a client that asks for progress.
func TestForecastProgress(t *testing.T) {
	client, _ := start(t)
	days := int32(4)
	var got []float64
	_, err := client.GetForecast(ctx(t), &weatherv1.GetForecastRequest{
		Location: &weatherv1.GetForecastRequest_City{City: "Berlin"},
		Days:     &days,
	}, runtime.WithProgress(func(p *runtime.ProgressParams) {
		if p.Total == nil || *p.Total != float64(days) {
			t.Errorf("progress %v: total %v, want %d", p.Progress, p.Total, days)
		}
		got = append(got, p.Progress)
	}))
	if err != nil {
		t.Fatalf("GetForecast: %v", err)
	}
	if want := []float64{1, 2, 3, 4}; !slices.Equal(got, want) {
		t.Errorf("progress = %v, want %v", got, want)
	}
}

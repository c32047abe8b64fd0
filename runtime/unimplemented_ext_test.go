package runtime_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	weatherv1 "github.com/protomcp/protomcp/gen/weather/v1"
	"github.com/protomcp/protomcp/gen/weather/v1/weatherv1mcp"
	"github.com/protomcp/protomcp/runtime"
)

// partialWeather implements two rpcs of the weather service, one with a value receiver and
// one with a pointer receiver, and leaves the rest to the generated Unimplemented handler.
type partialWeather struct {
	weatherv1mcp.UnimplementedWeatherServiceHandler
}

func (partialWeather) GetForecast(context.Context, *weatherv1.GetForecastRequest) (*weatherv1.GetForecastResponse, error) {
	return &weatherv1.GetForecastResponse{}, nil
}

func (*partialWeather) ListAlerts(context.Context, *weatherv1.ListAlertsRequest) (*weatherv1.ListAlertsResponse, error) {
	return &weatherv1.ListAlertsResponse{}, nil
}

// A handler that embeds the generated Unimplemented handler and overrides some rpcs: only the
// others are unimplemented.
func TestUnimplementedMethodsOfAGeneratedHandler(t *testing.T) {
	rpcs := []string{"GetForecast", "ListAlerts", "RenderForecastChart", "ExportForecast", "PlanTrip", "GetStation"}
	got := runtime.UnimplementedMethods(&partialWeather{}, weatherv1mcp.UnimplementedWeatherServiceHandler{}, rpcs...)
	assert.Equal(t, map[string]bool{"RenderForecastChart": true, "ExportForecast": true, "PlanTrip": true, "GetStation": true}, got)
	got = runtime.UnimplementedMethods(weatherv1mcp.UnimplementedWeatherServiceHandler{}, weatherv1mcp.UnimplementedWeatherServiceHandler{}, rpcs...)
	assert.Len(t, got, len(rpcs), "the Unimplemented handler itself")
}

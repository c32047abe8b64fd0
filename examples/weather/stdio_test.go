package weather_test

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	weatherv1 "github.com/protomcp/protomcp/gen/weather/v1"
	"github.com/protomcp/protomcp/gen/weather/v1/weatherv1mcp"
	"github.com/protomcp/protomcp/runtime"
)

// The example server built as a binary and launched with -stdio serves the generated client
// unchanged: every tool answers, and Close ends the process cleanly (it exits on stdin's end,
// before any signal).
func TestStdioServerBinary(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "weather-server")
	if out, err := exec.Command("go", "build", "-o", bin, "./server").CombinedOutput(); err != nil {
		require.Fail(t, fmt.Sprintf("go build ./server: %v\n%s", err, out))
	}
	cmd := exec.Command(bin, "-stdio")
	c, err := runtime.NewCommandClient(cmd, runtime.WithStdioShutdown(10*time.Second, time.Second))
	require.NoError(t, err)
	weather := weatherv1mcp.NewWeatherServiceClient(c)
	ctx := testCtx(t)
	days := int32(2)
	fc, err := weather.GetForecast(ctx, &weatherv1.GetForecastRequest{Location: &weatherv1.GetForecastRequest_City{City: "Lima, PE"}, Days: &days})
	require.NoError(t, err, "get_forecast")
	require.Len(t, fc.GetDays(), 2, "get_forecast days")
	_, err = weather.ListAlerts(ctx, &weatherv1.ListAlertsRequest{Regions: []string{"FR"}})
	require.NoError(t, err, "list_alerts")
	chart, err := weather.RenderForecastChart(ctx, &weatherv1.RenderForecastChartRequest{City: "Oslo, NO"})
	require.NoError(t, err, "forecast_chart")
	require.NotEmpty(t, chart.GetContent(), "forecast_chart content")
	closeCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	require.NoError(t, c.Close(closeCtx), "Close")
	if assert.NotNil(t, cmd.ProcessState, "the server process was not waited for") {
		assert.True(t, cmd.ProcessState.Success(), "the server did not exit cleanly: %v", cmd.ProcessState)
	}
}

package weather_test

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	weatherv1 "github.com/protomcp/protomcp/gen/weather/v1"
	"github.com/protomcp/protomcp/gen/weather/v1/weatherv1mcp"
	"github.com/protomcp/protomcp/runtime"
)

// The server binary with -rate-limit 3/m allows each caller three tool calls a minute, all
// tools together, and answers the fourth at once with a tool error that says when to retry;
// a caller in another session has its own quota. A bad rate is refused at start.
func TestServerRateLimitFlag(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "weather-server")
	if out, err := exec.Command("go", "build", "-o", bin, "./server").CombinedOutput(); err != nil {
		require.Fail(t, fmt.Sprintf("go build ./server: %v\n%s", err, out))
	}
	out, err := exec.CommandContext(ctx, bin, "-rate-limit", "3/fortnight").CombinedOutput()
	require.Error(t, err, "a bad -rate-limit")
	assert.Contains(t, string(out), "-rate-limit", "the error names the flag")

	srv := exec.CommandContext(ctx, bin, "-addr", "127.0.0.1:0", "-rate-limit", "3/m")
	stderr, err := srv.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, srv.Start())
	defer func() {
		_ = srv.Process.Kill()
		_ = srv.Wait()
	}()
	url := watchLines(stderr).wait(ctx, t, "serving MCP log line", func(l string) string {
		if _, u, ok := strings.Cut(l, "url="); ok && strings.Contains(l, "serving MCP") {
			return strings.TrimSpace(u)
		}
		return ""
	})

	calls := func(c *runtime.Client) (allowed int, refusal error) {
		weather := weatherv1mcp.NewWeatherServiceClient(c)
		for range 2 {
			_, err := weather.GetForecast(ctx, &weatherv1.GetForecastRequest{Location: &weatherv1.GetForecastRequest_City{City: "Lima, PE"}})
			if err != nil {
				refusal = err
				continue
			}
			allowed++
			_, err = weather.ListAlerts(ctx, &weatherv1.ListAlertsRequest{Regions: []string{"FR"}})
			if err != nil {
				refusal = err
				continue
			}
			allowed++
		}
		return allowed, refusal
	}
	for _, who := range []string{"first session", "second session"} {
		c := runtime.NewClient(url, runtime.WithEra(runtime.EraLegacy))
		allowed, refusal := calls(c)
		assert.Equal(t, 3, allowed, "%s: calls allowed", who)
		var te *runtime.ToolError
		if assert.ErrorAs(t, refusal, &te, "%s: the fourth call", who) {
			assert.Contains(t, te.Error(), "rate limit exceeded", who)
			wait, ok := runtime.RetryAfter(nil, refusal)
			assert.True(t, ok, "%s: retry hint", who)
			assert.InDelta(t, 20*time.Second, wait, float64(time.Second), "%s: the next of 3 a minute is 20s away", who)
		}
		require.NoError(t, c.Close(ctx))
	}
}

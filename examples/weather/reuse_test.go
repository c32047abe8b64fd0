package weather_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/protomcp/protomcp/examples/weather"
	weatherv1 "github.com/protomcp/protomcp/gen/weather/v1"
	"github.com/protomcp/protomcp/gen/weather/v1/weatherv1mcp"
	"github.com/protomcp/protomcp/runtime"
)

// countingClient returns an *http.Client whose transport counts the TCP connections it dials.
// Its idle connections are closed when the test ends.
func countingClient(t *testing.T) (*http.Client, *atomic.Int64) {
	t.Helper()
	var dials atomic.Int64
	tr := runtime.DefaultTransport()
	d := &net.Dialer{Timeout: 5 * time.Second}
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return d.DialContext(ctx, network, addr)
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}, &dials
}

// reuseCalls is how many sequential calls TestConnectionReuse* make: the 10,000 of issue 4,
// or 1,000 under the race detector, where 10,000 take about 45 s on two cores. `make test`
// runs both: the race-enabled suite, then these tests again without -race.
func reuseCalls() int {
	if raceEnabled {
		return 1000
	}
	return 10000
}

// testConnectionReuse makes n sequential GetForecast calls through the generated client
// against runtime.NewServer on loopback and checks that they all travel on one TCP
// connection: the client's lazy initialize, notifications/initialized and the first
// tools/call dial exactly one, and none of the other calls, nor Close's DELETE, dials another.
// That holds only if the client reads every answer (JSON, or SSE when the server is given
// runtime.WithSSEResponses) to its end, so that the connection is back in the pool before
// the next call asks for one.
func testConnectionReuse(t *testing.T, n int, opts ...runtime.ServerOption) {
	srv := runtime.NewServer(runtime.Implementation{Name: "weather-reuse", Version: "0"}, opts...)
	weatherv1mcp.RegisterWeatherServiceHandler(srv, &weather.Service{Now: func() time.Time { return fixedNow }})
	hs := httptest.NewServer(srv)
	defer hs.Close()
	hc, dials := countingClient(t)
	c := runtime.NewClient(hs.URL, runtime.WithHTTPClient(hc))
	client := weatherv1mcp.NewWeatherServiceClient(c)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	days := int32(3)
	req := &weatherv1.GetForecastRequest{Location: &weatherv1.GetForecastRequest_City{City: "Paris"}, Days: &days}
	start := time.Now()
	for i := range n {
		res, err := client.GetForecast(ctx, req)
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if len(res.GetDays()) != 3 {
			t.Fatalf("call %d: %d days", i, len(res.GetDays()))
		}
		if i == 0 && dials.Load() != 1 {
			t.Errorf("after the first call (initialize, notifications/initialized, tools/call): %d dials, want 1", dials.Load())
		}
	}
	t.Logf("%d calls in %v; %d dials", n, time.Since(start), dials.Load())
	if got := dials.Load(); got != 1 {
		t.Errorf("%d sequential calls dialed %d TCP connections, want 1", n, got)
	}
	if err := c.Close(ctx); err != nil {
		t.Errorf("close: %v", err)
	}
	if got := dials.Load(); got != 1 {
		t.Errorf("after Close (DELETE): %d dials, want 1", got)
	}
	srv.Shutdown(ctx)
}

func TestConnectionReuseJSON(t *testing.T) { testConnectionReuse(t, reuseCalls()) }

func TestConnectionReuseSSE(t *testing.T) {
	testConnectionReuse(t, reuseCalls(), runtime.WithSSEResponses())
}

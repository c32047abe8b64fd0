package weather_test

import (
	"context"
	"fmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/protomcp/protomcp/examples/weather"
	weatherv1 "github.com/protomcp/protomcp/gen/weather/v1"
	"github.com/protomcp/protomcp/gen/weather/v1/weatherv1mcp"
	"github.com/protomcp/protomcp/internal/conntest"
	"github.com/protomcp/protomcp/runtime"
)

// reuseCalls is how many sequential calls TestConnectionReuse* make: 10,000, or 1,000 under
// the race detector, where 10,000 take about 45 s on two cores. `make test` runs both: the
// race-enabled suite, then these tests again without -race.
func reuseCalls() int {
	if raceEnabled {
		return 1000
	}
	return 10000
}

// testConnectionReuse makes n sequential GetForecast calls through the generated client
// against runtime.NewServer on loopback and checks that they all travel on one TCP
// connection. That holds only if the client reads every answer (JSON, or SSE when the server
// is given runtime.WithSSEResponses) to its end, so that the connection is back in the pool
// before the next call asks for one.
//
// What is asserted:
//   - the client's lazy initialize, notifications/initialized and the first tools/call dial
//     exactly one connection;
//   - the client abandoned no response body: every one was read to its end;
//   - the transport closed no connection, and dialed no other one, during the n calls and
//     Close's DELETE: exactly one dial in all.
//
// The transport may retire a connection on its own, which no client can prevent: net/http
// does not reuse a connection whose writer goroutine has not reported the request written
// within 50 ms of the response's end (Transport's maxWriteWaitBeforeConnReuse), which
// happens on a starved CPU (seen about once in ten runs of 10,000 calls with a load of 9 on
// two cores). Such a retirement shows as a closed connection with no abandoned body, and only
// then is one more dial accepted per retired connection (at most: the last one retired needs
// no successor); the test logs it.
//
// The client speaks the era it is given: EraAuto finds 2026-07-28 with server/discover (one
// request, on the same connection), EraLegacy initializes a session.
func testConnectionReuse(t *testing.T, n int, era runtime.Era, opts ...runtime.ServerOption) {
	srv := runtime.NewServer(runtime.Implementation{Name: "weather-reuse", Version: "0"}, opts...)
	weatherv1mcp.RegisterWeatherServiceHandler(srv, &weather.Service{Now: func() time.Time { return fixedNow }})
	hs := httptest.NewServer(srv)
	defer hs.Close()
	cc := conntest.New(t)
	c := runtime.NewClient(hs.URL, runtime.WithHTTPClient(cc.Client), runtime.WithEra(era))
	client := weatherv1mcp.NewWeatherServiceClient(c)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	days := int32(3)
	req := &weatherv1.GetForecastRequest{Location: &weatherv1.GetForecastRequest_City{City: "Paris"}, Days: &days}
	start := time.Now()
	for i := range n {
		res, err := client.GetForecast(ctx, req)
		require.NoErrorf(t, err, "call %d", i)
		require.Falsef(t, len(res.GetDays()) != 3, "call %d: %d days", i, len(res.GetDays()))
		assert.Falsef(t, i == 0 && cc.Dials.Load() != 1, "after the first call (server/discover or initialize, notifications/initialized, tools/call): %d dials, want 1", cc.Dials.Load())
		if i == 0 {
			want := runtime.ProtocolVersion20260728
			if era == runtime.EraLegacy {
				want = runtime.LatestProtocolVersion
			}
			if v := c.ProtocolVersion(); v != want {
				require.Fail(t, fmt.Sprintf("negotiated protocol version %q, want %q", v, want))
			}
		}
	}
	elapsed := time.Since(start)
	assert.NoError(t, c.Close(ctx), "close")
	_ = srv.Shutdown(ctx)
	dials, retired, abandoned := cc.Dials.Load(), cc.Closes.Load(), cc.Abandoned.Load()
	t.Logf("%d calls in %v: %d dials, %d connections retired by the transport, %d bodies abandoned", n, elapsed, dials, retired, abandoned)
	assert.Falsef(t, abandoned != 0, "the client closed %d response bodies before their end, which closes their connections", abandoned)
	if retired > 0 {
		t.Logf("the transport retired %d connections on its own (see the test's comment)", retired)
	}
	assert.Falsef(t, dials > 1+retired, "%d sequential calls dialed %d TCP connections, want 1 (plus %d the transport retired on its own)", n, dials, retired)
}

func TestConnectionReuseJSON(t *testing.T) { testConnectionReuse(t, reuseCalls(), runtime.EraLegacy) }

func TestConnectionReuseSSE(t *testing.T) {
	testConnectionReuse(t, reuseCalls(), runtime.EraLegacy, runtime.WithSSEResponses())
}

// The modern era (2026-07-28): no session, every request its own POST with its metadata.
func TestConnectionReuseModernJSON(t *testing.T) {
	testConnectionReuse(t, reuseCalls(), runtime.EraAuto)
}

func TestConnectionReuseModernSSE(t *testing.T) {
	testConnectionReuse(t, reuseCalls(), runtime.EraAuto, runtime.WithSSEResponses())
}

// A server that speaks only the modern era keeps no session table at all.
func TestConnectionReuseModernOnlyServer(t *testing.T) {
	testConnectionReuse(t, reuseCalls(), runtime.EraModern, runtime.WithEra(runtime.EraModern))
}

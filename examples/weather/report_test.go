package weather_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"sync"
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

// startReports serves the weather tools with a climate report that takes step per year.
func startReports(t *testing.T, step time.Duration) weatherv1mcp.WeatherServiceClient {
	t.Helper()
	srv := runtime.NewServer(runtime.Implementation{Name: "weather-test", Version: "0"})
	weatherv1mcp.RegisterWeatherServiceHandler(srv, &weather.Service{Now: func() time.Time { return fixedNow }, ReportStep: step})
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	c := runtime.NewClient(hs.URL)
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return weatherv1mcp.NewWeatherServiceClient(c)
}

// The climate report, through the generated client: a progress notification per year, in
// order, then the report the handler returns when called directly. StartGetClimateReport
// returns a handle whose Wait gives the same report; a server that runs the tool without a
// task answers at once, and the handle says so with an empty ID.
func TestClimateReport(t *testing.T) {
	t.Parallel()
	client := startReports(t, time.Millisecond)
	direct := &weather.Service{Now: func() time.Time { return fixedNow }, ReportStep: time.Millisecond}
	years := int32(4)
	req := &weatherv1.GetClimateReportRequest{City: "Tokyo", Years: &years}
	want, err := direct.GetClimateReport(context.Background(), req)
	require.NoError(t, err)
	require.Len(t, want.GetYears(), 4)
	assert.Equal(t, int32(2024), want.GetYears()[0].GetYear(), "the most recent year first")
	assert.Contains(t, want.GetSummary(), "Tokyo, JP over 4 years")

	var (
		mu       sync.Mutex
		messages []string
	)
	got, err := client.GetClimateReport(testCtx(t), req, runtime.WithProgress(func(p *runtime.ProgressParams) {
		mu.Lock()
		messages = append(messages, fmt.Sprintf("%v/%v %s", p.Progress, *p.Total, p.Message))
		mu.Unlock()
	}))
	require.NoError(t, err)
	if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
		assert.Fail(t, fmt.Sprintf("GetClimateReport through the client (-direct +client):\n%s", diff))
	}
	mu.Lock()
	assert.Equal(t, []string{"1/4 analysed 2024", "2/4 analysed 2023", "3/4 analysed 2022", "4/4 analysed 2021"}, messages)
	mu.Unlock()

	h, err := client.StartGetClimateReport(testCtx(t), req)
	require.NoError(t, err)
	got, err = h.Wait(testCtx(t))
	require.NoError(t, err)
	if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
		assert.Fail(t, fmt.Sprintf("StartGetClimateReport's Wait (-direct +client):\n%s", diff))
	}
	if h.ID() == "" {
		info, err := h.Status(testCtx(t))
		require.NoError(t, err)
		assert.Equal(t, runtime.TaskCompleted, info.Status)
	}

	_, err = client.GetClimateReport(testCtx(t), &weatherv1.GetClimateReportRequest{City: "Tokyo", Years: new(int32(11))})
	var te *runtime.ToolError
	require.ErrorAs(t, err, &te, "11 years")
	assert.ErrorContains(t, err, "years: must be greater than or equal to 1 and less than or equal to 10")
}

// The report's handler stops between two years when its context ends, as a cancelled task's
// does.
func TestClimateReportCancelled(t *testing.T) {
	t.Parallel()
	s := &weather.Service{Now: func() time.Time { return fixedNow }, ReportStep: time.Hour}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.GetClimateReport(ctx, &weatherv1.GetClimateReportRequest{City: "Paris"})
	assert.True(t, errors.Is(err, context.Canceled), "%v", err)
}
